"""Terminal rendering of a run's chunks, shared by `chat`, `run` and `demo`.

Text streams as it arrives; thinking is shown dimmed; tool calls and results
take one compact line each (a command's output a few more). A `retry` chunk
withdraws what the failed attempt showed since its model step began: erased
from the screen when the terminal allows it, otherwise marked as discarded, so
the final answer is shown once.

Only a terminal gets wrapped and clipped lines. Output that is not a terminal
(a file, a pipe) is never wrapped or cut: ids, messages and reasons stay whole.
A terminal that can move the cursor gets the answer as Markdown, each block
rendered once it is complete, the block still streaming shown below (live.py).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.control import Control, ControlType
from rich.markup import escape
from rich.text import Text

from .live import LiveArea, MarkdownBlocks, markdown, spacing

_TOKENS = re.compile(r"\n|[^\S\n]+|\S+")

TOOL_MARK = "●"
RESULT_MARK = "⎿"
MAX_OUTPUT_LINES = 8


def make_console(**kwargs: Any) -> Console:
    """The console of the client commands: no emoji codes, no highlighting of plain text;
    no wrapping when it is not a terminal."""
    kwargs.setdefault("highlight", False)
    kwargs.setdefault("emoji", False)
    console = Console(**kwargs)
    console.soft_wrap = not console.is_terminal
    return console


def print_line(console: Console, markup: str | Text) -> None:
    """One line: clipped with an ellipsis on a terminal, whole anywhere else."""
    if console.is_terminal:
        console.print(markup, no_wrap=True, overflow="ellipsis", soft_wrap=False)
    else:
        console.print(markup, soft_wrap=True)


def print_table(
    console: Console, headers: list[str], rows: list[list[str]], *, bold_rows: frozenset[int] = frozenset()
) -> None:
    """Columns of text. On a terminal the second column (a title) is clipped to fit;
    elsewhere every cell is printed whole, the columns aligned with spaces."""
    if console.is_terminal:
        from rich.table import Table

        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for i, header in enumerate(headers):
            if i == 1:
                table.add_column(header, overflow="ellipsis", no_wrap=True, ratio=1)
            else:
                table.add_column(header, no_wrap=True, justify="right" if header == "msgs" else "left")
        for i, row in enumerate(rows):
            table.add_row(*[escape(cell) for cell in row], style="bold" if i in bold_rows else None)
        console.print(table)
        return
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    for line in [headers, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=True)]
        console.print(Text("  ".join(cells).rstrip()), soft_wrap=True)


def _clip(text: str, width: int | None) -> str:
    """`text` on one line, cut to `width` cells (None: not cut)."""
    text = " ".join(text.split()) if "\n" in text else text
    if width is None:
        return text
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _count_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def summarize_args(tool: str, args: dict[str, Any]) -> str:
    """A short, readable form of a tool call's arguments."""
    if not isinstance(args, dict):
        return ""
    if tool == "run_command":
        return str(args.get("command", ""))
    if tool == "write_file":
        content = args.get("content")
        lines = _count_lines(content) if isinstance(content, str) else 0
        return f"{args.get('path', '')} ({lines} line{'s' if lines != 1 else ''})"
    if tool == "read_file":
        path = str(args.get("path", ""))
        start, end = args.get("start_line"), args.get("end_line")
        if start or end:
            path += f":{start or 1}-{end or ''}"
        return path
    if tool == "edit_file":
        old, new = args.get("old_string"), args.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            return f"{args.get('path', '')} (−{_count_lines(old)} +{_count_lines(new)} lines)"
        return str(args.get("path", ""))
    if tool == "list_dir":
        return str(args.get("path", "."))
    if tool in ("grep", "glob"):
        where = args.get("path")
        return f"{args.get('pattern', '')!s}" + (f" in {where}" if where else "")
    if set(args) == {"raw"}:
        return str(args["raw"])
    return json.dumps(args, ensure_ascii=False)


