"""Run every benchmark and write bench/RESULTS.md (the measured part of it).

    python bench/run_all.py            # all scripts, full sizes (< 3 minutes on 2 cores)
    python bench/run_all.py --smoke    # tiny sizes; does not touch RESULTS.md
    python bench/run_all.py --only cold_start,concurrency

RESULTS.md keeps whatever is written outside its generated blocks (the analysis
of unmet goals); the block between the two `results:` markers is replaced. With
CODY_BENCH_SERVER set (another server command: a proposed change, an older commit)
the run goes to the `candidates:` block instead.
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
    ("cold_start", "Cold start"),
    ("stream_overhead", "Stream overhead"),
    ("chunk_latency", "Chunk latency"),
    ("notification_rate", "Notification rate"),
    ("sessions_at_scale", "Sessions at scale"),
    ("concurrency", "Concurrency and memory"),
    ("context_growth", "Context growth"),
    ("steering", "Steering"),
    ("document_sync", "Document sync"),
    ("acp_face", "ACP face"),
    ("mcp_overhead", "MCP tool calls"),
    ("checkpoints", "Checkpoints"),
    ("sandbox", "The command sandbox"),
]


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
        if data is None:
            lines.append(
                f"| {title} (`bench/{name}.py`) | failed: {error} |  |  | NOT met | {busy:.0%} | {elapsed:.0f} s |"
            )
            continue
        goals = [r for r in data["rows"] if r["goal"]]
        for i, row in enumerate(goals):
            verdict = "met" if row["met"] else "NOT met"
            head = f"{title} (`bench/{name}.py`)" if i == 0 else ""
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
    if any(r[2] is None for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
