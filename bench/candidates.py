"""The server with a proposed (not adopted) performance change applied as a patch, to
measure it:

    CODY_BENCH_SERVER="python bench/candidates.py" python bench/run_all.py

init   answer `initialize` before importing pygls: read the first message with the
       standard library, write the initialize result, then import and start the
       server and replay the message to it (its own answer to that id is dropped),
       then the rest of stdin. The answer comes ~30 ms after spawn instead of
       ~450 ms (lsprotocol.types alone takes ~290 ms to import); requests sent
       meanwhile wait in the pipe and are answered in order. Not adopted: the
       canned capabilities would have to be kept equal to pygls' own answer.

The other candidates measured here (plain-dict model streaming, the asyncio stdin
reader, the pidfd child watcher, an 18 ms text window) are now in the server.
`python bench/candidates.py` takes the server's own arguments (`--tcp HOST:PORT`
serves as usual, without the patch).
"""

from __future__ import annotations

import os
import sys
from typing import Any

# Nothing heavier than os and sys before `initialize` is answered (candidate "init"):
# asyncio alone takes ~45 ms to import here.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


INITIALIZE_RESULT = {
    # What the server answers today (pygls' capabilities for its features + cody's).
    "capabilities": {
        "positionEncoding": "utf-16",
        "textDocumentSync": {"openClose": True, "change": 2, "save": False},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
        "experimental": {"cody": {"protocolVersion": 1, "steering": True, "permissionRules": True}},
    },
    "serverInfo": {"name": "cody-lsp", "version": "0.1.0"},
}


def _read_first_message(fd: int) -> tuple[bytes, bytes, dict | None]:
    """(the first message's bytes as read, bytes read past it, its JSON) — unbuffered."""
    import json

    data = bytearray()
    while b"\r\n\r\n" not in data:
        chunk = os.read(fd, 65536)
        if not chunk:
            return bytes(data), b"", None
        data += chunk
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    rest = bytearray(rest)
    while len(rest) < length:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        rest += chunk
    body, extra = bytes(rest[:length]), bytes(rest[length:])
    try:
        message = json.loads(body)
    except ValueError:
        message = None
    return head + b"\r\n\r\n" + body, extra, message if isinstance(message, dict) else None


class DroppingStdout:
    """stdout for pygls' writer that drops its answer to one request id (already answered)."""

    def __init__(self, inner: Any, drop_id: Any):
        self._inner = inner
        self._drop_id = drop_id

    def write(self, data: bytes) -> int:
        if self._drop_id is not None:
            import json

            body = data.partition(b"\r\n\r\n")[2]
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == self._drop_id and "method" not in message:
                self._drop_id = None
                return len(data)
        return self._inner.write(data)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()


def feed_prefix(prefix: bytes) -> None:
    """Make the server's stdin reader return `prefix` before what the pipe brings."""
    import asyncio

    from cody_lsp.server import lsp as server

    async def open_stdin(stdin: Any) -> Any:
        reader = asyncio.StreamReader(limit=1 << 20)
        reader.feed_data(prefix)
        pipe = os.fdopen(stdin.fileno(), "rb", buffering=0, closefd=False)
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        return reader

    server.open_stdin = open_stdin  # type: ignore[assignment]


def serve_with_early_initialize() -> int:
    """cli.serve for stdio, answering `initialize` before the heavy imports."""
    import json

    raw, extra, message = _read_first_message(0)
    out = sys.stdout.buffer
    drop_id = None
    if message is not None and message.get("method") == "initialize" and "id" in message:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE_RESULT}).encode()
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()
        drop_id = message["id"]
    import cody_lsp.server.diagnostics  # noqa: F401  (CODY_LOOP_LAG_REPORT)
    from cody_lsp import cli
    from cody_lsp.server.lsp import create_server

    cli._setup_logging()
    cli._use_pidfd_child_watcher()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    feed_prefix(raw + extra)
    server = create_server()
    server.start_io(stdin=sys.stdin.buffer, stdout=DroppingStdout(out, drop_id))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(server.exit_code)


def main() -> int:
    if not sys.argv[1:]:
        return serve_with_early_initialize()
    from cody_lsp.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
