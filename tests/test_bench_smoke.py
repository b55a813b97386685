"""Smoke run of every benchmark with tiny sizes: each works and prints its table.

Times are never asserted (they mean nothing at these sizes, and less on a busy CI
machine); bench/run_all.py runs the real sizes by hand. The smoke runs are marked `bench`:
not in the default run (they take minutes of both cores); `python bench/run_all.py --smoke`
runs them (`pytest -m bench tests/test_bench_smoke.py`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cody_lsp import landlock

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = [
    "cold_start",
    "cli_start",
    "stream_overhead",
    "chunk_latency",
    "notification_rate",
    "tool_output",
    "sessions_at_scale",
    "concurrency",
    "context_growth",
    "steering",
    "document_sync",
    "mcp_overhead",
    "checkpoints",
    "sandbox",
    "soak",
    "acp_face",
    "light_start",
    "subagents",
    "code_nav",
    "acp_first_turn",
]
TABLE_HEADER = "| measure | figure | goal | verdict |"


@pytest.mark.bench
@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", SCRIPTS)
def test_bench_script_runs_with_tiny_sizes(name: str, tmp_path: Path) -> None:
    if name == "sandbox" and not landlock.support().available:
        pytest.skip(f"no command sandbox here: {landlock.support().reason}")
    proc = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--smoke", "--json", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=80,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert TABLE_HEADER in proc.stdout, proc.stdout
    assert "Machine: " in proc.stdout
    assert (tmp_path / "r.json").exists()


def test_run_all_keeps_the_hand_written_analysis(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    results = tmp_path / "RESULTS.md"
    run_all.write_results(results, "first run")
    assert "first run" in results.read_text()
    results.write_text(results.read_text() + "\n## Analysis\n\nwhat limits it\n")
    run_all.write_results(results, "second run")
    text = results.read_text()
    assert "second run" in text and "first run" not in text and "what limits it" in text
