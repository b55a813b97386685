"""cody-lsp: the editor backend of a coding agent (a pygls JSON-RPC server)."""

__version__ = "0.1.0"
