"""Soak: many runs over several sessions at once, with faults, cancels and approvals; then a restart.

    python bench/soak.py --minutes 12 --concurrency 4
    python bench/soak.py --smoke          # a few seconds (tests/test_bench_smoke.py)

The scripted provider (in this process, HTTP on 127.0.0.1) reads each run's plan from its
prompt (`SOAK <token> <plan>`): plain text, one tool call (read_file, write_file, list_dir,
grep, run_command `echo x`) then text, a slow stream, or a fault (HTTP 500/429, a disconnect
mid-stream, malformed SSE, a stall longer than CODY_STALL_TIMEOUT). Approvals are on: the
client declares the permissions capability and answers allow / allow_always / deny at
random; it also cancels some runs at a random moment. Every few seconds the server's
VmRSS / VmHWM, open fds and descendant processes are sampled. At the end the server is
restarted on the same database (a run per session), then the database is checked: integrity,
every `done` run's turn present, no half turn (an assistant tool call without its tool
result), no run left `running`. Not a timed test: nothing here is asserted on time.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Row, arg_parser, proc_status, report, server_command, server_env, server_pid

from cody_lsp.testing.provider import Fault, Reply, ScriptedProvider, ToolCall

PLANS = [
    ("text", 20),
    ("slow", 8),
    ("read_file", 10),
    ("write_file", 8),
    ("list_dir", 8),
    ("grep", 8),
    ("run_command", 10),
    ("http500", 4),
    ("http429", 4),
    ("disconnect", 4),
    ("malformed", 4),
    ("stall", 3),
]
TOOL_ARGS: dict[str, dict[str, Any]] = {
    "read_file": {"path": "notes.txt"},
    "list_dir": {"path": "."},
    "grep": {"pattern": "def "},
    "run_command": {"command": "echo x"},
}
STALL_TIMEOUT = "1"


def reply_for(body: dict) -> Reply:
    """The provider's answer: the plan written in the last user prompt, step by step."""
    messages = body.get("messages") or []
    plan, token, tools_done = "text", "?", 0
    for msg in reversed(messages):
        if msg.get("role") == "tool":
            tools_done += 1
        if msg.get("role") == "user":
            content = msg.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            parts = text.split()
            if len(parts) >= 3 and parts[0] == "SOAK":
                token, plan = parts[1], parts[2]
            break
    words = "".join(f"w{i} " for i in range(40))
    if plan in TOOL_ARGS or plan == "write_file":
        if tools_done == 0:
            args = TOOL_ARGS.get(plan) or {"path": f"out/{random.randrange(8)}.txt", "content": f"{token}\n"}
            return Reply(text="Let me look.", tool_calls=[ToolCall(plan, args)])
        return Reply(text=f"done {token} " + words, text_deltas=10)
    if plan == "slow":
        return Reply(text=words * 2, text_deltas=40, delay=0.01)
    if plan == "http500":
        return Reply(fault=Fault.http(500))
    if plan == "http429":
        return Reply(fault=Fault.http(429, {"retry-after": "0"}))
    if plan == "disconnect":
        return Reply(text=words, text_deltas=10, fault=Fault.disconnect(after=4))
    if plan == "malformed":
        return Reply(text=words, text_deltas=10, fault=Fault.malformed(after=3))
    if plan == "stall":
        return Reply(text=words, text_deltas=10, fault=Fault.stall(after=3, seconds=float(STALL_TIMEOUT) + 1.5))
    return Reply(text=f"ok {token} " + words, text_deltas=8)


def answer_permission(params: dict) -> str:
    return random.choice(["allow", "allow", "allow_always", "deny"])


# ------------------------------------------------------------------ the server process, from outside


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children[ppid].append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:80]
    except OSError:
        return "?"


