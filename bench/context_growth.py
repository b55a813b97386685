"""Context growth: the cost of a turn stays flat as a session grows (issue 14).

One session of TURNS turns against a small context window (CODY_CONTEXT_WINDOW), so that
the server compacts it again and again; every third turn reads a file first. Per turn:

- request bytes: the body of the turn's last model request, as the provider received it;
- server time: the turn's `cody/run` wall time seen by the client minus the time the
  provider spent answering the turn's requests (arrival to last event sent, summaries
  included) — what the server itself costs per turn;
- server CPU: the server process's CPU time (user + system) over each window of turns,
  per turn — which other load on the machine moves less than wall time;
- the request prefix: for two consecutive agent requests with no compaction between them
  (no compaction marker was added to the history), the later body must start with the
  earlier one's bytes up to the end of its messages (byte-identical, so provider prompt
  caches keep hitting).

Goal: the medians of turns 250–300 are within 20 % of those of turns 50–100 (flat), and
every such prefix is byte-identical. The provider runs in a process of its own
(`python bench/context_growth.py provider`) and counts a request's tokens as a quarter
of its bytes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, Row, arg_parser, cpu_seconds, median, report, server_env, server_pid, spawn_client

WINDOW, RESERVE = 8000, 1000
SUMMARY_MARK = "You compact the conversation"


# --------------------------------------------------------------------------------------
# The provider process: answers turns and summaries, reports what it received.


def _provider_main() -> None:
    from cody_lsp.testing.provider import Reply, ScriptedProvider, ToolCall

    async def serve() -> None:
        arrived: list[float] = []

        def responder(body: dict[str, Any]) -> Reply:
            arrived.append(time.perf_counter())
            messages = body.get("messages") or []
            if str(messages[0].get("content", "")).startswith(SUMMARY_MARK):
                return Reply(text="Summary: the user sent numbered requests; each was answered. " * 4)
            last = messages[-1]
            if last.get("role") == "user" and str(last.get("content", "")).startswith("turn"):
                number = int(str(last["content"]).split()[1].rstrip(":"))
                if number % 3 == 0:
                    return Reply(text="Reading it.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])
            return Reply(text="Done: " + "all good " * 30, text_deltas=8)

        provider = ScriptedProvider(responder=responder)
        print(await provider.start(), flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        try:
            while line := await reader.readline():
                cmd = json.loads(line)
                start = int(cmd.get("since", 0))
                out = [
                    {
                        "arrived": arrived[i],
                        "done": (provider.sent_times[i] or [arrived[i]])[-1],
                        "bytes": provider.request_bodies[i].decode("utf-8"),
                        "summary": str(provider.requests[i]["messages"][0].get("content", "")).startswith(SUMMARY_MARK),
                    }
                    for i in range(start, len(provider.requests))
                ]
                sys.stdout.write(json.dumps(out) + "\n")
                sys.stdout.flush()
        finally:
            await provider.stop()

    asyncio.run(serve())


class Provider:
    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.base_url = ""
        self.seen = 0

    async def __aenter__(self) -> Provider:
        self.proc = await asyncio.create_subprocess_exec(
            PY,
            __file__,
            "provider",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=256 * 1024 * 1024,
        )
        assert self.proc.stdout is not None
        self.base_url = (await asyncio.wait_for(self.proc.stdout.readline(), 30)).decode().strip()
        return self

    async def new_requests(self) -> list[dict[str, Any]]:
        """The requests received since the last call."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"since": self.seen}).encode() + b"\n")
        await self.proc.stdin.drain()
        requests = json.loads(await asyncio.wait_for(self.proc.stdout.readline(), 60))
        self.seen += len(requests)
        return requests

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            await asyncio.wait_for(self.proc.wait(), 10)


# --------------------------------------------------------------------------------------
# The session


def messages_prefix(body: str) -> str:
    """The body up to the end of its messages array, without the closing bracket."""
    i = body.index("[", body.index('"messages"'))
    depth, in_string = 0, False
    while i < len(body):
        ch = body[i]
        if in_string:
            if ch == "\\":
                i += 1  # skip the escaped character
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return body[:i]
        i += 1
    raise ValueError("no messages array")


