"""Event-loop lag sampling, for benchmarks; off unless CODY_LOOP_LAG_REPORT is set.

With ``CODY_LOOP_LAG_REPORT=/path/report.json`` in the environment, importing
this module (before the server's event loop is created) makes every event loop
created afterwards run a sampler task: it sleeps ``CODY_LOOP_LAG_INTERVAL_MS``
(default 10 ms) in a loop and records how much later than asked it woke up —
the time the loop was busy with other work. When the loop closes (the server's
normal shutdown: ``shutdown`` + ``exit``) the report is written as JSON:

    {"interval": 0.01, "count": N, "p50": s, "p99": s, "max": s, "mean": s,
     "samples": [[loop_time, lag, cpu], ...]}

``cpu`` is the CPU time the loop's thread used during that sample's interval
(``time.thread_time()``): a late wake-up with as much CPU used was the loop's own
work; one with little CPU used was waiting (for the GIL held by another thread of
the process, or for a core taken by other processes). ``loop_time`` is ``loop.time()`` (``time.monotonic()``, the clock of
``time.perf_counter()`` on Linux), so a benchmark can keep only the samples of
the window it measured.

What caused the lag: with ``CODY_LOOP_CALLBACK_MS=N`` set too, the report also lists
every callback that held the loop N ms or longer, as ``"callbacks": [[loop_time,
held, label], ...]`` (``loop_time`` when it started); ``label`` is, for a task's
step, the chain of coroutines where the task stopped (``a > b > c``, outermost
first), else the callback's name. It costs two clock reads per callback, so the
figures stay comparable. ``CODY_LOOP_SLOW_CALLBACK_MS`` instead puts the loop in
asyncio debug mode, which logs each such callback with its source line (debug mode
slows the loop down: not for the figures). Nothing here runs, and nothing is
imported beyond the standard library, when ``CODY_LOOP_LAG_REPORT`` is not set.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_REPORT = "CODY_LOOP_LAG_REPORT"
ENV_INTERVAL = "CODY_LOOP_LAG_INTERVAL_MS"
# Also put the loop in asyncio debug mode and log (logger "asyncio", WARNING) every
# callback or task step that held the loop longer than this: what causes the lag.
ENV_SLOW = "CODY_LOOP_SLOW_CALLBACK_MS"
# Also list every callback that held the loop at least this long (see the module docstring).
ENV_CALLBACKS = "CODY_LOOP_CALLBACK_MS"
MAX_SAMPLES = 200_000  # ~33 minutes at 10 ms; older samples are dropped
MAX_CALLBACKS = 200_000
CHAIN_DEPTH = 12


def _percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summarize(lags: list[float]) -> dict[str, float | int]:
    data = sorted(lags)
    return {
        "count": len(data),
        "p50": _percentile(data, 50),
        "p99": _percentile(data, 99),
        "max": data[-1] if data else math.nan,
        "mean": sum(data) / len(data) if data else math.nan,
    }


def callback_label(handle: asyncio.Handle) -> str:
    """What a callback that just ran was: for a task's step, the coroutines where the task
    stopped (outermost first); otherwise the callback's qualified name."""
    callback = getattr(handle, "_callback", None)
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        names: list[str] = []
        frame: Any = owner.get_coro()
        while frame is not None and len(names) < CHAIN_DEPTH:
            names.append(getattr(frame, "__qualname__", type(frame).__name__))
            if isinstance(frame, types.CoroutineType):
                frame = frame.cr_await
            elif isinstance(frame, types.GeneratorType):
                frame = frame.gi_yieldfrom
            elif isinstance(frame, types.AsyncGeneratorType):
                frame = frame.ag_await
            else:
                break
        return "task " + " > ".join(names)
    name = getattr(callback, "__qualname__", None)
    if name is None:  # e.g. a functools.partial
        name = getattr(getattr(callback, "func", None), "__qualname__", None) or type(callback).__name__
    return str(name)


