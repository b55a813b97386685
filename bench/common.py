"""Shared helpers of the benchmarks: machine info, tables, percentiles, processes.

Every bench script:
- takes ``--smoke`` (tiny sizes: checks that it works, not how fast) and
  ``--json PATH`` (also write its figures as JSON, for ``run_all.py``);
- prints one markdown table headed by the machine and the date; every figure
  of a table comes from the same run.

The scripted provider runs in its own process (``python bench/common.py
provider``) so that its work never shares a core's GIL with what is measured;
it is steered over stdin with one JSON command per line and answers with one
JSON line on stdout (see ``_provider_main``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable

if str(ROOT) not in sys.path:  # run as `python bench/x.py` from anywhere
    sys.path.insert(0, str(ROOT))


# --------------------------------------------------------------------------------------
# Machine, numbers, tables


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
                break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=False, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        if commit and dirty:
            commit += "+changes"
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    return {
        "cpu": cpu,
        "cores": str(cores),
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": load_average(),
        "commit": commit or "?",
    }


def machine_line(m: dict[str, str] | None = None) -> str:
    m = m or machine()
    return (
        f"{m['cpu']}, {m['cores']} cores, {m['memory']}, {m['os']}, Python {m['python']}; "
        f"{m['date']}; commit {m['commit']}; load average {m.get('load', '?')} at the end"
    )


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100) of a non-empty sequence."""
    if not values:
        return math.nan
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    k = (len(data) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def median(values: Iterable[float]) -> float:
    data = list(values)
    return statistics.median(data) if data else math.nan


def ms(seconds: float) -> str:
    if math.isnan(seconds):
        return "n/a"
    value = seconds * 1000
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


class Row:
    """One line of a result table: what, the figure reached, the goal, met or not."""

    def __init__(self, what: str, figure: str, goal: str = "", met: bool | None = None, note: str = ""):
        self.what, self.figure, self.goal, self.met, self.note = what, figure, goal, met, note

    @property
    def verdict(self) -> str:
        return "" if self.met is None else ("met" if self.met else "NOT met")

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "figure": self.figure, "goal": self.goal, "met": self.met, "note": self.note}


