"""A light start: what a server costs before it is asked for a run, and how soon its first run's
model request leaves — against baselines measured in the same run.

Goals (issue 32, on a quiet machine): spawn → the first `cody/listSessions` answer ≤ 150 ms;
spawn → the first model request of a `cody/run` sent right after `initialize` ≤ a bare
`python -c "import openai"` + 300 ms; a server given no run uses ≤ 1.2 CPU-s in its first 6 s;
its RSS then ≤ 80 MB.

- First answer: a fresh `python -m cody_lsp` is sent initialize, initialized and
  cody/listSessions at once (as an editor does); the clock runs from just before the spawn to the
  answer. Also without the early answers (server/lsp/early_initialize.py turned off by a wrapper):
  what they are worth.
- First model request: initialize, initialized and a `cody/run` at once; the clock stops when the
  scripted provider (its own process, `common.ProviderProcess`) receives the request (its
  `time.perf_counter()`: one clock for every process). Each start is paired with a bare
  `python -c "import openai"` timed just before it; the figure is the median of the differences.
- Idle: a server that answers what a panel asks first (listSessions, latestSession) and is then
  left alone: its CPU time (user + system, /proc/PID/stat) and RSS (/proc/PID/status) 6 s after
  the spawn. Its children's CPU time (git housekeeping of the checkpoint store) is said beside it.
  Then a `cody/warmUp`, as the panel and the chat send when they start: the model client loads in
  the background, and RSS and CPU after it say what that costs.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    PY,
    ProviderProcess,
    Row,
    arg_parser,
    cpu_seconds,
    frame,
    median,
    ms,
    proc_status,
    read_message,
    report,
    server_env,
)

FIRST_GOAL = 0.150
MODEL_GOAL = 0.300  # over a bare `import openai`
IDLE_CPU_GOAL = 1.2
IDLE_RSS_GOAL_MB = 80
IDLE_SECONDS = 6.0
SERVER = [PY, "-m", "cody_lsp"]
# The same server without its early answers (what they are worth).
NO_EARLY = [
    PY,
    "-c",
    "from cody_lsp import cli; cli._answer_initialize_early = lambda: None; raise SystemExit(cli.main([]))",
]


def wait_for(proc: subprocess.Popen[bytes], msg_id: int) -> dict[str, Any]:
    while True:
        msg = read_message(proc.stdout)
        if msg.get("id") == msg_id:
            return msg


def initialize(folder: Path) -> bytes:
    params = {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": folder.as_uri(), "name": "ws"}]}
    return frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) + frame(
        {"jsonrpc": "2.0", "method": "initialized", "params": {}}
    )


def spawn(command: list[str], env: dict[str, str], first: bytes) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    proc.stdin.write(first)
    proc.stdin.flush()
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown", "params": None}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        proc.stdin.flush()
        proc.wait(20)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


def timed(code: str, cpu: list[float] | None = None) -> float:
    """Wall time of `python -c code`; its CPU time (user + system) appended to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([PY, "-c", code], check=True)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


def first_answer(command: list[str], env: dict[str, str], folder: Path) -> float:
    list_sessions = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "cody/listSessions",
        "params": {"workspaceFolder": str(folder)},
    }
    t0 = time.perf_counter()
    proc = spawn(command, env, initialize(folder) + frame(list_sessions))
    answer = wait_for(proc, 2)
    elapsed = time.perf_counter() - t0
    if "result" not in answer:
        raise SystemExit(f"unexpected cody/listSessions answer: {answer}")
    stop(proc)
    return elapsed


async def first_model_request(
    provider: ProviderProcess, env: dict[str, str], folder: Path, cpu: list[float] | None = None
) -> float:
    await provider.clear()
    run = {"jsonrpc": "2.0", "id": 2, "method": "cody/run", "params": {"prompt": "hi", "workspaceFolder": str(folder)}}
    t0 = time.perf_counter()
    proc = spawn(SERVER, env, initialize(folder) + frame(run))
    try:
        deadline = time.monotonic() + 60
        while True:
            stats = await provider.stats(times=False)
            if stats["recv"]:
                if cpu is not None:  # the server's CPU time by then (read a moment after the request)
                    cpu.append(cpu_seconds(proc.pid))
                return float(stats["recv"][0]) - t0
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server made no model request")
            await asyncio.sleep(0.002)
    finally:
        await asyncio.to_thread(wait_for, proc, 2)  # the run's answer, then a clean stop
        stop(proc)


