"""The server half. Its folders are its layers, read bottom up as the data path:

- `tools/`   the built-in tools, each confined to the session's folder;
- `agent/`   one turn: the loop (`turn.py`), the model stream (`model.py`, `assembly.py`), the
             context budget and compaction, the history entries a turn leaves;
- `store/`   the session database (aiosqlite, WAL): a repository per concern, records of its own;
- `checkpoints/` the folder's state before each run, in a shadow git store of its own: snapshots,
             diffs, restores through the tools' confinement, housekeeping;
- `core/`    the run core: the run manager (`runs.py`, a facade over its parts: sessions,
             scheduling, turn building, commit, compaction, administration; the faces import
             `api.py` only), `queue.py`, `permissions.py`, a run's typed event stream
             (`events.py`), what it needs from a client (`port.py`), requests taken in order
             (`order.py`);
- `app.py`   the application: store, run manager and lifecycle, for every face;
- `lsp/`     the LSP face: `cody/*` routes, LSP's lifecycle (lsprotocol's types), the editor's live state;
- `acp/`     the Agent Client Protocol face.

Both faces speak JSON-RPC through the one endpoint below them, `cody_lsp/jsonrpc/` (the client too);
`streams.py` is their stdin and stdout.

Nothing lower imports something higher, only the faces speak a wire format, and only the LSP
face imports pygls or lsprotocol (tests/unit/test_layers.py). Nothing here imports the client half.
"""
