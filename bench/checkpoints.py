"""Checkpoints: the checkpoint before a run, of a repository of 10,000 files (~100 MB) where 3 files
changed (goal: ≤ 50 ms, median), and the cold first one.

The engine as a run calls it (`Checkpoints.record`, in process: the shadow store's git commands,
the row in a real session store), on a git repository built once and cached under the temp dir
(10,000 files in 700 directories, 1–20 kB each, ~100 MB; a `.gitignore` and an ignored
`node_modules/` of 2,000 more files). Before each warm checkpoint 3 files are changed (appended
to, at random), with the folder's watch (shadow.py, watch.py: `git status` of the paths it saw
change), then without it (of every file); the cold one is the first checkpoint of a new store (every file read and stored
once), then the housekeeping the server runs once it is idle after a run (it packs the cold
checkpoint's loose objects). Between two checkpoints, as during the run between them, the store's
index takes in what the checkpoint wrote directly (shadow.py `_refresh`, in the background: timed
apart, from the checkpoint's end to its own; a real run waits for no part of it). Also: a checkpoint with nothing changed, listing the checkpoints (each with its changes,
the folder's state now included), restoring 3 files to the checkpoint before them, the store's size
on disk before and after housekeeping (prune, repack).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import Row, arg_parser, median, ms, percentile, report

from cody_lsp.protocol.wire import Usage
from cody_lsp.server.agent.history import user_entry
from cody_lsp.server.checkpoints import shadow as shadow_store
from cody_lsp.server.checkpoints.service import Checkpoints, open_checkpoints
from cody_lsp.server.core import stored
from cody_lsp.server.store.database import Store

GOAL = 0.050
UNWATCHED_ROUNDS = 11
MIB = 1 << 20


def build(folder: Path, files: int, dirs: int, ignored: int) -> int:
    """The repository (once per size): returns its bytes."""
    marker = folder / ".built"
    if marker.exists():
        return int(marker.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = random.Random(20)
    total = 0
    for i in range(files):
        d = folder / f"pkg{i % dirs:03d}" / f"mod{(i // dirs) % 3}"
        d.mkdir(parents=True, exist_ok=True)
        size = rng.randint(1000, 19000)
        lines, length = [], 0
        while length < size:  # source-like text: each line its own (compresses about as code does)
            line = f"    value_{length} = compute(argument_{rng.randrange(10**6)}, {rng.random():.6f})  # step {i}\n"
            lines.append(line)
            length += len(line)
        (d / f"file{i}.py").write_text("".join(lines)[:size])
        total += size
    (folder / ".gitignore").write_text("node_modules/\n*.log\n")
    for i in range(ignored):
        d = folder / "node_modules" / f"dep{i % 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"index{i}.js").write_text("module.exports = 1;\n" * 20)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b")
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)
    marker.write_text(str(total))
    return total


async def measure(folder: Path, state: Path, rounds: int) -> dict[str, list[float] | float]:
    store = await Store.open(state / "sessions.db")
    cp = await open_checkpoints(store, lambda: False)
    assert isinstance(cp, Checkpoints), cp
    session = await store.sessions.create("ses_bench", None, "m", str(folder))
    files = sorted(str(p.relative_to(folder)) for p in folder.glob("pkg*/mod*/*.py"))
    rng = random.Random(7)
    runs = 0

    refreshes: list[float] = []

    async def checkpoint() -> tuple[float, object]:
        nonlocal runs
        runs += 1
        await store.runs.start(f"run_{runs}", session.id)
        t0 = time.perf_counter()
        row = await cp.record(str(folder), session.id, f"run_{runs}", 10 * MIB)
        elapsed = time.perf_counter() - t0
        # The run: meanwhile the store's index takes in what the checkpoint wrote directly (in the
        # background; a run lasts at least one model request, longer than that).
        t0 = time.perf_counter()
        await cp.shadow(str(folder)).settled()
        refreshes.append(time.perf_counter() - t0)
        await stored.finish_run(store, session.id, f"run_{runs}", "done", [user_entry("p"), user_entry("a")], Usage())
        return elapsed, row

    try:
        cold, _ = await checkpoint()
        t0 = time.perf_counter()
        await cp.housekeep(None)  # as the server does, 2 s after the run ended
        first_housekeeping = time.perf_counter() - t0
        same = [(await checkpoint())[0] for _ in range(5)]
        refreshes.clear()
        watched = cp.shadow(str(folder))._watch
        assert watched is not None and watched.broken is None, "the folder's watch did not start"

        async def changed3() -> tuple[float, object]:
            for path in rng.sample(files, 3):
                with open(folder / path, "a") as f:
                    f.write(f"# changed {rng.random()}\n")
            return await checkpoint()

        warm = []
        rows = []
        for _ in range(rounds):
            elapsed, row = await changed3()
            warm.append(elapsed)
            rows.append(row)
        refresh = refreshes[:rounds]
        # Without the watch (no inotify, a file system not watched, or a new process's first
        # checkpoint): `git status` of every file.
        shadow_store.WATCH = False
        watched.close()
        unwatched = []
        for _ in range(UNWATCHED_ROUNDS):
            elapsed, row = await changed3()
            unwatched.append(elapsed)
            rows.append(row)
        t0 = time.perf_counter()
        listing = await cp.listing(session.id, str(folder), 10 * MIB)
        list_time = time.perf_counter() - t0
        assert len(listing) == 1 + 5 + rounds + UNWATCHED_ROUNDS
        t0 = time.perf_counter()
        restored = await cp.restore(rows[-1], session.id, "files", 10 * MIB)
        restore_time = time.perf_counter() - t0
        assert len(restored.files) == 0  # nothing changed since the last checkpoint
        t0 = time.perf_counter()
        restored = await cp.restore(rows[-2], session.id, "files", 10 * MIB)
        restore3 = time.perf_counter() - t0
        assert 1 <= len(restored.files) <= 3, restored.files
        shadow = cp.shadow(str(folder))
        before = await asyncio.to_thread(shadow.disk_bytes)
        t0 = time.perf_counter()
        await cp.housekeep(None)
        housekeeping = time.perf_counter() - t0
        after = await asyncio.to_thread(shadow.disk_bytes)
        return {
            "cold": cold,
            "first_housekeeping": first_housekeeping,
            "same": same,
            "warm": warm,
            "unwatched": unwatched,
            "refresh": refresh,
            "list": list_time,
            "restore_none": restore_time,
            "restore3": restore3,
            "store_before": before,
            "store_after": after,
            "housekeeping": housekeeping,
        }
    finally:
        await cp.close()
        await store.close()
        # Leave the cached repository as it was built (the benchmark changed some files).
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=folder, check=False, capture_output=True)


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0]).parse_args()
    files, dirs, ignored, rounds = (200, 20, 50, 5) if args.smoke else (10_000, 700, 2_000, 21)
    cache = Path(tempfile.gettempdir()) / "cody-bench-cache" / f"checkpoints-v2-{files}"
    size = build(cache, files, dirs, ignored)
    with tempfile.TemporaryDirectory(prefix="cody-bench-ckpt-") as tmp:
        r = asyncio.run(measure(cache, Path(tmp), rounds))
    warm = r["warm"]
    assert isinstance(warm, list) and isinstance(r["same"], list)
    rows = [
        Row(
            f"checkpoint of {files:,} files ({size / MIB:.0f} MB, a git repository) where 3 files changed: median of {rounds}",
            ms(median(warm)),
            "≤ 50 ms",
            median(warm) <= GOAL,
            f"p90 {ms(percentile(warm, 90))}, min {ms(min(warm))}",
        ),
        Row(
            f"… the same without the folder's watch (git status of every file): median of {UNWATCHED_ROUNDS}",
            ms(median(r["unwatched"])),  # type: ignore[arg-type]
            note="no inotify, or a new process's first checkpoint",
        ),
        Row(
            "… then, during the run, the store's index brought up to date in the background: median",
            ms(median(r["refresh"])),  # type: ignore[arg-type]
            note="not waited for by the run",
        ),
        Row(
            "the cold first checkpoint (a new store: every file read and stored once)",
            ms(float(r["cold"])),
            note=f"then housekeeping (pack) {ms(float(r['first_housekeeping']))}, in the background",
        ),
        Row("a checkpoint with nothing changed: median of 5", ms(median(r["same"]))),
        Row(
            f"listing the {1 + 5 + rounds + UNWATCHED_ROUNDS} checkpoints with their changes (the state now included)",
            ms(float(r["list"])),
        ),
        Row("restore of the latest checkpoint (nothing to change; the undo recorded)", ms(float(r["restore_none"]))),
        Row("restore of the checkpoint before the last 3 changes", ms(float(r["restore3"]))),
        Row(
            "the store on disk before → after housekeeping (prune, repack)",
            f"{float(r['store_before']) / MIB:.1f} MB → {float(r['store_after']) / MIB:.1f} MB",
            note=f"housekeeping {ms(float(r['housekeeping']))}",
        ),
    ]
    report("checkpoints", "Checkpoints", rows, args)


if __name__ == "__main__":
    main()