def idle(env: dict[str, str], folder: Path) -> dict[str, float]:
    """CPU and RSS of a server left idle after a panel's first questions, then after a cody/warmUp."""
    asks = frame({"jsonrpc": "2.0", "id": 2, "method": "cody/listSessions", "params": {"workspaceFolder": str(folder)}})
    asks += frame(
        {"jsonrpc": "2.0", "id": 3, "method": "cody/latestSession", "params": {"workspaceFolder": str(folder)}}
    )
    t0 = time.perf_counter()
    proc = spawn(SERVER, env, initialize(folder) + asks)
    assert proc.stdin is not None
    wait_for(proc, 3)
    time.sleep(max(0.0, IDLE_SECONDS - (time.perf_counter() - t0)))
    out = {"cpu": cpu_seconds(proc.pid), "children": _children_cpu(proc.pid), "rss": proc_status(proc.pid)["VmRSS"]}
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 4, "method": "cody/warmUp", "params": {}}))
    proc.stdin.flush()
    wait_for(proc, 4)
    for n in range(200):  # until the model client is loaded: warmUp says so
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 10 + n, "method": "cody/warmUp", "params": {}}))
        proc.stdin.flush()
        if wait_for(proc, 10 + n)["result"]["ready"]:
            break
        time.sleep(0.05)
    out["warm_cpu"] = cpu_seconds(proc.pid) - out["cpu"]
    out["warm_rss"] = proc_status(proc.pid)["VmRSS"]
    stop(proc)
    return out


def _children_cpu(pid: int) -> float:
    """cutime + cstime: the CPU time of the children the server waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


async def run(n: int, idle_n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cody-bench-light-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        async with ProviderProcess() as provider:
            await provider.set_reply(text="hello there", text_deltas=3)
            env = server_env(provider.base_url, Path(tmp) / "state" / "sessions.db", HOME=tmp)
            first_answer(SERVER, env, folder)  # warms the page cache and the .pyc files; not counted
            timed("import openai")
            out: dict[str, Any] = {"first": [], "no_early": [], "model": [], "openai": [], "pass": [], "idle": []}
            out["model_cpu"], out["openai_cpu"] = [], []
            for _ in range(n):
                out["pass"].append(timed("pass"))
                out["first"].append(first_answer(SERVER, env, folder))
                out["no_early"].append(first_answer(NO_EARLY, env, folder))
                out["openai"].append(timed("import openai", out["openai_cpu"]))
                out["model"].append(await first_model_request(provider, env, folder, out["model_cpu"]))
            for _ in range(idle_n):
                out["idle"].append(await asyncio.to_thread(idle, env, folder))
    return out


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    n, idle_n = (2, 1) if args.smoke else (9, 3)
    out = asyncio.run(run(n, idle_n))
    first, model, bare = median(out["first"]), median(out["model"]), median(out["openai"])
    over = median([m - o for m, o in zip(out["model"], out["openai"], strict=True)])
    idle_cpu = median([i["cpu"] for i in out["idle"]])
    idle_rss = median([i["rss"] for i in out["idle"]]) / 1024
    rows = [
        Row(
            f"spawn → first cody/listSessions answer (initialize, initialized, listSessions at once), median of {n}",
            ms(first),
            f"≤ {FIRST_GOAL * 1000:.0f} ms",
            first <= FIRST_GOAL,
            note=f"{first / median(out['pass']):.1f}× a bare `python -c pass` of {ms(median(out['pass']))}",
        ),
        Row(
            "… the same without the early answers (the server's own first answer)",
            ms(median(out["no_early"])),
            note="what the early start is worth",
        ),
        Row(
            "spawn → the first model request of a cody/run sent right after initialize, over a bare "
            f'`python -c "import openai"` just before it (paired), median of {n}',
            ("+" if over >= 0 else "−") + ms(abs(over)),
            f"≤ +{MODEL_GOAL * 1000:.0f} ms",
            over <= MODEL_GOAL,
            note=f"first model request {ms(model)}; `import openai` {ms(bare)}",
        ),
        Row(
            "… in CPU time (which other load moves less): the server's until its first model request, over the "
            "bare import's (paired), median",
            f"+{median([m - o for m, o in zip(out['model_cpu'], out['openai_cpu'], strict=True)]):.2f} s",
            note=f"server {median(out['model_cpu']):.2f} s, `import openai` {median(out['openai_cpu']):.2f} s",
        ),
        Row(
            f"CPU time of a server given no run, its first {IDLE_SECONDS:.0f} s (median of {idle_n})",
            f"{idle_cpu:.2f} s",
            f"≤ {IDLE_CPU_GOAL} s",
            idle_cpu <= IDLE_CPU_GOAL,
            note=f"its children (git housekeeping): {median([i['children'] for i in out['idle']]):.2f} s",
        ),
        Row(
            f"RSS of that server at {IDLE_SECONDS:.0f} s",
            f"{idle_rss:.0f} MB",
            f"≤ {IDLE_RSS_GOAL_MB} MB",
            idle_rss <= IDLE_RSS_GOAL_MB,
        ),
        Row(
            "then a cody/warmUp (a client's hint that a run is coming): CPU until the model client is loaded, RSS after",
            f"{median([i['warm_cpu'] for i in out['idle']]):.2f} s, "
            f"{median([i['warm_rss'] for i in out['idle']]) / 1024:.0f} MB",
        ),
    ]
    report("light_start", "A light start", rows, args, extra=out)


if __name__ == "__main__":
    main()
