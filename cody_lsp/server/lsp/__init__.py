"""The LSP face: the cody/* protocol over the LSP base protocol, with pygls (server.py).

`transport.py`/`framing.py` read and write the bytes (bounded, strict JSON);
`early_initialize.py` answers `initialize` before pygls is imported; `client_port.py` is the
run core's view of the client (events → `cody/chunk`, permission requests, settings);
`notifications.py` makes the wire dicts; the editor's live state — open documents, workspace
edits, progress, configuration, workspace folders — is `editor_state.py` and its parts.
"""
