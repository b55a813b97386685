"""Cold start: process spawn → `initialize` result, → the first cody/* answer, and → the
panel's first page of history, medians of N (goals ≤ 0.4 s and ≤ 150 ms).

Speaks LSP framing over the server's stdin/stdout directly (no client library),
so nothing but the server's own start-up is timed. The server answers `initialize`
before it imports pygls, then an editor's first `cody/listSessions`, `cody/latestSession`
and `cody/getSession` from the database while it imports
(cody_lsp/server/lsp/early_initialize.py). Each start sends, as the editor does,
initialize, initialized and `cody/listSessions`, then, as the panel's first open does,
`cody/latestSession` and a `cody/getSession` (limit 100) of the session it names — a
session of 80 messages (20 runs of a prompt, a tool call, its result and an answer) made
before the first start — so the table gives both answers, and the time until the server
is fully up (a `cody/listPermissionRules`, which is never answered early), and what these
are made of: a bare interpreter start, the imports before the answer, the server's
imports after it, and the heaviest of those (`python -X importtime`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, Row, arg_parser, frame, median, ms, read_message, report, server_command, server_env

GOAL = 0.4
FIRST_GOAL = 0.150  # spawn → first cody/listSessions answer (issue 18: ≤ 3× Codex app-server's 42 ms + its 13 ms)


def request(proc: subprocess.Popen, msg_id: int, method: str, params: dict) -> dict:
    """Send a request and read up to its answer."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
    proc.stdin.flush()
    while True:
        msg = read_message(proc.stdout)
        if msg.get("id") == msg_id:
            return msg


HISTORY_MESSAGES = 80  # the session the panel opens: 20 runs of 4 messages


def make_history(db: Path, folder: Path) -> None:
    """The folder's session the panel opens: 20 runs of a prompt, a tool call, its result and an answer."""
    from cody_lsp.protocol.wire import Usage
    from cody_lsp.server.agent.history import Entry, user_entry
    from cody_lsp.server.core import stored
    from cody_lsp.server.store.database import Store

    async def make() -> None:
        store = await Store.open(db)
        session = await store.sessions.create("ses_bench", "bench", "model-x", str(folder))
        for n in range(HISTORY_MESSAGES // 4):
            call = {
                "id": f"c{n}",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
            entries = [
                user_entry(f"question {n} " + "words " * 20),
                Entry({"role": "assistant", "content": None, "tool_calls": [call]}, reasoning="thinking " * 10),
                Entry(
                    {"role": "tool", "tool_call_id": f"c{n}", "content": "line\n" * 40}, tool_name="read_file", ok=True
                ),
                Entry({"role": "assistant", "content": "answer " * 60}),
            ]
            await store.runs.start(f"run_{n}", session.id)
            await stored.finish_run(store, session.id, f"run_{n}", "done", entries, Usage(900, 60, 960))
        await store.close()

    asyncio.run(make())


def one_start(
    env: dict[str, str],
    folder: Path,
    first_answers: list[float] | None = None,
    up: list[float] | None = None,
    pages: list[float] | None = None,
) -> float:
    init = frame(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "capabilities": {},
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
            },
        }
    )
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        server_command([PY, "-m", "cody_lsp"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(init)
    proc.stdin.flush()
    while True:
        msg = read_message(proc.stdout)
        if msg.get("id") == 1:
            break
    elapsed = time.perf_counter() - t0
    cody = msg.get("result", {}).get("capabilities", {}).get("experimental", {}).get("cody", {})
    if cody.get("protocolVersion") != 1:
        raise SystemExit(f"unexpected initialize answer: {msg}")
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "cody/listSessions",
                "params": {"workspaceFolder": str(folder), "limit": 1},
            }
        )
    )
    proc.stdin.flush()
    while True:
        msg = read_message(proc.stdout)
        if msg.get("id") == 3:
            break
    if "result" not in msg:
        raise SystemExit(f"unexpected cody/listSessions answer: {msg}")
    if first_answers is not None:
        first_answers.append(time.perf_counter() - t0)
    latest = request(proc, 5, "cody/latestSession", {"workspaceFolder": str(folder)})
    if not isinstance(latest.get("result"), dict):
        raise SystemExit(f"unexpected cody/latestSession answer: {latest}")
    page = request(proc, 6, "cody/getSession", {"sessionId": latest["result"]["id"], "limit": 100})
    if len(page.get("result", {}).get("messages", [])) != HISTORY_MESSAGES:
        raise SystemExit(f"unexpected cody/getSession answer: {str(page)[:300]}")
    if pages is not None:
        pages.append(time.perf_counter() - t0)
    if "result" not in request(proc, 4, "cody/listPermissionRules", {"workspaceFolder": str(folder)}):
        raise SystemExit("unexpected cody/listPermissionRules answer")
    if up is not None:
        up.append(time.perf_counter() - t0)
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    proc.stdin.flush()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return elapsed