def table(
    title: str,
    rows: list[Row],
    *,
    smoke: bool = False,
    details: list[str] | None = None,
    m: dict[str, str] | None = None,
) -> str:
    lines = [
        f"### {title}{' (smoke: tiny sizes, times mean nothing)' if smoke else ''}",
        "",
        f"Machine: {machine_line(m)}",
        "",
        "| measure | figure | goal | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        figure = r.figure + (f" ({r.note})" if r.note else "")
        lines.append(f"| {r.what} | {figure} | {r.goal} | {r.verdict} |")
    if details:
        lines.append("")
        lines.extend(details)
    return "\n".join(lines) + "\n"


def arg_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check it works (times mean nothing)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    return parser


def report(
    name: str,
    title: str,
    rows: list[Row],
    args: argparse.Namespace,
    details: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Print the table; write the JSON for run_all.py when asked."""
    m = machine()
    text = table(title, rows, smoke=args.smoke, details=details, m=m)
    print(text, flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "name": name,
                    "title": title,
                    "smoke": args.smoke,
                    "machine": m,
                    "rows": [r.as_dict() for r in rows],
                    "table": text,
                    "extra": extra or {},
                },
                indent=2,
            )
        )


# --------------------------------------------------------------------------------------
# Processes


def server_env(base_url: str | None, db: Path, **extra: str) -> dict[str, str]:
    """The environment of a server under test (like tests/conftest.py's)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CODY_") or k.startswith("CODY_BENCH_") or k == "CODY_CANDIDATES"
    }
    env.update(
        {
            "CODY_DB": str(db),
            "CODY_LOG_LEVEL": "WARNING",
            "CODY_APPROVALS": "never",
            "CODY_RETRY_ATTEMPTS": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if base_url is not None:
        env.update({"CODY_MODEL": "scripted-model", "CODY_MODEL_BASE_URL": base_url, "CODY_MODEL_API_KEY": "sk-bench"})
    env.update(extra)
    return env


# The server whose event-loop lag is sampled (cody_lsp/diagnostics.py, imported by cli.serve;
# active when CODY_LOOP_LAG_REPORT is set in its environment).
MONITORED_SERVER = [PY, "-m", "cody_lsp"]


def profiled_server(stats_path: Path) -> list[str]:
    """A server command that runs under cProfile and dumps its stats to `stats_path` when
    it exits normally (shutdown + exit); for finding what limits a figure."""
    code = (
        "import cProfile, os, sys\n"
        "from cody_lsp import cli\n"
        "profile = cProfile.Profile()\n"
        "real_exit = os._exit\n"
        "def dump_and_exit(code):\n"
        "    profile.disable()\n"
        f"    profile.dump_stats({str(stats_path)!r})\n"
        "    real_exit(code)\n"
        "os._exit = dump_and_exit\n"
        "profile.enable()\n"
        "cli.main([])\n"
    )
    return [PY, "-c", code]


def with_loop_monitor(env: dict[str, str], report_path: Path) -> dict[str, str]:
    """The env that makes a server started with MONITORED_SERVER report its loop lag."""
    env = dict(env)
    env["CODY_LOOP_LAG_REPORT"] = str(report_path)
    return env


def lag_window(report: dict[str, Any] | None, start: float, end: float) -> list[tuple[float, float]]:
    """(lag, loop-thread CPU seconds) of the samples taken between two perf_counter()
    stamps of this machine."""
    if not report:
        return []
    return [(s[1], s[2] if len(s) > 2 else math.nan) for s in report.get("samples", []) if start <= s[0] <= end]


def read_lag_report(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM (kB) of a live process, from /proc/PID/status."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return out


def cpu_seconds(pid: int | None = None) -> float:
    """user + system CPU time of a process (this one when pid is None), from /proc."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return math.nan


def load_average() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def client_class():
    """cody_lsp.client.CodyClient (written alongside; a clear error if missing)."""
    try:
        from cody_lsp.client import CodyClient
    except ImportError as exc:
        raise SystemExit(f"bench: cody_lsp.client is not available ({exc}); this benchmark needs it") from None
    return CodyClient


def server_pid(client: Any) -> int | None:
    proc = getattr(client, "server_process", None)
    return getattr(proc, "pid", None)


def server_command(default: list[str] | None = None) -> list[str] | None:
    """CODY_BENCH_SERVER (a shell-quoted command line) replaces the server command, to
    measure a candidate change without editing the server; it must import
    cody_lsp.testing.loop_lag itself for the event-loop lag figures."""
    override = os.environ.get("CODY_BENCH_SERVER")
    return shlex.split(override) if override else default


async def spawn_client(env: dict[str, str], folders: list[Path], command: list[str] | None = None) -> Any:
    return await client_class().spawn(env=env, workspace_folders=folders, server_command=server_command(command))


class ProviderProcess:
    """A ScriptedProvider in a process of its own, answering every request with a reply
    set by ``set_reply`` (or the agent script of ``agent_mode``)."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.base_url = ""
        self._lock = asyncio.Lock()

    async def start(self) -> ProviderProcess:
        self.proc = await asyncio.create_subprocess_exec(
            PY,
            str(BENCH / "common.py"),
            "provider",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=256 * 1024 * 1024,
        )
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        self.base_url = line.decode().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"provider did not start: {line!r}")
        return self

    async def command(self, **cmd: Any) -> Any:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        async with self._lock:
            self.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
            await self.proc.stdin.drain()
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        answer = json.loads(line)
        if isinstance(answer, dict) and "error" in answer:
            raise RuntimeError(f"provider: {answer['error']}")
        return answer

    async def set_reply(self, **reply: Any) -> None:
        """Every request from now on gets ``Reply(**reply)``."""
        await self.command(cmd="reply", reply=reply)

    async def queue(self, *replies: dict[str, Any]) -> None:
        """The next requests get these replies (Reply keyword dicts), before the default one."""
        await self.command(cmd="queue", replies=list(replies))

    async def agent_mode(self, **settings: Any) -> None:
        """Each run: run_command, then read_file, then a streamed answer (see _agent_reply)."""
        await self.command(cmd="agent", settings=settings)

    async def stats(self, times: bool = True) -> dict[str, Any]:
        """recv (perf_counter at each request's arrival), sent_times (per SSE event),
        messages (message count of each request); cleared by ``clear``."""
        return await self.command(cmd="stats", times=times)

    async def clear(self) -> None:
        await self.command(cmd="clear")

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()

    async def __aenter__(self) -> ProviderProcess:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


# --------------------------------------------------------------------------------------
# The provider process


def _agent_reply(body: dict, settings: dict) -> Any:
    """A run of the concurrency bench: run_command → read_file → answer."""
    from cody_lsp.testing.provider import Reply, ToolCall

    messages = body.get("messages") or []
    tools_done = 0
    for msg in reversed(messages):
        if msg.get("role") == "user":
            break
        if msg.get("role") == "tool":
            tools_done += 1
    delay = float(settings.get("delay", 0.0))
    if tools_done == 0:
        return Reply(
            text="Let me look.",
            tool_calls=[ToolCall("run_command", {"command": settings.get("command", "echo bench && ls")})],
            delay=delay,
        )
    if tools_done == 1:
        return Reply(tool_calls=[ToolCall("read_file", {"path": settings.get("path", "notes.txt")})], delay=delay)
    words = int(settings.get("answer_tokens", 200))
    return Reply(text="".join(f"w{i} " for i in range(words)), text_deltas=words, delay=delay)


def _provider_main() -> None:
    import collections

    from cody_lsp.testing.provider import Reply, ScriptedProvider

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        state: dict[str, Any] = {"reply": Reply(text="ok"), "agent": None}
        queued: collections.deque[Reply] = collections.deque()
        recv: list[float] = []
        msg_counts: list[int] = []

        def responder(body: dict) -> Reply:
            recv.append(time.perf_counter())
            msg_counts.append(len(body.get("messages") or []))
            if queued:
                return queued.popleft()
            if state["agent"] is not None:
                return _agent_reply(body, state["agent"])
            return state["reply"]

        provider = ScriptedProvider(responder=responder)
        print(await provider.start(), flush=True)
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    cmd = json.loads(line)
                    kind = cmd.get("cmd")
                    if kind == "reply":
                        state["reply"] = Reply.from_dict(cmd["reply"])
                        state["agent"] = None
                        out: Any = {"ok": True}
                    elif kind == "queue":
                        queued.extend(Reply.from_dict(r) for r in cmd["replies"])
                        out = {"ok": True}
                    elif kind == "agent":
                        state["agent"] = cmd.get("settings") or {}
                        out = {"ok": True}
                    elif kind == "stats":
                        out = {
                            "requests": len(provider.requests),
                            "recv": recv,
                            "messages": msg_counts,
                            "active": provider.active_streams,
                        }
                        if cmd.get("times", True):
                            out["sent_times"] = provider.sent_times
                    elif kind == "clear":
                        provider.requests.clear()
                        provider.request_bodies.clear()
                        provider.request_headers.clear()
                        provider.sent_times.clear()
                        recv.clear()
                        msg_counts.clear()
                        out = {"ok": True}
                    else:
                        out = {"error": f"unknown command {kind!r}"}
                except Exception as exc:
                    out = {"error": f"{type(exc).__name__}: {exc}"}
                sys.stdout.write(json.dumps(out) + "\n")
                sys.stdout.flush()
        finally:
            await provider.stop()

    asyncio.run(serve())


# LSP base protocol framing, for the scripts that speak to a server over its pipes.
def frame(obj: dict[str, Any]) -> bytes:
    """One message, Content-Length framed (as the server's own endpoint frames one)."""
    from cody_lsp.jsonrpc.framing import framed

    return framed(json.dumps(obj).encode())


def read_message(stream: Any) -> dict[str, Any]:
    """The next Content-Length framed message of a binary stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("server closed stdout")
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    assert length is not None
    return json.loads(stream.read(length))


if __name__ == "__main__":
    if sys.argv[1:2] == ["provider"]:
        _provider_main()
    else:
        print(machine_line())
