"""The chat's status line: the terminal's bottom row, kept apart from everything else.

    gpt-4.1 · code · 12% of context · 35.2k tokens · $0.31 · ⠹ working 4s ↓ 1.2k · 2 queued

The model and the mode of the session; how full the model's context window is (the size of the
session's last request, as the endpoint counted it — `~` when estimated); the session's tokens
(and their cost, when `CODY_MODEL_PRICE` gives the model's price); while a run works, a spinner
with the time it has taken and the tokens it has written so far; the messages waiting in the
session's queue.

The row is set apart with a scroll region (DECSTBM): everything else — the answer as it
streams, the questions, the prompt and what is typed there — scrolls in the rows above it, so the
status line never mixes with either, and is redrawn in place (the cursor saved and restored
around it). prompt_toolkit and rich are told the screen is one row shorter. Only on a terminal
that moves the cursor, and not with `--no-status`; the region is reset on the way out.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between two frames of the spinner
SEPARATOR = " · "
PRICE_VARIABLE = "CODY_MODEL_PRICE"


def tokens_text(n: int) -> str:
    """1234 → 1.2k, 1234567 → 1.23M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.2f}M"


def percent(share: float) -> str:
    """0.0023 → 0.2%, 0.123 → 12%."""
    value = 100 * share
    if value < 0.1:
        return "<0.1%" if value > 0 else "0%"
    return f"{value:.1f}%" if value < 10 else f"{value:.0f}%"


def money(dollars: float) -> str:
    return f"${dollars:.4f}" if dollars < 0.1 else f"${dollars:.2f}"


def parse_price(raw: str | None) -> tuple[float, float] | None:
    """`CODY_MODEL_PRICE`: dollars per million input and output tokens, "2,8" or "2/8" (one
    number: the same for both); None when unset or not numbers."""
    if not raw or not raw.strip():
        return None
    parts = [p.strip().lstrip("$") for p in raw.replace("/", ",").split(",")]
    try:
        numbers = [float(p) for p in parts if p]
    except ValueError:
        return None
    if len(numbers) == 1:
        numbers *= 2
    if len(numbers) != 2 or any(n < 0 or n != n for n in numbers):
        return None
    return numbers[0], numbers[1]


def cost(input_tokens: int, output_tokens: int, price: tuple[float, float]) -> float:
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


@dataclass
class Status:
    """What the status line says."""

    model: str = ""
    mode: str = "code"
    context_tokens: int | None = None  # the session's last request (or the estimate of the next one)
    window: int | None = None
    estimated: bool = False  # context_tokens is an estimate
    input_tokens: int = 0  # the session's, so far
    output_tokens: int = 0
    price: tuple[float, float] | None = None
    working_since: float | None = None  # time.monotonic() when the run began
    run_output: int = 0  # tokens the run has written, counted by the endpoint
    run_streamed: int = 0  # characters streamed since that count
    queued: int = 0
    asking: bool = False  # the run waits for the user's answer to a question
    frame: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    def parts(self, short: bool) -> list[tuple[int, Text]]:
        """(priority, text) of each part, in order: the lowest priority is left out first."""
        out: list[tuple[int, Text]] = []
        if self.model:
            out.append((3, Text(self.model, style="bold")))
        out.append((4, Text(self.mode, style="cyan" if self.mode == "code" else "yellow")))
        if self.context_tokens is not None and self.window:
            share = self.context_tokens / self.window
            mark = "~" if self.estimated else ""
            style = "red" if share >= 0.9 else "yellow" if share >= 0.7 else ""
            text = f"{mark}{percent(share)} ctx" if short else f"{mark}{percent(share)} of context"
            out.append((5, Text(text, style=style)))
        total = self.input_tokens + self.output_tokens
        if total:
            out.append((2, Text(f"{tokens_text(total)}{'' if short else ' tokens'}")))
            if self.price is not None:
                out.append((1, Text(money(cost(self.input_tokens, self.output_tokens, self.price)))))
        if self.working_since is not None and self.asking:
            out.append((9, Text("⏸ " + ("waiting" if short else "waiting for your answer"), style="bold yellow")))
        elif self.working_since is not None:
            elapsed = time.monotonic() - self.working_since
            written = self.run_output + self.run_streamed // 4
            spin = SPINNER[self.frame % len(SPINNER)]
            seconds = f"{elapsed:.0f}s" if elapsed >= 10 else f"{elapsed:.1f}s"
            working = Text.assemble(
                (spin + " ", "bold magenta"),
                ("" if short else "working ", "magenta"),
                (seconds, "magenta"),
                (f" ↓ {tokens_text(written)}" if written else "", "magenta"),
            )
            out.append((9, working))
        if self.queued:
            out.append((8, Text(f"{self.queued} queued", style="bold")))
        return out

    def line(self, width: int) -> Text:
        """The status line fitted to `width` cells: the full words, else the short ones, then the
        parts of least priority left out."""
        for short in (False, True):
            parts = self.parts(short)
            text = _joined(parts)
            if text.cell_len <= width:
                return text
        while len(parts) > 1 and _joined(parts).cell_len > width:
            lowest = min(range(len(parts)), key=lambda i: parts[i][0])
            parts.pop(lowest)
        text = _joined(parts)
        text.truncate(width, overflow="ellipsis")
        return text


