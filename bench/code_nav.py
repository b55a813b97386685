"""code_nav through the editor: `tool_call` → `tool_result` of `code_nav references`, less the editor's own answer time (goal ≤ 30 ms p50).

One server and a client that acts as the editor: it declares `languageFeatures` and answers
`cody/languageFeature` with 30 locations in 3 files of the folder (after holding each request for
a given time, as a language server takes its time). Each trial is a run whose model step calls
`code_nav` (`references`, a place given by `line` and `query`) and then answers; timed on the
client's clock from the `tool_call` chunk's arrival to the `tool_result` chunk's, less the time the
editor's handler held the request (from the request's arrival to its answer). What is left is the
server's part: reading the file, converting the place, the request and its answer over the wire,
reading the 3 files for the locations' lines, the result. Trials with the editor answering at once
and after 20 ms alternate; medians (p50) and p90 of each.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProviderProcess, Row, arg_parser, client_class, ms, percentile, report, server_command, server_env

GOAL = 0.030
CALL = {
    "tool_calls": [
        {"name": "code_nav", "arguments": {"operation": "references", "path": "app.py", "line": 40, "query": "greet"}}
    ]
}
ANSWER = {"text": "ok"}
FILES = ("app.py", "lib.py", "util.py")


def write_folder(folder: Path) -> list[dict[str, Any]]:
    """Three files of 400 lines (non-ASCII text before the name on each line), and 30 locations in them."""
    locations = []
    for name in FILES:
        lines = [f'x{i} = "é😀"; greet(x{i})  # line {i + 1}\n' for i in range(400)]
        (folder / name).write_text("".join(lines))
        uri = (folder / name).as_uri()
        for i in range(0, 400, 40):
            start = {"line": i, "character": 12 + len(str(i))}
            locations.append(
                {"uri": uri, "range": {"start": start, "end": {"line": i, "character": start["character"] + 5}}}
            )
    return locations


def editor_client(answer: list[dict[str, Any]], held: list[float], delay: list[float]) -> Any:
    """A CodyClient that answers cody/languageFeature, recording how long each answer took it."""
    base = client_class()

    class Editor(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)

            @self._transport.feature("cody/languageFeature")
            async def on_language_feature(params: Any) -> Any:
                started = time.perf_counter()
                if delay[0]:
                    await asyncio.sleep(delay[0])
                held.append(time.perf_counter() - started)
                return answer

        def _declared(self) -> dict[str, bool]:
            return {**super()._declared(), "languageFeatures": True}

    return Editor


async def one_trial(client: Any, provider: ProviderProcess, session_id: str, held: list[float]) -> float:
    await provider.queue(CALL, ANSWER)
    seen: dict[str, float] = {}

    def on_chunk(chunk: dict[str, Any]) -> None:
        if chunk["type"] in ("tool_call", "tool_result"):
            seen.setdefault(chunk["type"], time.perf_counter())
            if chunk["type"] == "tool_result" and not chunk.get("ok"):
                seen["failed"] = 0.0
                print(f"code_nav failed: {chunk.get('content')}", file=sys.stderr)

    before = len(held)
    client.on_chunk.append(on_chunk)
    try:
        result = await asyncio.wait_for(client.stream("who calls greet?", session_id=session_id).result(), 60)
    finally:
        client.on_chunk.remove(on_chunk)
    if result.status != "done" or "failed" in seen or len(held) != before + 1:
        raise SystemExit(f"the trial did not ask the editor once: {result}")
    return seen["tool_result"] - seen["tool_call"] - held[-1]


async def main_async(args: Any) -> None:
    trials = 3 if args.smoke else 40
    figures: dict[str, list[float]] = {"at once": [], "after 20 ms": []}
    delays = {"at once": 0.0, "after 20 ms": 0.020}
    held: list[float] = []
    delay = [0.0]
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        locations = write_folder(folder)
        async with ProviderProcess() as provider:
            env = server_env(provider.base_url, Path(tmp) / "state" / "sessions.db")
            client = await editor_client(locations, held, delay).spawn(
                env=env, workspace_folders=[folder], server_command=server_command()
            )
            try:
                session_id = (await client.create_session(title="code_nav", workspace_folder=folder)).id
                for _ in range(3):  # warm-up
                    await one_trial(client, provider, session_id, held)
                for _ in range(trials):
                    for name, values in figures.items():
                        delay[0] = delays[name]
                        values.append(await one_trial(client, provider, session_id, held))
            finally:
                await client.close()

    def spread(values: list[float]) -> str:
        return f"{ms(statistics.median(values))} (p90 {ms(percentile(values, 90))}, min {ms(min(values))})"

    rows = []
    for name, values in figures.items():
        p50 = statistics.median(values)
        rows.append(
            Row(
                f"`code_nav references` (30 locations in 3 files) through the editor, answering {name}: "
                f"`tool_call` → `tool_result` less the editor's own time, median of {trials}",
                spread(values),
                f"≤ {GOAL * 1000:.0f} ms",
                p50 <= GOAL,
            )
        )
    report("code_nav", "code_nav through the editor", rows, args, extra=figures)


def main() -> None:
    asyncio.run(main_async(arg_parser(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    main()
