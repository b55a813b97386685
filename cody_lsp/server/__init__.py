"""The server half: transport (`lsp`), runs, the agent loop, the model stream, tools and the store.

Data flows one way: lsp → runs → agent → model / tools → store. Nothing here imports
the client half.
"""
