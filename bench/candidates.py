"""The server with the proposed performance changes applied as patches, to measure them
before anyone edits the server:

    CODY_BENCH_SERVER="python bench/candidates.py" python bench/concurrency.py
    CODY_CANDIDATES=model CODY_BENCH_SERVER="python bench/candidates.py" python bench/run_all.py --only ...

CODY_CANDIDATES picks the changes (comma-separated; default all):

model  `model.stream_step` posts the request body as plain JSON (skipping the openai
       SDK's per-request `async_maybe_transform`, which walks every message: ~1 s for a
       5k-message history) and reads the stream as dicts (`AsyncStream[dict]`, skipping
       the pydantic model built for every chunk). Same StepResult, same errors
       (openai still raises them; `classify` is unchanged).
stdin  the stdio reader is an asyncio StreamReader on stdin (`loop.connect_read_pipe`)
       instead of pygls' StdinAsyncReader, which does one thread-pool round trip per
       header line and per body: a request waits behind every message before it.
pidfd  `asyncio.PidfdChildWatcher` (Python 3.11; the default from 3.12): no thread
       started per `run_command` subprocess while the event loop waits.
init   (not in the default set) answer `initialize` before importing pygls: read the
       first message with the standard library, write the initialize result, then
       import and start the server and replay the message to it (its own answer to
       that id is dropped), then the rest of stdin. The answer comes ~30 ms after
       spawn instead of ~450 ms (lsprotocol.types alone takes ~290 ms to import);
       requests sent meanwhile wait in the pipe and are answered in order.

It also imports cody_lsp.diagnostics (the event-loop lag report), like
common.MONITORED_SERVER. `python bench/candidates.py` takes the server's own
arguments (`--tcp HOST:PORT`; "init" applies to stdio only).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

# Nothing heavier than os and sys before `initialize` is answered (candidate "init"):
# asyncio alone takes ~45 ms to import here.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


async def stream_step(config: Any, limits: Any, model: str, messages: list[dict[str, Any]],
                      tools: list[dict[str, Any]], on_text: Callable[[str], None],
                      on_thinking: Callable[[str], None]) -> Any:
    """cody_lsp.model.stream_step without the SDK's request transform and chunk models."""
    from openai import AsyncStream
    from openai._base_client import make_request_options

    from cody_lsp import model as m
    from cody_lsp.wire import Usage

    client = m.get_client(config, limits)
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, Any] = {}
    finish_reason: str | None = None
    usage = Usage()
    stream = None
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = tools
    try:
        stream = await client.post("/chat/completions", body=body,
                                   options=make_request_options(security={"bearer_auth": True}),
                                   cast_to=object, stream=True, stream_cls=AsyncStream[dict])
        async for chunk in stream:
            u = chunk.get("usage")
            if u:
                usage = Usage(u.get("prompt_tokens") or 0, u.get("completion_tokens") or 0, u.get("total_tokens") or 0)
            choices = chunk.get("choices")
            if not choices:
                continue
            choice = choices[0]
            delta = choice.get("delta")
            if delta:
                content = delta.get("content")
                if content:
                    text.append(content)
                    on_text(content)
                thought = delta.get("reasoning_content")
                if thought:
                    reasoning.append(thought)
                    on_thinking(thought)
                for tc in delta.get("tool_calls") or ():
                    call = calls.get(tc.get("index", 0))
                    if call is None:
                        call = calls[tc.get("index", 0)] = m.AssembledCall()
                    if tc.get("id"):
                        call.id = tc["id"]
                    fn = tc.get("function")
                    if fn:
                        if fn.get("name") and not call.name:
                            call.name = fn["name"]
                        if fn.get("arguments"):
                            call.fragments.append(fn["arguments"])
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    except Exception as exc:  # noqa: BLE001 - every failure is classified, as in model.py
        raise m.classify(exc, config, limits) from exc
    finally:
        if stream is not None:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001
                pass
    if finish_reason is None:
        raise m.ModelError("cut_off", "the model stream ended before the response was complete", retryable=True)
    return m.StepResult("".join(text), "".join(reasoning), [calls[i] for i in sorted(calls)], finish_reason, usage)


class AsyncStdin:
    """Drop-in for pygls.io_.StdinAsyncReader reading stdin with asyncio, no threads."""

    def __init__(self, stdin: Any, executor: Any = None):
        self.stdin = stdin
        self._reader: Any = None

    async def _stream(self) -> Any:
        import asyncio

        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=2 ** 24)
            prefix = getattr(self.stdin, "prefix", b"")  # PrefixedStdin (candidate "init")
            if prefix:
                reader.feed_data(prefix)
            pipe = os.fdopen(self.stdin.fileno(), "rb", buffering=0, closefd=False) if prefix else self.stdin
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
            self._reader = reader
        return self._reader

    async def readline(self) -> bytes:
        return await (await self._stream()).readline()

    async def readexactly(self, n: int) -> bytes:
        import asyncio

        try:
            return await (await self._stream()).readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


INITIALIZE_RESULT = {
    # What the server answers today (pygls' capabilities for its features + cody's).
    "capabilities": {
        "positionEncoding": "utf-16",
        "textDocumentSync": {"openClose": True, "change": 2, "save": False},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
        "experimental": {"cody": {"protocolVersion": 1}},
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


class PrefixedStdin:
    """stdin for pygls' reader: `prefix` first, then the real stdin."""

    def __init__(self, prefix: bytes, inner: Any):
        import io

        self.prefix = prefix
        self._head = io.BytesIO(prefix)
        self._inner = inner

    def readline(self) -> bytes:
        line = self._head.readline()
        if line.endswith(b"\n"):
            return line
        return line + self._inner.readline()

    def read(self, n: int) -> bytes:
        data = self._head.read(n)
        if len(data) < n:
            data += self._inner.read(n - len(data))
        return data

    def fileno(self) -> int:
        return self._inner.fileno()


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


def serve_with_early_initialize(chosen: set[str]) -> int:
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
    import cody_lsp.diagnostics  # noqa: F401  (CODY_LOOP_LAG_REPORT)

    apply(chosen)
    from cody_lsp import cli
    from cody_lsp.server import create_server

    cli._setup_logging()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    server = create_server()
    server.start_io(stdin=PrefixedStdin(raw + extra, sys.stdin.buffer), stdout=DroppingStdout(out, drop_id))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(server.exit_code)


def apply(names: set[str]) -> None:
    if "model" in names:
        from cody_lsp import agent, model

        agent.stream_step = stream_step  # agent imported the name at import time
        model.stream_step = stream_step
    if "stdin" in names:
        import pygls.io_

        pygls.io_.StdinAsyncReader = AsyncStdin  # server.py imports it when serving starts
    if "pidfd" in names and sys.version_info < (3, 12) and hasattr(os, "pidfd_open"):
        import asyncio

        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


def main() -> int:
    chosen = {name.strip() for name in os.environ.get("CODY_CANDIDATES", "model,stdin,pidfd").split(",")}
    if "init" in chosen and not sys.argv[1:]:
        return serve_with_early_initialize(chosen)
    import cody_lsp.diagnostics  # noqa: F401  (CODY_LOOP_LAG_REPORT)

    apply(chosen)
    from cody_lsp.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