class CallbackTimer:
    """Times every callback of every event loop of the process (it wraps `asyncio.Handle._run`,
    a diagnostic only) and keeps those that held their loop `threshold` seconds or longer."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.records: list[tuple[float, float, str]] = []
        self._original: Callable[[asyncio.Handle], None] | None = None

    def install(self) -> None:
        if self._original is not None:
            return
        original = self._original = asyncio.Handle._run
        records, threshold, clock = self.records, self.threshold, time.monotonic

        def timed_run(handle: asyncio.Handle) -> None:
            start = clock()
            original(handle)
            held = clock() - start
            if held >= threshold:
                records.append((start, held, callback_label(handle)))
                if len(records) > MAX_CALLBACKS:
                    del records[: MAX_CALLBACKS // 10]

        asyncio.Handle._run = timed_run  # type: ignore[method-assign, assignment]

    def uninstall(self) -> None:
        if self._original is not None:
            asyncio.Handle._run = self._original  # type: ignore[method-assign, assignment]
            self._original = None


class LoopLagMonitor:
    def __init__(self, path: Path, interval: float, callbacks: CallbackTimer | None = None):
        self.path = path
        self.interval = interval
        self.callbacks = callbacks
        self.samples: list[tuple[float, float, float]] = []
        self._task: asyncio.Task | None = None
        self._written = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        slow = os.environ.get(ENV_SLOW)
        if slow:
            try:
                loop.slow_callback_duration = float(slow) / 1000
                loop.set_debug(True)
            except ValueError:
                pass
        self._task = loop.create_task(self._sample(loop))
        close = loop.close

        def close_and_report() -> None:
            self.write()
            close()

        loop.close = close_and_report  # type: ignore[method-assign]

    async def _sample(self, loop: asyncio.AbstractEventLoop) -> None:
        interval = self.interval
        samples = self.samples
        cpu_clock = time.thread_time
        while True:
            start = loop.time()
            cpu_start = cpu_clock()
            await asyncio.sleep(interval)
            now = loop.time()
            samples.append((now, max(now - start - interval, 0.0), cpu_clock() - cpu_start))
            if len(samples) > MAX_SAMPLES:
                del samples[: MAX_SAMPLES // 10]

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"interval": self.interval}
        out.update(summarize([lag for _, lag, _ in self.samples]))
        out["samples"] = [[round(t, 6), round(lag, 6), round(cpu, 6)] for t, lag, cpu in self.samples]
        if self.callbacks is not None:
            out["callback_threshold"] = self.callbacks.threshold
            out["callbacks"] = [[round(t, 6), round(held, 6), label] for t, held, label in self.callbacks.records]
        return out

    def write(self) -> None:
        if self._written:
            return
        self._written = True
        try:
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(self.report()))
            os.replace(tmp, self.path)
        except OSError:
            pass


def install(path: str | os.PathLike[str], interval: float = 0.01, callback_threshold: float | None = None) -> None:
    """Sample every event loop created from now on; report to `path` when it closes (with
    the callbacks that held the loop `callback_threshold` seconds or longer, if given)."""
    base = type(asyncio.get_event_loop_policy())
    callbacks = None
    if callback_threshold is not None:
        callbacks = CallbackTimer(callback_threshold)
        callbacks.install()

    class _SamplingPolicy(base):  # type: ignore[valid-type, misc]
        def new_event_loop(self) -> asyncio.AbstractEventLoop:
            loop = super().new_event_loop()
            monitor = LoopLagMonitor(Path(path), interval, callbacks)
            loop.call_soon(monitor.start, loop)
            return loop

    asyncio.set_event_loop_policy(_SamplingPolicy())


def _milliseconds(name: str) -> float | None:
    try:
        return float(os.environ[name]) / 1000
    except (KeyError, ValueError):
        return None


def _install_from_env() -> None:
    path = os.environ.get(ENV_REPORT)
    if not path:
        return
    interval = _milliseconds(ENV_INTERVAL) or 0.01
    install(path, max(interval, 0.001), _milliseconds(ENV_CALLBACKS))


_install_from_env()
