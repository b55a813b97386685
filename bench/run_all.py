"""Run every benchmark and write bench/RESULTS.md (where things stand).

    python bench/run_all.py            # all scripts, full sizes (a few minutes on 2 cores)
    python bench/run_all.py --smoke    # every script's smoke run (pytest -m bench); RESULTS.md untouched
    python bench/run_all.py --only cold_start,concurrency

The block between the two `results:` markers of RESULTS.md is rewritten by each full run: one
table of every goal of every script, then each script's own table. What is outside it (the
short list of what changed each figure) is kept; the history of earlier runs is in git. With
CODY_BENCH_SERVER set (another server command: a proposed change, an older commit) the run goes
to the `candidates:` block instead.
Each script runs in its own process, one after the other; the table says how
busy the machine's CPUs were (other processes) just before each one started,
since other load on a 2-core machine moves every figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BENCH, PY, arg_parser, machine, machine_line

SCRIPTS = [
    ("light_start", "A light start"),
    ("cold_start", "Cold start"),
    ("cli_start", "Terminal commands' start-up"),
    ("stream_overhead", "Stream overhead"),
    ("chunk_latency", "Chunk latency"),
    ("notification_rate", "Notification rate"),
    ("tool_output", "Live command output"),
    ("sessions_at_scale", "Sessions at scale"),
    ("concurrency", "Concurrency and memory"),
    ("context_growth", "Context growth"),
    ("steering", "Steering"),
    ("document_sync", "Document sync"),
    ("acp_face", "ACP face"),
    ("acp_first_turn", "The ACP face's first turn"),
    ("mcp_overhead", "MCP tool calls"),
    ("checkpoints", "Checkpoints"),
    ("sandbox", "The command sandbox"),
    ("subagents", "Subagents"),
    ("code_nav", "code_nav through the editor"),
]


# The panel's benchmarks (editor_client/bench/, node): (name, title, script, what it needs). They
# print a `| measure | figure | goal | verdict |` table; run when what they need is here.
PANEL = [
    ("transcript", "The chat panel in Chromium", "transcript.mjs", ("chromium", "compiled")),
    ("vscode", "The panel in a real VS Code", "vscode.mjs", ("chromium", "compiled", "vsix", "code-server")),
]
EDITOR_CLIENT = BENCH.parent / "editor_client"


def panel_missing(needs: tuple[str, ...]) -> str | None:
    """What a panel benchmark needs that is not here (said in the table), or None."""
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    checks = {
        "chromium": (Path(chromium).exists(), f"no Chromium at {chromium} (apt-get install chromium)"),
        "compiled": (
            (EDITOR_CLIENT / "out" / "core" / "session.js").exists() and (EDITOR_CLIENT / "dist").exists(),
            "the extension is not compiled (cd editor_client && npm ci && npm run compile)",
        ),
        "vsix": ((EDITOR_CLIENT / "cody-lsp.vsix").exists(), "no packaged .vsix (cd editor_client && npm run package)"),
        "code-server": (
            bool(os.environ.get("CODY_CODE_SERVER_DIR")),
            "no code-server (CODY_CODE_SERVER_DIR=$(bash editor_client/e2e/install-code-server.sh))",
        ),
    }
    missing = [reason for need in needs for ok, reason in [checks[need]] if not ok]
    return "; ".join(missing) or None


def run_panel(script: str, timeout: float) -> tuple[dict | None, float, str]:
    """A panel benchmark, its printed table read as rows (RESULTS.md is written here, not by it)."""
    env = dict(os.environ, CODY_PYTHON=os.environ.get("CODY_PYTHON", PY))
    t0 = time.perf_counter()
    cmd = ["node", str(EDITOR_CLIENT / "bench" / script), "--no-write"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=EDITOR_CLIENT, env=env)
    elapsed = time.perf_counter() - t0
    sys.stdout.write(proc.stdout)
    header = "| measure | figure | goal | verdict |"
    if proc.returncode != 0 or header not in proc.stdout:
        return None, elapsed, (proc.stderr.strip().splitlines() or ["(no error output)"])[-1]
    table = proc.stdout[proc.stdout.rindex("####") :] if "####" in proc.stdout else proc.stdout
    rows = []
    for line in table[table.index(header) :].splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4:
            break
        what, figure, goal, verdict = cells
        has_goal = goal not in ("", "—", "-")  # "—": a figure shown beside the goals, not one
        rows.append({"what": what, "figure": figure, "goal": goal, "met": verdict == "met" if has_goal else None})
    return {"rows": rows, "table": table.strip() + "\n"}, elapsed, ""


def markers(block: str) -> tuple[str, str]:
    return f"<!-- {block}:begin -->", f"<!-- {block}:end -->"


def cpu_busy(seconds: float = 0.5) -> float:
    """Fraction of all CPUs busy over `seconds`, from /proc/stat."""

    def snapshot() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields), idle

    try:
        total0, idle0 = snapshot()
        time.sleep(seconds)
        total1, idle1 = snapshot()
    except (OSError, ValueError, IndexError):
        return float("nan")
    return 1 - (idle1 - idle0) / max(total1 - total0, 1)


def wait_quiet(limit: float, threshold: float = 0.15) -> float:
    """Wait (at most `limit` seconds) for the CPUs to be mostly idle; returns the busy fraction."""
    deadline = time.monotonic() + limit
    busy = cpu_busy()
    while busy > threshold and time.monotonic() < deadline:
        busy = cpu_busy(1.0)
    return busy


def run_script(name: str, smoke: bool, out_dir: Path, timeout: float) -> tuple[dict | None, float, str]:
    json_path = out_dir / f"{name}.json"
    cmd = [PY, str(BENCH / f"{name}.py"), "--json", str(json_path)] + (["--smoke"] if smoke else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    elapsed = time.perf_counter() - t0
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0 or not json_path.exists():
        return None, elapsed, (proc.stderr.strip().splitlines() or ["(no error output)"])[-1]
    return json.loads(json_path.read_text()), elapsed, ""


def summary(results: list[tuple[str, str, dict | None, float, str, float]], total: float, m: dict) -> str:
    server = os.environ.get("CODY_BENCH_SERVER")
    lines = [f"Machine: {machine_line(m)}", ""]
    if server:
        lines += [f"Server command: `{server}` (CODY_CANDIDATES={os.environ.get('CODY_CANDIDATES', 'default')})", ""]
    lines += [
        f"All scripts ran one after the other in {total:.0f} s.",
        "",
        "| script | goal measure | figure | goal | verdict | CPUs busy before it | script time |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, title, data, elapsed, error, busy in results:
        where = f"`editor_client/bench/{name}.mjs`" if name in {p[0] for p in PANEL} else f"`bench/{name}.py`"
        if data is None and error.startswith("not run here"):
            lines.append(f"| {title} ({where}) | {error} |  |  | not run |  |  |")
            continue
        if data is None:
            lines.append(f"| {title} ({where}) | failed: {error} |  |  | NOT met | {busy:.0%} | {elapsed:.0f} s |")
            continue
        goals = [r for r in data["rows"] if r["goal"]]
        for i, row in enumerate(goals):
            verdict = "met" if row["met"] else "NOT met"
            head = f"{title} ({where})" if i == 0 else ""
            tail = (f"{busy:.0%} | {elapsed:.0f} s") if i == 0 else " | "
            lines.append(f"| {head} | {row['what']} | {row['figure']} | {row['goal']} | {verdict} | {tail} |")
    lines += ["", "The tables of each script follow (every figure of a table comes from the same run).", ""]
    for name, title, data, *_ in results:
        if data is not None:
            lines.append(data["table"].replace("### ", "#### ", 1))
    return "\n".join(lines)


def write_results(path: Path, block: str, name: str = "results") -> None:
    """Replace the generated block `name` of RESULTS.md, keeping everything else."""
    begin, end = markers(name)
    generated = f"{begin}\n{block}\n{end}"
    text = (
        path.read_text()
        if path.exists()
        else ("# Benchmark results\n\nWritten by `python bench/run_all.py`; see bench/README.md.\n")
    )
    if begin in text and end in text:
        head, _, rest = text.partition(begin)
        _, _, tail = rest.partition(end)
        path.write_text(head + generated + tail)
        return
    title = (
        "## Latest run"
        if name == "results"
        else "## The same benchmarks against another server command (CODY_BENCH_SERVER)"
    )
    path.write_text(text.rstrip("\n") + f"\n\n{title}\n\n{generated}\n")


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated script names")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each script, wait up to SECONDS for the CPUs to be idle",
    )
    parser.add_argument("--results", default=str(BENCH / "RESULTS.md"), help="file to write (full runs only)")
    args = parser.parse_args()
    if args.smoke:  # the smoke runs are tests (marked `bench`, out of the default run): pytest runs them
        tests = [PY, "-m", "pytest", "-q", "-m", "bench", str(BENCH.parent / "tests" / "test_bench_smoke.py")]
        if args.only:
            tests += ["-k", " or ".join(args.only.split(","))]
        sys.exit(subprocess.call(tests, cwd=BENCH.parent))
    chosen = [s for s in SCRIPTS if not args.only or s[0] in args.only.split(",")]
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cody-bench-all-") as tmp:
        for name, title in chosen:
            busy = wait_quiet(args.wait_quiet) if args.wait_quiet else cpu_busy()
            data, elapsed, error = run_script(name, args.smoke, Path(tmp), timeout=600)
            if error:
                print(f"{name}: FAILED: {error}", file=sys.stderr)
            results.append((name, title, data, elapsed, error, busy))
        for name, title, script, needs in PANEL:
            if args.only and name not in args.only.split(","):
                continue
            missing = panel_missing(needs)
            if missing is not None:
                results.append((name, title, None, 0.0, f"not run here: {missing}", float("nan")))
                continue
            busy = wait_quiet(args.wait_quiet) if args.wait_quiet else cpu_busy()
            data, elapsed, error = run_panel(script, timeout=1800)
            if error:
                print(f"{name}: FAILED: {error}", file=sys.stderr)
            results.append((name, title, data, elapsed, error, busy))
    total = time.perf_counter() - t0
    block = summary(results, total, machine())
    print(block)
    if args.json:
        Path(args.json).write_text(json.dumps([r[2] for r in results], indent=2))
    if not args.smoke and not args.only:
        # A run of another server command (CODY_BENCH_SERVER: a proposed change applied as
        # a patch, an older commit) goes to its own block, next to the run of the server as it is.
        write_results(Path(args.results), block, "candidates" if os.environ.get("CODY_BENCH_SERVER") else "results")
        print(f"wrote {args.results}")
    if any(r[2] is None and not r[4].startswith("not run here") for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