def interpreter_start(n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return median(times)


def import_seconds(env: dict[str, str], module: str, n: int) -> float:
    """Median wall time of importing `module` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return median(
        float(subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
        for _ in range(n)
    )


def heaviest_imports(env: dict[str, str], top: int = 6) -> tuple[float, list[tuple[str, float]]]:
    """(total import time of cody_lsp.server.lsp.server under -X importtime, [(module, self seconds)] heaviest first)."""
    out = subprocess.run(
        [PY, "-X", "importtime", "-c", "import cody_lsp.server.lsp.server"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows = []
    total = 0.0
    for line in out.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if name == "cody_lsp.server.lsp.server":
            total = int(cum_us) / 1e6
        rows.append((name, int(self_us) / 1e6))
    rows.sort(key=lambda r: r[1], reverse=True)
    return total, rows[:top]


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    n = 2 if args.smoke else 10
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        db = Path(tmp) / "state" / "sessions.db"
        env = server_env(None, db)
        make_history(db, folder)
        one_start(env, folder)  # warm the page cache and .pyc files; not counted
        first: list[float] = []
        up: list[float] = []
        pages: list[float] = []
        ratios: list[float] = []  # first answer / a bare interpreter start just before it (paired)
        times = []
        for _ in range(n):
            pass_start = interpreter_start(1)
            times.append(one_start(env, folder, first, up, pages))
            ratios.append(first[-1] / pass_start)
        bare = interpreter_start(3 if args.smoke else 5)
        _, heavy = heaviest_imports(env)
        k = 3 if args.smoke else 5
        before = import_seconds(env, "cody_lsp.cli, cody_lsp.server.lsp.early_initialize", k)
        total = import_seconds(env, "cody_lsp.server.lsp.server", k)
        lsp_types = import_seconds(env, "lsprotocol.types", k)
    med = median(times)
    rows = [
        Row(
            f"spawn → initialize result, median of {n}",
            ms(med),
            f"≤ {GOAL * 1000:.0f} ms",
            med <= GOAL,
            note=f"min {ms(min(times))}, max {ms(max(times))}",
        ),
        Row(
            "spawn → first cody/* answer (initialize, initialized, then cody/listSessions), median",
            ms(median(first)),
            note=f"min {ms(min(first))}, max {ms(max(first))}; its goal (≤ {FIRST_GOAL * 1000:.0f} ms) is light_start.py's",
        ),
        Row(
            "… the same over a bare interpreter start just before it (paired), median",
            f"{median(ratios):.2f}×",
            note="the machine's speed taken out: 150 ms over the 37 ms `python -c pass` of this machine when quiet",
        ),
        Row(
            "spawn → first cody/getSession answer (after latestSession; limit 100, a session of 80 messages), median",
            ms(median(pages)),
            note=f"min {ms(min(pages))}, max {ms(max(pages))}",
        ),
        Row("spawn → the server up (then a cody/listPermissionRules, which needs it), median", ms(median(up))),
        Row("of which: bare interpreter start (`python -c pass`)", ms(bare)),
        Row(
            "of which: the imports before the answer (`cody_lsp.cli`, `…early_initialize`; fresh interpreter, median)",
            ms(before),
        ),
        Row("after the answer: `import cody_lsp.server.lsp.server` (the server; fresh interpreter, median)", ms(total)),
        Row("… of which: `import lsprotocol.types` alone (pygls needs it)", ms(lsp_types)),
    ]
    details = [
        "Heaviest imports by self time (`python -X importtime`, which inflates them): "
        + ", ".join(f"`{name}` {ms(sec)}" for name, sec in heavy)
    ]
    report(
        "cold_start",
        "Cold start",
        rows,
        args,
        details,
        extra={
            "times": times,
            "first_answer": first,
            "server_up": up,
            "first_get_session": pages,
            "first_over_bare": ratios,
            "bare": bare,
            "import_before_answer": before,
            "import_total": total,
            "lsprotocol_types": lsp_types,
            "heaviest": heavy,
        },
    )


if __name__ == "__main__":
    main()