def _joined(parts: list[tuple[int, Text]]) -> Text:
    return Text(SEPARATOR, style="dim").join(text for _priority, text in parts)


class StatusLine:
    """The bottom row of the terminal (see the module docstring); `enabled` False: nothing at all."""

    def __init__(self, console: Console, enabled: bool):
        self.console = console
        self.enabled = enabled
        self.status = Status(price=parse_price(os.environ.get(PRICE_VARIABLE)))
        self.active = False
        self._rows = 0  # the terminal's height the region was set for
        self._columns = 0
        self._spinner: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ the region

    def _size(self) -> tuple[int, int]:
        try:
            size = os.get_terminal_size(self.console.file.fileno())
            return size.lines, size.columns
        except (OSError, ValueError, AttributeError):
            return 0, 0

    def _write(self, data: str) -> None:
        try:
            self.console.file.write(data)
            self.console.file.flush()
        except (OSError, ValueError):
            pass

    def start(self) -> None:
        """Keep the bottom row for the status line."""
        if not self.enabled or self.active:
            return
        rows, columns = self._size()
        if rows < 5 or columns < 20:
            return
        self.active = True
        self._reserve(rows, columns)
        self.redraw()

    def _reserve(self, rows: int, columns: int) -> None:
        self._rows, self._columns = rows, columns
        # A line of room at the bottom (scrolling the screen if the cursor is on the last row),
        # then the region above it; DECSTBM homes the cursor: it is saved and restored around it.
        self._write(f"\n\x1b[1A\x1b7\x1b[1;{rows - 1}r\x1b8")
        self.console.height = rows - 1

    def stop(self) -> None:
        """The whole screen scrolls again; the status row is cleared."""
        if self._spinner is not None:
            self._spinner.cancel()
            self._spinner = None
        if not self.active:
            return
        self.active = False
        self._write(f"\x1b7\x1b[r\x1b[{self._rows};1H\x1b[2K\x1b8")
        self.console.height = self._rows if self._rows else self.console.height

    def rows(self) -> int | None:
        """The rows the rest of the screen has (None: the whole terminal, the status line is off)."""
        return self._rows - 1 if self.active else None

    # ------------------------------------------------------------------ drawing

    def redraw(self) -> None:
        if not self.active:
            return
        rows, columns = self._size()
        if rows and (rows, columns) != (self._rows, self._columns):  # resized: the region again
            self._write("\x1b7\x1b[r\x1b8")
            if rows < 5 or columns < 20:
                self.active = False
                return
            self._reserve(rows, columns)
        line = self.status.line(max(10, self._columns - 1))
        rendered = self._ansi(line)  # always written: a prompt's redraw may have erased the row
        self._write(f"\x1b7\x1b[{self._rows};1H\x1b[2K{rendered}\x1b8")

    def _ansi(self, line: Text) -> str:
        out = io.StringIO()
        console = Console(
            file=out,
            force_terminal=True,
            color_system=self.console.color_system or None,  # type: ignore[arg-type]
            width=max(10, self._columns),
            no_color=self.console.no_color,
            highlight=False,
            emoji=False,
        )
        console.print(line, end="", no_wrap=True, overflow="ellipsis", soft_wrap=False)
        return out.getvalue()

    # ------------------------------------------------------------------ what it says

    def update(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self.status, name, value)
        self.redraw()

    def working(self, on: bool) -> None:
        """A run started (the spinner turns) or every run of the turn ended."""
        status = self.status
        if on and status.working_since is None:
            status.working_since = time.monotonic()
            status.run_output = status.run_streamed = 0
            if self.active and self._spinner is None:
                self._spinner = asyncio.ensure_future(self._spin())
        elif not on:
            status.working_since = None
            if self._spinner is not None:
                self._spinner.cancel()
                self._spinner = None
        self.redraw()

    async def _spin(self) -> None:
        try:
            while True:
                await asyncio.sleep(TICK)
                self.status.frame += 1
                self.redraw()
        except asyncio.CancelledError:
            pass

    def chunk(self, chunk: dict[str, Any]) -> None:
        """Follow a run's chunk: the mode and model it runs with, the tokens as they come."""
        status = self.status
        kind = chunk.get("type")
        if kind == "session_start":
            status.model = str(chunk.get("model") or status.model)
            status.mode = str(chunk.get("mode") or status.mode)
        elif kind in ("text_delta", "thinking"):
            status.run_streamed += len(str(chunk.get("content", "")))
            return  # drawn at the next tick
        elif kind == "usage":
            status.context_tokens = _int(chunk.get("contextTokens"), status.context_tokens)
            status.window = _int(chunk.get("contextWindow"), status.window)
            status.estimated = bool(chunk.get("estimated"))
            status.run_output = _int(chunk.get("outputTokens"), 0) or 0
            status.run_streamed = 0
        elif kind in ("done", "cancelled", "error", "circuit_breaker"):
            raw = chunk.get("usage")
            usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
            status.input_tokens += _int(usage.get("inputTokens"), 0) or 0
            status.output_tokens += _int(usage.get("outputTokens"), 0) or 0
        self.redraw()


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
