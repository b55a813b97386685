"""One JSON-RPC 2.0 endpoint for every connection cody-lsp speaks: both faces and the Python client.

The layer below the LSP face (server/lsp/), the ACP face (server/acp/) and the client
(client/); it imports nothing of them, nothing of pygls or lsprotocol — the standard library
and protocol/errors.py only — so a process that only reads a message (the early starts, the
client) pays no more than `json` and `asyncio` for it.

- `codec.py`: the bytes of one message — strict JSON both ways, the size limits
  (`WireLimits`), what a valid id is, the id of a message that could not be parsed, and
  what HTTP looks like;
- `framing.py`: a framing per transport — `CONTENT_LENGTH` (the LSP base protocol's header
  blocks: the LSP face on stdio and on its sockets, the client) and `LINES` (one message a
  line: ACP's stdio transport) — each a reader that splits bytes into message bodies,
  bounded, resynchronizing after junk, refusing HTTP, and a writer of one body;
- `endpoint.py`: the JSON-RPC state machine over a framing — requests both ways (ids,
  answers, errors), cancel (`$/cancelRequest` or ACP's `$/cancel_request`), the envelope
  checks, the errors with incident numbers, and the hardening: a client's bad input is
  answered, never fatal.

A face is then its route table (a `Handler`: `request(method, params)`,
`notification(method, params)`) and its translation of the core's values; what differs
between LSP and ACP on the wire (the cancel method, the text of a cancelled request) is a
`Dialect`. The early starts (server/lsp/early_initialize.py, server/acp/initialize.py) read
their first message with `codec` and `framing` too, so a message is read one way everywhere.

Nothing is imported here: `from cody_lsp.jsonrpc.codec import decode` loads the codec alone.
"""