def summarize_result(tool: str, ok: bool, content: str) -> tuple[str, list[str]]:
    """(one line, extra lines) describing a tool result."""
    lines = content.splitlines() or [""]
    if tool == "run_command":
        head, body = lines[0], [line for line in lines[1:]]
        if body == ["(no output)"]:
            body = []
        if len(body) > MAX_OUTPUT_LINES:
            more = len(body) - MAX_OUTPUT_LINES
            body = body[:MAX_OUTPUT_LINES] + [f"… {more} more line{'s' if more != 1 else ''}"]
        return head, body
    if tool == "read_file" and ok:
        count = sum(1 for line in lines if "\t" in line)
        return f"read {count} line{'s' if count != 1 else ''}", []
    if tool in ("grep", "glob", "list_dir") and ok and len(lines) > 1:
        return f"{len(lines)} results", []
    return lines[0], ([f"… {len(lines) - 1} more lines"] if len(lines) > 1 and not ok else [])


class ChunkRenderer:
    """Renders the chunks of one run after another on a rich Console."""

    def __init__(
        self, console: Console, *, show_usage: bool = True, wrap: bool | None = None, rich_text: bool | None = None
    ):
        self.console = console
        self.show_usage = show_usage
        # Markdown, and the live area at the bottom (live.py): a terminal that can move the cursor.
        self.rich_text = console.is_terminal and not console.is_dumb_terminal if rich_text is None else rich_text
        self.live = LiveArea(console) if self.rich_text else None
        self._blocks = MarkdownBlocks()
        self._blocks_shown = 0  # blocks printed of the current text (a blank line goes between them)
        self._padded = False  # the last block printed ended with a blank line of its own
        self._thinking = ""  # the thinking line in progress (rich text)
        # Word-wrap streamed text on a terminal (a partial word waits for its end);
        # elsewhere (a file, a pipe) text is written as it comes, and no line is clipped.
        self.wrap = console.is_terminal if wrap is None else wrap
        self.clip = console.is_terminal
        # toolCallId → why this client refused the call (shown instead of the tool's result).
        self.refused: dict[str, str] = {}
        self._column = 0  # cells written since the last newline
        self._mode: str | None = None  # "text" | "thinking" | None (at a line start)
        self._style = ""
        self._pending = ""  # the partial word not shown yet (wrap mode)
        self._step: list[str] = []  # what this model step printed (withdrawn on retry)

    # ----------------------------------------------------------------- output

    @property
    def width(self) -> int:
        return max(20, self.console.width)

    def _stream(self, text: str) -> None:
        """Stream model text in the current style."""
        text = text.replace("\r\n", "\n").replace("\r", "").replace("\t", "    ")
        if not self.wrap:
            self._emit(text)
            return
        self._pending += text
        cut = max(self._pending.rfind(" "), self._pending.rfind("\n"))
        if cut >= 0:
            ready, self._pending = self._pending[: cut + 1], self._pending[cut + 1 :]
            self._emit(self._wrapped(ready))

    def _flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, ""
            self._emit(self._wrapped(pending))

    def _row_column(self) -> int:
        """The cursor's column on its screen row (a long line wraps)."""
        width, column = self.width, self._column
        if column <= width:
            return column
        return column % width or width

    def _wrapped(self, text: str) -> str:
        """`text` with line breaks where a word would not fit on the line."""
        width, column, out = self.width, self._row_column(), []
        for token in _TOKENS.findall(text):
            if token == "\n":
                out.append(token)
                column = 0
                continue
            cells = Text(token).cell_len
            if token.isspace():
                if column + cells > width:
                    out.append("\n")
                    column = 0
                else:
                    out.append(token)
                    column += cells
                continue
            if column and column + cells > width:
                out.append("\n")
                column = 0
            out.append(token)
            column += cells
            if column > width:
                column = column % width or width
        return "".join(out)

    def _emit(self, text: str) -> None:
        if not text:
            return
        self.console.print(Text(text, style=self._style), end="", soft_wrap=True)
        self._step.append(text)
        if "\n" in text:
            self._column = Text(text.rsplit("\n", 1)[-1]).cell_len
        else:
            self._column += Text(text).cell_len

    def line_break(self) -> None:
        """Room for a line of the caller's (a notice, a question): the current line ended if
        something is on it. With rich text the notice goes above the live area, and the text
        still streaming stays where it is."""
        if self.live is None:
            self._end_text()

    def _end_text(self) -> None:
        """The text or thinking being shown has ended (a tool call, the run's end): its line
        ended; with rich text, what still streamed printed (the last Markdown block)."""
        if self.live is not None:
            if self._mode == "text":
                block = self._blocks.finish()
                if block is not None:
                    self._print_block(block)
            elif self._mode == "thinking" and self._thinking:
                self._print_thinking(self._thinking)
            self._thinking = ""
            self.live.show(tail="")
            self._mode = None
            return
        self._flush()
        if self._column:
            self.console.print()
            if self._step:
                self._step.append("\n")
        self._mode = None
        self._column = 0

    def _room(self, used: int) -> int | None:
        """Cells left on a line after `used` (None when lines are not clipped)."""
        return max(10, self.width - used) if self.clip else None

    def _line(self, markup: str) -> None:
        self._end_text()
        print_line(self.console, markup)

    def _new_step(self) -> None:
        self._step = []

    def close_live(self) -> None:
        """The run is over: the live area leaves the screen (what was typed stays with the typist)."""
        self._end_text()
        if self.live is not None:
            self.live.close()

    def _print_block(self, block: str) -> None:
        top, bottom = spacing(block)
        if self._blocks_shown and not top and not self._padded:
            self.console.print()
        self.console.print(markdown(block))
        self._blocks_shown += 1
        self._padded = bottom
        self._step.append(block + "\n")

    def _print_thinking(self, line: str) -> None:
        self.console.print(Text(line, style="dim italic"))
        self._step.append(line + "\n")

    def _rich_thinking(self, content: str) -> None:
        if self._mode != "thinking":
            self._end_text()
            self._mode = "thinking"
            self._thinking = "✻ "
        *lines, self._thinking = (self._thinking + content).split("\n")
        for line in lines:
            self._print_thinking(line)
        assert self.live is not None
        self.live.show(tail=self._thinking, style="dim italic")

    def _rich_text_delta(self, content: str) -> None:
        if self._mode != "text":
            self._end_text()
            self._mode = "text"
            self._blocks_shown = 0
        for block in self._blocks.feed(content.replace("\r\n", "\n").replace("\r", "")):
            self._print_block(block)
        assert self.live is not None
        self.live.show(tail=self._blocks.pending(), style="")

    # ----------------------------------------------------------------- chunks

    def handle(self, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type")
        method = getattr(self, f"_on_{kind}", None)
        if method is not None:
            method(chunk)

    def _on_session_start(self, chunk: dict[str, Any]) -> None:
        self._end_text()
        self._new_step()

    def _on_thinking(self, chunk: dict[str, Any]) -> None:
        if self.live is not None:
            self._rich_thinking(str(chunk.get("content", "")))
            return
        if self._mode != "thinking":
            self._end_text()
            self._style = "dim"
            self._emit("✻ ")
            self._mode = "thinking"
            self._style = "dim italic"
        self._stream(str(chunk.get("content", "")))

    def _on_text_delta(self, chunk: dict[str, Any]) -> None:
        if self.live is not None:
            self._rich_text_delta(str(chunk.get("content", "")))
            return
        if self._mode != "text":
            self._end_text()
            self._mode = "text"
            self._style = ""
        self._stream(str(chunk.get("content", "")))

    def _on_tool_call(self, chunk: dict[str, Any]) -> None:
        tool = str(chunk.get("toolName", "?"))
        summary = summarize_args(tool, chunk.get("args") or {})
        room = self._room(len(tool) + 4)
        self._line(f"[bold cyan]{TOOL_MARK}[/] [bold]{escape(tool)}[/] [dim]{escape(_clip(summary, room))}[/]")

    def _on_tool_result(self, chunk: dict[str, Any]) -> None:
        tool = str(chunk.get("toolName", "?"))
        refusal = self.refused.pop(str(chunk.get("toolCallId")), None)
        if refusal is not None:
            self._line(f"  [dim]{RESULT_MARK}[/] [yellow]refused: {escape(refusal)}[/]")
            self._new_step()
            return
        ok = bool(chunk.get("ok"))
        head, more = summarize_result(tool, ok, str(chunk.get("content", "")))
        style = "dim" if ok else "red"
        mark = "" if ok else "✗ "
        self._line(f"  [dim]{RESULT_MARK}[/] [{style}]{mark}{escape(_clip(head, self._room(6 + len(mark))))}[/]")
        for line in more:
            print_line(self.console, f"    [dim]{escape(_clip(line, self._room(6)))}[/]")
        nested = chunk.get("instructions")
        if isinstance(nested, list) and nested:  # nested instruction files given with this result
            print_line(self.console, f"    [dim]+ rules {escape(', '.join(map(str, nested)))}[/]")
        self._new_step()

    def _on_retry(self, chunk: dict[str, Any]) -> None:
        self._pending = ""  # never shown: nothing to withdraw
        withdrawn = "".join(self._step)
        self._mode = None
        if self.live is not None:  # what still streamed is dropped; what was printed is marked
            self._blocks.discard()
            self._thinking = ""
            self.live.show(tail="")
        if withdrawn.strip():
            if self.live is not None or not self._erase(withdrawn):
                self._end_text()
                self.console.print("[yellow]↻ the text above was from a failed attempt and is withdrawn[/]")
        elif self._column:
            self._end_text()
        self._column = 0
        delay = chunk.get("delayMs", 0) / 1000
        print_line(
            self.console,
            f"[yellow]↻ retrying in {delay:.1f}s (attempt {chunk.get('retryAttempt')} of "
            f"{chunk.get('retryMaxAttempts')}):[/] [dim]{escape(_clip(str(chunk.get('reason', '')), None))}[/]",
        )
        self._new_step()

    def _on_done(self, chunk: dict[str, Any]) -> None:
        self._end_text()
        if self.show_usage:
            usage = chunk.get("usage") or {}
            total = usage.get("totalTokens")
            if total:
                self.console.print(f"[dim]✓ done · {total:,} tokens[/]")

    def _on_cancelled(self, chunk: dict[str, Any]) -> None:
        self._line("[yellow]⏹ cancelled[/]")

    def _on_circuit_breaker(self, chunk: dict[str, Any]) -> None:
        self._line(
            f"[red]⚠ stopped by a safety limit ({escape(str(chunk.get('limit')))}):[/] "
            f"{escape(str(chunk.get('reason')))} [dim]· {chunk.get('steps')} steps, "
            f"{chunk.get('totalTokens', 0):,} tokens[/]"
        )

    def _on_error(self, chunk: dict[str, Any]) -> None:
        self._end_text()
        self.console.print(f"[red]✗ error ({escape(str(chunk.get('code')))}):[/] {escape(str(chunk.get('message')))}")

    # ----------------------------------------------------------------- retry

    def _erase(self, withdrawn: str) -> bool:
        """Erase the withdrawn text from the screen; False if that is not possible."""
        console = self.console
        if not console.is_terminal or console.is_dumb_terminal:
            return False
        width = self.width
        lines = withdrawn.split("\n")
        up = sum(max(1, math.ceil(Text(line).cell_len / width)) for line in lines[:-1])
        last = Text(lines[-1]).cell_len
        up += max(0, math.ceil(last / width) - 1)
        if up >= console.height - 1:
            return False
        controls = [Control.move_to_column(0)]
        for _ in range(up):
            controls.append(Control((ControlType.ERASE_IN_LINE, 2), (ControlType.CURSOR_UP, 1)))
        controls.append(Control((ControlType.ERASE_IN_LINE, 2)))
        console.control(*controls)
        return True


def setup_cli_logging() -> None:
    """Client commands log to stderr, errors only unless CODY_LOG_LEVEL says otherwise."""
    level = os.environ.get("CODY_LOG_LEVEL", "ERROR").upper()
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, level, logging.ERROR), format="%(levelname)s %(name)s: %(message)s"
    )


def preflight(command: str, workspace: str | None, *, resuming: bool = False) -> Path | None:
    """What `chat` and `run` check before starting a server: the model settings and the
    folder (None: the current one). Says what is wrong on stderr and returns None, or
    returns the folder. `resuming` a session: its own model will do, CODY_MODEL may be unset
    (a session without one is reported by its run)."""
    from ..config import ModelConfig

    problem = ModelConfig.from_env().problem(model="the session's" if resuming else None)
    if problem is not None:
        print(f"cody-lsp {command}: {problem}", file=sys.stderr)
        return None
    return existing_folder(command, workspace)


def existing_folder(command: str, workspace: str | None) -> Path | None:
    """The folder given with -w (None: the current one), resolved; None, said on stderr,
    when it is not an existing folder."""
    folder = Path(workspace or ".").expanduser().resolve()
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        print(f"cody-lsp {command}: {folder} {what}", file=sys.stderr)
        return None
    return folder


def print_prompt_line(console: Console, prompt: str) -> None:
    """A user prompt as the chat shows it once sent."""
    console.print(Text.assemble(("› ", "bold green"), (prompt, "bold")), soft_wrap=True)
