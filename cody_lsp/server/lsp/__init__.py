"""The LSP face: the cody/* protocol over the LSP base protocol (server.py).

The bytes and JSON-RPC are the shared endpoint's (cody_lsp/jsonrpc/), with the LSP framing
(`transport.py`, which also reads the LSP methods as lsprotocol's types); `language_server.py`
is LSP's lifecycle (initialize, shutdown, exit, workspace folders) over it — what pygls'
`LanguageServer` did, without pygls' own JSON-RPC protocol. `early_initialize.py` answers
`initialize` before the server is imported (`early_compare.py` compares the server's own answers
with the early ones); `client_port.py` is the run core's view of the client (events →
`cody/chunk`, permission requests, settings); `notifications.py` makes the wire dicts; the
editor's live state — open documents, workspace edits, progress, configuration, workspace
folders — is `editor_state.py` and its parts.
"""
