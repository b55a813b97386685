"""Language servers the backend starts itself, for the code_nav tool (tools/code_nav.py).

For clients that cannot answer code navigation themselves (the terminal chat, ACP editors, an editor
that does not declare `languageFeatures`): a definition (definitions.py: the user's configuration
file, or a workspace's `.cody/config.toml` once approved) names a program that speaks LSP over stdio;
connection.py speaks it, manager.py starts, asks, restarts and stops them. The core (core/code_nav.py)
decides which to ask and who approves a workspace's. No pygls, no lsprotocol: plain JSON.
"""