def fd_count(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None  # not root and the server made itself non-dumpable, or gone


def sample(pid: int, t0: float) -> dict[str, Any]:
    status = proc_status(pid)
    return {
        "t": time.monotonic() - t0,
        "rss": status.get("VmRSS"),
        "hwm": status.get("VmHWM"),
        "fds": fd_count(pid),
        "children": len(descendants(pid)),
        "child_names": sorted(command_of(p) for p in descendants(pid)),
    }


# ------------------------------------------------------------------ the load


class Soak:
    def __init__(self, folder: Path, env: dict[str, str], deadline: float, concurrency: int):
        self.folder, self.env, self.deadline, self.concurrency = folder, env, deadline, concurrency
        self.statuses: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.plans: collections.Counter[str] = collections.Counter()
        self.done_runs: list[tuple[str, str, str]] = []  # (run_id, session_id, token)
        self.sessions: set[str] = set()
        self.session_statuses: dict[str, list[str]] = collections.defaultdict(list)
        self.cancels = 0

    async def one_run(self, client: Any, session_id: str | None) -> str | None:
        plan = random.choices([p for p, _ in PLANS], [w for _, w in PLANS])[0]
        token = uuid.uuid4().hex[:12]
        self.plans[plan] += 1
        stream = client.stream(f"SOAK {token} {plan}", session_id=session_id, workspace_folder=self.folder)
        cancel_at = random.uniform(0.0, 0.4) if random.random() < 0.12 else None
        try:
            if cancel_at is not None:
                await asyncio.sleep(cancel_at)
                self.cancels += 1
                await stream.cancel()
            result = await asyncio.wait_for(stream.result(), 60)
        except TimeoutError:
            self.statuses["hung (no result in 60 s)"] += 1
            await stream.aclose()
            return session_id
        except Exception as exc:
            self.statuses[f"client error: {type(exc).__name__}"] += 1
            return None
        self.statuses[result.status] += 1
        if result.error is not None:
            self.errors[f"{result.status}: {result.error.code}"] += 1
        if session_id is None and result.status == "error":
            return None  # a new session whose first run failed before anything happened is not kept
        self.sessions.add(result.session_id)
        self.session_statuses[result.session_id].append(result.status)
        if result.status == "done":
            self.done_runs.append((result.run_id, result.session_id, token))
        return result.session_id

    async def worker(self, client: Any) -> None:
        session_id: str | None = None
        runs = 0
        while time.monotonic() < self.deadline:
            if runs % 25 == 0:
                session_id = None  # a fresh session now and then (allow_always rules are per session)
            session_id = await self.one_run(client, session_id)
            runs += 1

    async def sampler(self, pid: int, t0: float, samples: list[dict], every: float) -> None:
        while True:
            samples.append(sample(pid, t0))
            await asyncio.sleep(every)


def check_db(db: Path, done_runs: list[tuple[str, str, str]]) -> dict[str, Any]:
    con = sqlite3.connect(db)
    try:
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        missing = []
        for run_id, session_id, token in done_runs:
            status = con.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            prompt = con.execute(
                "SELECT 1 FROM messages WHERE session_id = ? AND role = 'user' AND content LIKE ?",
                (session_id, f"%{token}%"),
            ).fetchone()
            if status is None or status[0] != "done" or prompt is None:
                missing.append(run_id)
        running = [r[0] for r in con.execute("SELECT id FROM runs WHERE status = 'running'")]
        half = []
        rows = con.execute(
            "SELECT session_id, position, role, tool_calls, tool_call_id FROM messages ORDER BY session_id, position"
        ).fetchall()
        pending: set[str] = set()
        current = None
        for session_id, position, role, tool_calls, _tool_call_id in rows + [("", 0, "end", None, None)]:
            if role == "tool" and session_id == current:
                pending.discard(_tool_call_id)
                continue
            if pending:
                half.append(f"{current} before position {position}: {sorted(pending)}")
            pending, current = set(), session_id
            if role == "assistant" and tool_calls:
                try:
                    pending = {c.get("id") for c in json.loads(tool_calls)}
                except (ValueError, AttributeError):
                    pending = {"<unparsable tool_calls>"}
        counts = dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
        return {"integrity": integrity, "missing": missing, "running": running, "half": half, "db_runs": counts}
    finally:
        con.close()


async def soak(minutes: float, concurrency: int, smoke: bool) -> tuple[list[Row], list[str], dict[str, Any]]:
    provider = ScriptedProvider(responder=reply_for)
    base_url = await provider.start()
    with tempfile.TemporaryDirectory(prefix="cody-soak-") as tmp:
        folder = Path(tmp) / "ws"
        (folder / "src").mkdir(parents=True)
        (folder / "out").mkdir()
        (folder / "notes.txt").write_text("notes\n" * 20)
        (folder / "src" / "a.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
        db = Path(tmp) / "soak.db"
        env = server_env(base_url, db, CODY_APPROVALS="ask", CODY_STALL_TIMEOUT=STALL_TIMEOUT)
        t0 = time.monotonic()
        deadline = t0 + minutes * 60
        load = Soak(folder, env, deadline, concurrency)
        samples: list[dict] = []
        client = await spawn_client_with_permissions(env, folder)
        pid = server_pid(client)
        assert pid is not None
        start = sample(pid, t0)
        every = 1.0 if smoke else 5.0
        sampler = asyncio.ensure_future(load.sampler(pid, t0, samples, every))
        try:
            await asyncio.gather(*(load.worker(client) for _ in range(concurrency)))
            await asyncio.sleep(1.0)  # let the last commands and connections finish
            end = sample(pid, t0)
        finally:
            sampler.cancel()
            await client.close()
        soak_seconds = time.monotonic() - t0
        await asyncio.sleep(0.5)
        left_after_close = [p for p in descendants(pid)]
        # Restart on the same database: one more run in every session seen (capped).
        client2 = await spawn_client_with_permissions(env, folder)
        restart_statuses: collections.Counter[str] = collections.Counter()
        unknown: list[str] = []
        try:
            for session_id in list(load.sessions)[:20]:
                try:
                    result = await asyncio.wait_for(
                        client2.run(f"SOAK {uuid.uuid4().hex[:12]} text", session_id=session_id), 60
                    )
                except Exception as exc:
                    restart_statuses[f"{type(exc).__name__}: {str(exc)[:40]}"] += 1
                    unknown.append(f"{session_id} (its runs: {load.session_statuses[session_id]})")
                    continue
                restart_statuses[result.status] += 1
                if result.status == "done":
                    load.done_runs.append((result.run_id, result.session_id, ""))
        finally:
            await client2.close()
        await provider.stop()
        checks = check_db(db, load.done_runs)

    total_runs = sum(load.statuses.values())
    warm = [s for s in samples if s["t"] >= min(60.0, 0.3 * minutes * 60) and s["rss"]]
    rss_warm = warm[0]["rss"] if warm else start["rss"]
    hwm_warm = warm[0]["hwm"] if warm else start["hwm"]
    fds_warm = warm[0]["fds"] if warm else start["fds"]
    peak_late = max((s["rss"] for s in warm), default=0)
    rss_growth = (end["rss"] or 0) - (rss_warm or 0)
    hwm_growth = (end["hwm"] or 0) - (hwm_warm or 0)
    flat = hwm_growth <= max(5 * 1024, 0.1 * (hwm_warm or 0))
    fds_ok = fds_warm is None or end["fds"] is None or end["fds"] <= fds_warm + 5
    by_status = ", ".join(f"{k} {v}" for k, v in sorted(load.statuses.items(), key=lambda kv: -kv[1]))
    mb = lambda kb: "n/a" if not kb else f"{kb / 1024:.1f} MB"  # noqa: E731
    fds = lambda n: "n/a (not readable: run as root)" if n is None else str(n)  # noqa: E731
    rows = [
        Row("duration, concurrency", f"{soak_seconds / 60:.1f} min, {concurrency} sessions at once"),
        Row("runs (client cancels asked)", f"{total_runs} ({load.cancels})"),
        Row("runs by status", by_status),
        Row(
            "server RSS after warm-up → end (max after warm-up)",
            f"{mb(rss_warm)} → {mb(end['rss'])} ({mb(peak_late)}; +{rss_growth / 1024:.1f} MB)",
        ),
        Row(
            "server peak RSS (VmHWM) after warm-up → end",
            f"{mb(hwm_warm)} → {mb(end['hwm'])}",
            "flat (≤ +10% or 5 MB)",
            flat,
        ),
        Row(
            "open fds: start (idle) / after warm-up → end (idle)",
            f"{fds(start['fds'])} / {fds(fds_warm)} → {fds(end['fds'])}",
            "end ≤ after warm-up + 5",
            fds_ok,
        ),
        Row(
            "descendant processes: after warm-up → end of load (idle) / after shutdown",
            f"{warm[0]['children'] if warm else start['children']} → {end['children']} / {len(left_after_close)}",
            "end ≤ after warm-up; 0 after shutdown",
            end["children"] <= (warm[0]["children"] if warm else start["children"]) and not left_after_close,
        ),
        Row("restart: a run in each session (≤ 20)", ", ".join(f"{k} {v}" for k, v in restart_statuses.items())),
        Row("PRAGMA integrity_check", str(checks["integrity"]), "ok", checks["integrity"] == "ok"),
        Row(
            "done runs missing their turn",
            f"{len(checks['missing'])} of {len(load.done_runs)}",
            "0",
            not checks["missing"],
        ),
        Row("half turns (tool call without its result)", str(len(checks["half"])), "0", not checks["half"]),
        Row("runs left 'running'", str(len(checks["running"])), "0", not checks["running"]),
    ]
    details = [
        f"Plans: {dict(load.plans)}.",
        f"Errors by code: {dict(load.errors)}.",
        f"Runs in the DB by status: {checks['db_runs']}.",
        f"Descendants of the server at the end of the load: {end['child_names']}.",
        "fds over time: " + " ".join(str(s["fds"]) for s in samples[:: max(1, len(samples) // 30)]),
        "RSS samples (MB, every %.0f s): %s"
        % (every, " ".join(f"{(s['rss'] or 0) / 1024:.0f}" for s in samples[:: max(1, len(samples) // 30)])),
    ]
    if unknown:
        details.append(f"Sessions unknown after the restart: {unknown[:5]}")
    for key in ("missing", "half", "running"):
        if checks[key]:
            details.append(f"{key}: {checks[key][:5]}")
    extra = {"samples": samples, "checks": checks, "statuses": dict(load.statuses), "runs": total_runs}
    return rows, details, extra


async def spawn_client_with_permissions(env: dict[str, str], folder: Path) -> Any:
    from cody_lsp.client import CodyClient

    return await CodyClient.spawn(
        env=env, workspace_folders=[folder], server_command=server_command(None), permission_handler=answer_permission
    )


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    minutes = 0.1 if args.smoke else args.minutes
    concurrency = 2 if args.smoke else args.concurrency
    rows, details, extra = asyncio.run(soak(minutes, concurrency, args.smoke))
    report("soak", "Soak", rows, args, details=details, extra=extra)
    consistency = [r for r in rows if r.what.startswith(("PRAGMA", "done runs", "half", "runs left"))]
    if any(r.met is False for r in consistency):
        sys.exit(1)


if __name__ == "__main__":
    main()