async def main_async(args: Any) -> None:
    turns = 12 if args.smoke else 300
    first, last = (2, 6) if args.smoke else (50, 100)
    tail = (turns - 5, turns) if args.smoke else (250, 300)
    per_turn: list[dict[str, Any]] = []
    prefix_pairs = prefix_same = compactions = summaries = 0
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        (folder / "notes.txt").write_text("a line of notes\n" * 60)
        env = server_env(None, Path(tmp) / "sessions.db")
        async with Provider() as provider:
            env.update(
                {
                    "CODY_MODEL": "scripted-model",
                    "CODY_MODEL_BASE_URL": provider.base_url,
                    "CODY_MODEL_API_KEY": "sk-bench",
                    "CODY_CONTEXT_WINDOW": str(WINDOW),
                    "CODY_OUTPUT_RESERVE": str(RESERVE),
                }
            )
            client = await spawn_client(env, [folder])
            try:
                session = await client.create_session(title="growth", workspace_folder=folder)
                pid = server_pid(client)
                markers = 0
                previous: str | None = None
                for turn in range(turns):
                    t0 = time.perf_counter()
                    result = await client.run(f"turn {turn}: " + "please carry on " * 6, session_id=session.id)
                    wall = time.perf_counter() - t0
                    if result.status != "done":
                        raise SystemExit(f"turn {turn} ended {result.status}: {result.error}")
                    requests = await provider.new_requests()
                    page = await client.get_session(session.id, limit=12)
                    now_markers = markers + sum(
                        1 for m in page.messages if m.kind == "compaction" and m.run_id == result.run_id
                    )
                    compacted = now_markers > markers
                    compactions += now_markers - markers
                    markers = now_markers
                    summaries += sum(r["summary"] for r in requests)
                    provider_time = sum(r["done"] - r["arrived"] for r in requests)
                    agent = [r["bytes"] for r in requests if not r["summary"]]
                    for i, body in enumerate(agent):
                        before = previous if i == 0 else agent[i - 1]
                        if before is not None and not compacted:
                            prefix_pairs += 1
                            prefix_same += body.startswith(messages_prefix(before))
                    previous = agent[-1]
                    per_turn.append(
                        {
                            "bytes": len(agent[-1].encode()),
                            "server": wall - provider_time,
                            "cpu": cpu_seconds(pid),
                            "compacted": compacted,
                        }
                    )
            finally:
                await client.close()

    def window(lo: int, hi: int, key: str) -> float:
        return median(t[key] for t in per_turn[lo:hi])

    bytes_a, bytes_b = window(*(first, last), "bytes"), window(*tail, "bytes")
    time_a, time_b = window(*(first, last), "server"), window(*tail, "server")
    flat_bytes, flat_time = bytes_b / bytes_a, time_b / time_a

    def cpu(lo: int, hi: int) -> float:
        # Turns that compacted (about one in twelve) cost a summary's work, bounded by the window,
        # not by the history: how many fell in a window of 50 moved the mean by ±20% from run to run.
        # (A median is no use: /proc counts CPU in 10 ms ticks, about one turn's worth.)
        turns = [i for i in range(lo, hi) if not per_turn[i]["compacted"]]
        return sum(per_turn[i]["cpu"] - per_turn[i - 1]["cpu"] for i in turns) / len(turns)

    cpu_a, cpu_b = cpu(first, last), cpu(*tail)
    flat_cpu = cpu_b / cpu_a
    rows = [
        Row(
            f"request bytes per turn, median of turns {tail[0]}–{tail[1]} ÷ turns {first}–{last}",
            f"{flat_bytes:.2f} ({bytes_b / 1024:.1f} KiB vs {bytes_a / 1024:.1f} KiB)",
            "≤ 1.20",
            flat_bytes <= 1.2,
        ),
        Row(
            f"server time per turn, median of turns {tail[0]}–{tail[1]} ÷ turns {first}–{last}",
            f"{flat_time:.2f} ({time_b * 1000:.1f} ms vs {time_a * 1000:.1f} ms)",
            "≤ 1.20",
            flat_time <= 1.2,
        ),
        Row(
            f"server CPU per turn that did not compact, turns {tail[0]}–{tail[1]} ÷ turns {first}–{last}",
            f"{flat_cpu:.2f} ({cpu_b * 1000:.1f} ms vs {cpu_a * 1000:.1f} ms)",
            "≤ 1.20",
            flat_cpu <= 1.2,
        ),
        Row(
            "consecutive requests without a compaction between them whose prefix is byte-identical",
            f"{prefix_same} of {prefix_pairs}",
            "all",
            prefix_pairs > 0 and prefix_same == prefix_pairs,
        ),
        Row(
            "largest request / the budget",
            f"{max(t['bytes'] for t in per_turn) / 4:.0f} tokens (bytes / 4) of {WINDOW - RESERVE}",
        ),
        Row(
            f"compactions in {turns} turns",
            f"{compactions} ({summaries} with a summary, {compactions - summaries} shortening old tool outputs only)",
        ),
    ]
    report(
        "context_growth",
        "Context growth",
        rows,
        args,
        details=[
            f"One session of {turns} turns, window {WINDOW} tokens, output reserve {RESERVE}; every third turn "
            "reads a 960-byte file first. Server time: cody/run wall time minus the provider's time answering "
            "the turn's requests."
        ],
        extra={"per_turn": per_turn},
    )


def main() -> None:
    if sys.argv[1:2] == ["provider"]:
        _provider_main()
        return
    args = arg_parser(__doc__.split("\n\n")[0]).parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
