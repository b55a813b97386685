"""Concurrency and memory: 50 runs at once across 50 sessions, each with tool calls
(goals: event-loop lag p99 inside the server ≤ 20 ms; RSS idle ≤ 90 MB).

Each run is three model steps against the scripted provider (its own process):
`run_command` (a real `sh` process), then `read_file`, then an answer streamed at
a model's pace (ANSWER tokens, one every DELAY). All runs start together on 50
sessions spread over 10 workspace folders; three such rounds (on the same sessions)
give enough lag samples for a stable p99.

Event-loop lag is sampled inside the server by `cody_lsp/diagnostics.py` (a task
that sleeps 10 ms and records how late it wakes), which the server is started
with here (`python -c "import cody_lsp.testing.loop_lag; …cli.main()"`) until it
imports it itself; only the samples taken while the 50 runs were going count.
From outside, a client probe sends a no-op request (`cody/cancel` of an unknown
run) every PROBE seconds during the runs and times its round trip.
Memory is VmRSS / VmHWM of the server from /proc/PID/status: idle after start-up
(initialize done; no run yet, so no model client loaded), idle after one run, and the
peak while the runs went on.
"""

from __future__ import annotations

import asyncio
import bisect
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    MONITORED_SERVER,
    ProviderProcess,
    Row,
    arg_parser,
    cpu_seconds,
    lag_window,
    median,
    ms,
    percentile,
    proc_status,
    read_lag_report,
    report,
    server_env,
    server_pid,
    spawn_client,
    with_loop_monitor,
)

LAG_GOAL = 0.020
IDLE_GOAL_MB = 90.0
PROBE = 0.05
LAG_INTERVAL = 0.01


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


async def settle_rss(pid: int, seconds: float) -> int:
    """VmRSS once it stopped growing (imports in the background), waiting at most `seconds`."""
    deadline = time.perf_counter() + seconds
    last = proc_status(pid).get("VmRSS", 0)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.25)
        now = proc_status(pid).get("VmRSS", 0)
        if abs(now - last) < 256:
            return now
        last = now
    return last


