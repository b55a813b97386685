"""The event-loop lag monitor (benchmarks only): its report, and what it says held the loop."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cody_lsp.testing.loop_lag import CallbackTimer, LoopLagMonitor, callback_label, summarize


@pytest.fixture
def timer() -> Iterator[CallbackTimer]:
    timer = CallbackTimer(threshold=0.02)
    timer.install()
    try:
        yield timer
    finally:
        timer.uninstall()


def block(seconds: float) -> None:
    time.sleep(seconds)  # holds the loop, as a slow callback does


async def inner() -> None:
    await asyncio.sleep(0)
    block(0.03)
    await asyncio.sleep(0.001)


async def outer() -> None:
    await inner()


def run_loop(monitor: LoopLagMonitor, main: object) -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.call_soon(monitor.start, loop)
        loop.run_until_complete(main)  # type: ignore[arg-type]
    finally:
        loop.close()


def test_the_report_has_the_lag_samples_and_the_callbacks_that_held_the_loop(tmp_path: Path, timer) -> None:
    report = tmp_path / "lag.json"
    monitor = LoopLagMonitor(report, 0.005, timer)

    async def main() -> None:
        await asyncio.sleep(0.02)
        asyncio.get_running_loop().call_soon(functools.partial(block, 0.03))
        await asyncio.sleep(0.01)
        await asyncio.create_task(outer())
        await asyncio.sleep(0.02)

    run_loop(monitor, main())
    data = json.loads(report.read_text())  # written when the loop closed
    assert data["count"] == len(data["samples"]) > 0 and data["interval"] == 0.005
    assert all(len(sample) == 3 for sample in data["samples"])
    assert data["callback_threshold"] == 0.02
    labels = [label for _, held, label in data["callbacks"] if held >= 0.03]
    assert "block" in labels  # a plain callback (here a partial) by its function's name
    # a task's step by where the task stopped, outermost coroutine first
    assert "task outer > inner > sleep" in [label.split(" > FutureIter")[0] for label in labels]
    started = [t for t, _, _ in data["callbacks"]]
    assert started == sorted(started) and all(s[0] >= started[0] - 1 for s in data["samples"])  # one clock


def test_nothing_is_timed_after_uninstall(tmp_path: Path) -> None:
    timer = CallbackTimer(threshold=0.0)
    timer.install()
    timer.uninstall()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert timer.records == []


def test_a_monitor_without_a_timer_reports_no_callbacks(tmp_path: Path) -> None:
    report = tmp_path / "lag.json"
    run_loop(LoopLagMonitor(report, 0.005), asyncio.sleep(0.03))
    data = json.loads(report.read_text())
    assert "callbacks" not in data and data["count"] >= 1


def test_label_of_a_callback_that_is_no_task() -> None:
    loop = asyncio.new_event_loop()
    try:
        handle = loop.call_soon(block, 0)
        assert callback_label(handle) == "block"
        handle.cancel()
    finally:
        loop.close()


def test_summarize() -> None:
    assert summarize([0.003, 0.001, 0.002]) == pytest.approx(
        {"count": 3, "p50": 0.002, "p99": 0.00298, "max": 0.003, "mean": 0.002}
    )
