"""The server half. Its folders are its layers, read bottom up as the data path:

- `tools/`   the built-in tools, each confined to the session's folder;
- `agent/`   one turn: the loop (`turn.py`), the model stream (`model.py`, `assembly.py`), the
             context budget and compaction, the history entries a turn leaves;
- `store/`   the session database (aiosqlite, WAL);
- `checkpoints/` the folder's state before each run, in a shadow git store of its own: snapshots,
             diffs, restores through the tools' confinement, housekeeping;
- `core/`    the run core: sessions, queues, cancel, approvals (`runs.py`, `queue.py`,
             `permissions.py`), a run's typed event stream (`events.py`), what it needs from a
             client (`port.py`), requests taken in order (`order.py`);
- `app.py`   the application: store, run manager and lifecycle, for every face;
- `lsp/`     the LSP face (pygls): `cody/*` routes, transport, the editor's live state;
- `acp/`     the Agent Client Protocol face.

Nothing lower imports something higher, only the faces speak a wire format, and only the LSP
face imports pygls (tests/unit/test_layers.py). Nothing here imports the client half.
"""