async def main_async(args) -> None:
    n_runs = 5 if args.smoke else 50
    rounds = 1 if args.smoke else 3
    answer = 20 if args.smoke else 100
    delay = 0.01
    with tempfile.TemporaryDirectory(prefix="cody-bench-") as tmp:
        root = Path(tmp)
        folders = []
        for i in range(10):
            folder = root / f"ws{i}"
            folder.mkdir()
            (folder / "notes.txt").write_text("".join(f"line {j}: some notes\n" for j in range(40)))
            folders.append(folder)
        lag_path = root / "lag.json"
        async with ProviderProcess() as provider:
            await provider.agent_mode(command="echo bench && ls", path="notes.txt", answer_tokens=answer, delay=delay)
            env = with_loop_monitor(server_env(provider.base_url, root / "sessions.db"), lag_path)
            if args.callbacks is not None:
                env["CODY_LOOP_CALLBACK_MS"] = str(args.callbacks)
            client = await spawn_client(env, [folders[0]], MONITORED_SERVER)
            pid = server_pid(client)
            assert pid is not None
            try:
                idle_start = await settle_rss(pid, 5.0)
                warm = await client.run("warm up", workspace_folder=folders[0])
                assert warm.status == "done", warm
                idle_after_run = await settle_rss(pid, 2.0)
                sessions = [
                    await client.create_session(title=f"s{i}", workspace_folder=folders[i % 10]) for i in range(n_runs)
                ]
                await provider.clear()

                rss_samples: list[int] = []
                probe_rtts: list[float] = []
                windows: list[tuple[float, float]] = []
                results = []
                running = asyncio.Event()
                done = asyncio.Event()

                async def watch() -> None:
                    while not done.is_set():
                        await running.wait()
                        rss_samples.append(proc_status(pid).get("VmRSS", 0))
                        t0 = time.perf_counter()
                        await client.cancel(run_id="run_probe_that_does_not_exist")
                        probe_rtts.append(time.perf_counter() - t0)
                        try:
                            await asyncio.wait_for(done.wait(), PROBE)
                        except TimeoutError:
                            pass

                watcher = asyncio.ensure_future(watch())
                assert provider.proc is not None
                cpu_used = [0.0, 0.0, 0.0]
                for _ in range(rounds):
                    cpu0 = (cpu_seconds(pid), cpu_seconds(provider.proc.pid), cpu_seconds())
                    t_start = time.perf_counter()
                    running.set()
                    results += await asyncio.gather(
                        *(
                            client.run(f"task {i}: look around and report", session_id=s.id)
                            for i, s in enumerate(sessions)
                        )
                    )
                    running.clear()
                    t_end = time.perf_counter()
                    cpu1 = (cpu_seconds(pid), cpu_seconds(provider.proc.pid), cpu_seconds())
                    windows.append((t_start, t_end))
                    cpu_used = [u + b - a for u, a, b in zip(cpu_used, cpu0, cpu1, strict=False)]
                    await asyncio.sleep(0.3)  # let the server go idle between rounds
                done.set()
                running.set()
                await watcher
                status = proc_status(pid)
                stats = await provider.stats(times=False)
            finally:
                await client.close()
        report_data = read_lag_report(lag_path)
        lag_cpu = [sample for a, b in windows for sample in lag_window(report_data, a, b)]
        lag_samples = [s for s in (report_data or {}).get("samples", []) if any(a <= s[0] <= b for a, b in windows)]
    lag = [lag for lag, _ in lag_cpu]
    bad = [r for r in results if r.status != "done"]
    if bad:
        raise SystemExit(f"{len(bad)} of {n_runs * rounds} runs did not finish: {bad[0].status} {bad[0].error}")
    if stats["requests"] != 3 * n_runs * rounds:
        raise SystemExit(f"expected {3 * n_runs * rounds} model requests, the provider got {stats['requests']}")
    if not lag:
        raise SystemExit(f"no event-loop lag samples from the server (report {lag_path})")
    lag_p99 = percentile(lag, 99)
    # How much of the worst samples' time the loop's thread was running (its own work)
    # rather than waiting for the GIL (other threads) or for a core (other processes).
    worst = sorted(lag_cpu, reverse=True)[: max(1, len(lag_cpu) // 20)]

    def running_share(samples: list[tuple[float, float]]) -> float:
        return sum(min(cpu, LAG_INTERVAL + lag) for lag, cpu in samples) / sum(LAG_INTERVAL + lag for lag, _ in samples)

    busy, all_busy = running_share(worst), running_share(lag_cpu)
    loop_cpu = sum(cpu for _, cpu in lag_cpu) / rounds
    peak = max(max(rss_samples, default=0), status.get("VmHWM", 0))
    walls = [b - a for a, b in windows]
    server_cpu, provider_cpu, client_cpu = (used / sum(walls) * 100 for used in cpu_used)
    rows = [
        Row(
            f"{n_runs} runs at once (3 model steps, run_command + read_file, {answer}-token answers at "
            f"{delay * 1000:g} ms/token): wall time, median of {rounds} round{'s' if rounds > 1 else ''}",
            ms(median(walls)),
            note=f"{3 * n_runs} model requests, {2 * n_runs} tool calls a round; the same sessions each round",
        ),
        Row(
            "event-loop lag inside the server during the runs: p99",
            ms(lag_p99),
            f"≤ {LAG_GOAL * 1000:.0f} ms",
            lag_p99 <= LAG_GOAL,
            note=f"p50 {ms(percentile(lag, 50))}, max {ms(max(lag))}, {len(lag)} samples every 10 ms",
        ),
        Row(
            "share of time the loop's thread was running (not waiting for the GIL or a core): "
            "in the worst 5% of lag samples / overall",
            f"{busy * 100:.0f}% / {all_busy * 100:.0f}%",
        ),
        Row(
            "CPU time of the loop's thread per round (the work behind the lag; other load on the machine "
            "barely moves it)",
            ms(loop_cpu),
        ),
        Row(
            "CPU used during the runs, in % of one core (the machine has 2)",
            f"server {server_cpu:.0f}%, scripted provider {provider_cpu:.0f}%, bench client {client_cpu:.0f}%",
        ),
        Row(
            f"no-op request round trip from a client during the runs (every {PROBE * 1000:g} ms): p50 / p99",
            f"{ms(percentile(probe_rtts, 50))} / {ms(percentile(probe_rtts, 99))}",
        ),
        Row(
            "RSS idle after start-up (initialized; no run yet: the model client is not loaded)",
            mb(idle_start),
            f"≤ {IDLE_GOAL_MB:.0f} MB",
            idle_start / 1024 <= IDLE_GOAL_MB,
        ),
        Row(
            "RSS idle after one run",
            mb(idle_after_run),
            f"≤ {IDLE_GOAL_MB:.0f} MB",
            idle_after_run / 1024 <= IDLE_GOAL_MB,
        ),
        Row(f"RSS peak during the {n_runs} runs (VmHWM)", mb(peak)),
    ]
    details = []
    held = held_the_loop(report_data, lag_samples, LAG_INTERVAL) if args.callbacks is not None else []
    if held:
        details.append(
            f"What held the loop during the worst 5% of lag samples (callbacks of ≥ {args.callbacks:g} ms, "
            "a task's step by where the task stopped; ms per round): "
            + "; ".join(f"`{label}` {seconds / rounds * 1000:.0f}" for label, seconds in held[:8])
        )
    report(
        "concurrency",
        "Concurrency and memory",
        rows,
        args,
        details=details,
        extra={
            "lag": lag,
            "lag_cpu": [cpu for _, cpu in lag_cpu],
            "loop_cpu_per_round": loop_cpu,
            "lag_samples": lag_samples,  # [loop time (perf_counter clock), lag, loop-thread CPU]
            "held_the_loop": held,
            "worst_busy": busy,
            "probe": probe_rtts,
            "rss": rss_samples,
            "idle_start_kb": idle_start,
            "idle_after_run_kb": idle_after_run,
            "peak_kb": peak,
            "walls": walls,
            "windows": windows,
            "cpu_percent": {"server": server_cpu, "provider": provider_cpu, "client": client_cpu},
        },
    )


def short_label(label: str) -> str:
    """A callback's label without the run's outer frames and the awaited future."""
    parts = [p for p in label.removeprefix("task ").split(" > ") if p not in ("FutureIter", "Future")]
    keep = [p for p in parts if not p.startswith(("RunManager.", "Turn.run", "Turn._loop"))] or parts
    return ("task " if label.startswith("task ") else "") + " > ".join(keep[:4])


def held_the_loop(report_data: dict | None, samples: list, interval: float) -> list[tuple[str, float]]:
    """(label, seconds) of the callbacks that ran during the worst 5% of the lag samples, most first."""
    callbacks = sorted((report_data or {}).get("callbacks", []))
    worst = sorted(samples, key=lambda s: -s[1])[: max(1, len(samples) // 20)]
    starts = [c[0] for c in callbacks]
    held: dict[str, float] = {}
    for t, lag, _cpu in worst:
        begin = t - interval - lag
        i = max(bisect.bisect_left(starts, begin) - 1, 0)
        for start, duration, label in callbacks[i:]:
            if start >= t:
                break
            overlap = min(start + duration, t) - max(start, begin)
            if overlap > 0:
                key = short_label(label)
                held[key] = held.get(key, 0.0) + overlap
    return sorted(held.items(), key=lambda item: -item[1])


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--callbacks",
        type=float,
        metavar="MS",
        help="also say what held the loop in the worst lag samples (the server records callbacks of ≥ MS ms)",
    )
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
