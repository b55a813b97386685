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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.control import Control, ControlType
from rich.markup import escape
from rich.text import Text

from .diffs import diff_lines
from .live import LiveArea, MarkdownBlocks, markdown, spacing

_TOKENS = re.compile(r"\n|[^\S\n]+|\S+")

TOOL_MARK = "●"
RESULT_MARK = "⎿"
MAX_OUTPUT_LINES = 8
MAX_FAILURE = 600  # characters of why a tool call failed, shown under its call
MAX_RESULT_LINES = 20  # of an MCP tool's (or any JSON) result shown under its line
RESULT_DIFF_LINES = 12  # of the diff of an edit nobody was asked about, shown under its result
LIVE_OUTPUT_LINES = 5  # of a command running now, at the bottom of the screen
BACKGROUND_LINES = 200  # of a background command's output printed during one run (then /jobs)
OUTPUT_MARK = "│"
MAX_PARTIAL = 10_000  # characters kept of an output line not ended yet
# What a terminal must not get from a command's output: escape sequences and control characters.
_CONTROLS = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?|[\x00-\x08\x0b-\x1f\x7f]")
_COMMAND_ID = re.compile(r"\bcmd_[0-9a-f]{6,}\b")
# A plan's steps: to do, being done, done.
PLAN_MARKS = {"pending": ("☐", ""), "in_progress": ("◐", "bold yellow"), "completed": ("☑", "green")}


def print_plan(console: Console, plan: dict[str, Any]) -> None:
    """The agent's plan (a `plan` chunk, or `session.plan` of cody/getSession): a line a step; on
    a terminal a long step wraps at its words, under its first word."""
    entries = plan.get("entries") if isinstance(plan, dict) else None
    if not isinstance(entries, list):
        return
    explanation = plan.get("explanation")
    heading = Text.assemble(("Plan", "bold"), (f"  {explanation}" if isinstance(explanation, str) else "", "dim"))
    print_line(console, heading)
    if not entries:
        print_line(console, Text("  (no steps)", style="dim"))
    steps = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        mark, style = PLAN_MARKS.get(str(entry.get("status")), ("?", ""))
        step = Text(str(entry.get("content", "")), style="dim" if entry.get("status") == "completed" else "")
        steps.append((Text(mark, style=style), step))
    if not console.is_terminal:
        for shown_mark, shown_step in steps:
            print_line(console, Text.assemble("  ", shown_mark, " ", shown_step))
        return
    from rich.table import Table

    grid = Table.grid(padding=(0, 1, 0, 0), pad_edge=False)
    grid.add_column(no_wrap=True, width=3, justify="right")
    grid.add_column(ratio=1, overflow="fold")
    for shown_mark, shown_step in steps:
        grid.add_row(shown_mark, shown_step)
    console.print(grid)


def print_hanging(console: Console, lead: Text, body: Text) -> None:
    """`lead` then `body`, whose long lines wrap at words under its start (on a terminal; elsewhere
    one line, whole)."""
    if not console.is_terminal:
        print_line(console, Text.assemble(lead, body))
        return
    from rich.table import Table

    grid = Table.grid(padding=0, pad_edge=False)
    grid.add_column(no_wrap=True, width=lead.cell_len)
    grid.add_column(ratio=1)
    grid.add_row(lead, body)
    console.print(grid)


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
        return str(args.get("command", "")) + (" (in the background)" if args.get("background") is True else "")
    if tool in ("command_output", "stop_command"):
        return str(args.get("id", ""))
    if tool == "web_fetch":
        return str(args.get("url", ""))
    if tool == "update_plan":
        steps = args.get("plan")
        return f"{len(steps)} step{'s' if len(steps) != 1 else ''}" if isinstance(steps, list) else ""
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
    if tool == "task":
        return f"{args.get('agent') or 'general'}: {args.get('description', '')}"
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
    shown = _json_lines(content)
    if shown is not None or tool.startswith("mcp__"):  # a structured result: shown whole, bounded
        shown = shown if shown is not None else lines
        body = shown[1 : MAX_RESULT_LINES + 1]
        more = len(shown) - 1 - len(body)
        return shown[0], body + ([f"… {more} more line{'s' if more != 1 else ''}"] if more > 0 else [])
    more = len(lines) - 1
    return lines[0], ([f"… {more} more line{'s' if more != 1 else ''}"] if more and not ok else [])


def _json_lines(content: str) -> list[str] | None:
    """A result that is a JSON object or array, indented a level a line (None: it is not one)."""
    text = content.strip()
    if not text.startswith(("{", "[")) or len(text) > 1_000_000:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list):
        return None
    try:
        return json.dumps(value, indent=2, ensure_ascii=False).splitlines()
    except (ValueError, RecursionError):
        return None


@dataclass
class _Command:
    """A run_command call whose output comes as it runs (tool_output chunks)."""

    command: str
    background: bool
    partial: str = ""  # the line in progress
    recent: list[str] = field(default_factory=list)  # its last lines, while it runs in the foreground
    started: bool = False  # its tool_result came: a background command going on by itself
    label: str = ""  # a background command's id
    printed: int = 0  # lines of its output printed (a background command's)


def _shown(line: str) -> str:
    """An output line as a terminal may show it: without escape sequences nor control characters;
    a line rewritten with carriage returns (a progress bar) as it was left."""
    return _CONTROLS.sub("", line.rstrip("\r").rsplit("\r", 1)[-1].replace("\t", "    "))


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
        # toolCallId → why this client refused the call (shown instead of the tool's result; "":
        # said already, when it was answered).
        self.refused: dict[str, str] = {}
        self.plan: dict[str, Any] | None = None  # the last plan chunk shown
        self._tasks: dict[str, str] = {}  # a `task` call's id → its description (its subagent's lines say it)
        self._commands: dict[str, _Command] = {}  # run_command calls whose output may come (tool_output)
        self._output_of: str | None = None  # the call whose output the last lines printed were
        self.shown_diffs: set[str] = set()  # toolCallIds whose change was shown with their question
        self.retrying: tuple[int, int, str] | None = None  # (attempt, of, reason) while a step is retried
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

    def settle(self) -> None:
        """What streamed so far is put in its place for good (before a notice that interrupts it)."""
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
        self._end_outputs()
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
        if self.retrying is not None and kind not in ("retry", "usage"):
            self._settle_retry()
        if kind not in ("tool_output", "usage"):
            self._output_of = None  # a background command's next output says whose it is again
        if "parentToolCallId" in chunk:
            self._subagent(chunk)
            return
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

    def _subagent(self, chunk: dict[str, Any]) -> None:
        """A subagent's chunk: each of its tool calls a dim line under its task (a failed result, a
        red one); its text is not shown — its answer is the task's result."""
        label = self._tasks.get(str(chunk.get("parentToolCallId")), "subagent")
        kind = chunk.get("type")
        if kind == "tool_call":
            tool = str(chunk.get("toolName", "?"))
            summary = summarize_args(tool, chunk.get("args") or {})
            room = self._room(len(label) + len(tool) + 10)
            self._line(f"    [dim]↳ {escape(_clip(label, 40))} · {escape(tool)} {escape(_clip(summary, room))}[/]")
        elif kind == "tool_result" and not chunk.get("ok"):
            refusal = self.refused.pop(str(chunk.get("toolCallId")), None)
            head = f"refused: {refusal}" if refusal is not None else str(chunk.get("content", "")).strip()
            first = head.splitlines()[0] if head else ""
            self._line(f"      [dim]{RESULT_MARK}[/] [red]✗ {escape(_clip(first, self._room(10)))}[/]")

    def _on_tool_call(self, chunk: dict[str, Any]) -> None:
        tool = str(chunk.get("toolName", "?"))
        args = chunk.get("args")
        if tool == "task" and isinstance(args, dict):
            self._tasks[str(chunk.get("toolCallId"))] = str(args.get("description") or args.get("agent") or "subagent")
        summary = summarize_args(tool, chunk.get("args") or {})
        room = self._room(len(tool) + 4)
        self._line(f"[bold cyan]{TOOL_MARK}[/] [bold]{escape(tool)}[/] [dim]{escape(_clip(summary, room))}[/]")
        if tool == "run_command" and isinstance(args, dict):
            command = str(args.get("command", ""))
            self._commands[str(chunk.get("toolCallId"))] = _Command(command, args.get("background") is True)

    def _on_tool_result(self, chunk: dict[str, Any]) -> None:
        tool = str(chunk.get("toolName", "?"))
        call_id = str(chunk.get("toolCallId"))
        refusal = self.refused.pop(call_id, None)
        if refusal is not None:
            if refusal:
                self._line(f"  [dim]{RESULT_MARK}[/] [yellow]refused: {escape(refusal)}[/]")
            self._new_step()
            return
        ok = bool(chunk.get("ok"))
        self._command_answered(call_id, ok, str(chunk.get("content", "")))
        head, more = summarize_result(tool, ok, str(chunk.get("content", "")))
        change = chunk.get("diff") if isinstance(chunk.get("diff"), dict) else None
        if change is not None and ok:
            counts = f" (+{change.get('added', 0)} −{change.get('removed', 0)})"
            head = _clip(head, self._room(6 + len(counts)))
            head += counts
        style = "dim" if ok else "red"
        mark = "" if ok else "✗ "
        if ok:
            self._line(f"  [dim]{RESULT_MARK}[/] [{style}]{mark}{escape(_clip(head, self._room(6 + len(mark))))}[/]")
        else:  # why it failed, whole (bounded), wrapped under itself
            self._end_text()
            why = head if len(head) <= MAX_FAILURE else head[: MAX_FAILURE - 1] + "…"
            print_hanging(
                self.console, Text.assemble(("  " + RESULT_MARK + " ", "dim"), (mark, "red")), Text(why, "red")
            )
        for line in more:
            print_line(self.console, f"    [dim]{escape(_clip(line, self._room(6)))}[/]")
        if change is not None and ok and call_id not in self.shown_diffs:  # nobody saw it asked: show it now
            shown, hidden = diff_lines(change, folded=RESULT_DIFF_LINES)
            for diff_line in shown[1:]:
                print_line(self.console, Text.assemble("    ", diff_line))
            if hidden:
                print_line(self.console, f"    [dim]… {hidden} more line{'s' if hidden != 1 else ''}[/]")
        self.shown_diffs.discard(call_id)
        nested = chunk.get("instructions")
        if isinstance(nested, list) and nested:  # nested instruction files given with this result
            print_line(self.console, f"    [dim]+ rules {escape(', '.join(map(str, nested)))}[/]")
        self._new_step()

    # ----------------------------------------------------------------- a command's output

    def _on_tool_output(self, chunk: dict[str, Any]) -> None:
        """A running command's output. In the foreground its last lines show at the bottom of the
        screen until its result (which shows its output) replaces them; a background command's
        comes afterwards as dim lines under a line naming it, at most BACKGROUND_LINES a run."""
        call_id = str(chunk.get("toolCallId"))
        command = self._commands.setdefault(call_id, _Command("", False))
        *raw, command.partial = (command.partial + str(chunk.get("text", ""))).split("\n")
        command.partial = command.partial[-MAX_PARTIAL:]  # a line without end: its end is what shows
        lines = [_shown(line) for line in raw]
        if command.started:
            self._print_output(call_id, command, lines)
            return
        command.recent = (command.recent + lines)[-LIVE_OUTPUT_LINES:]
        if self.live is not None:
            partial = _shown(command.partial)
            shown = (command.recent + [partial] if partial else command.recent)[-LIVE_OUTPUT_LINES:]
            self.live.show(output=[Text.assemble(("  " + OUTPUT_MARK + " ", "dim"), (line, "dim")) for line in shown])

    def _command_answered(self, call_id: str, ok: bool, content: str) -> None:
        """A run_command's result came: its live lines leave the screen (the result has its output);
        a background command started goes on, its output shown as it comes."""
        command = self._commands.get(call_id)
        if command is None:
            return
        if self.live is not None and self.live.output:
            self.live.show(output=[])
        found = _COMMAND_ID.search(content)
        if not (command.background and ok and found):
            del self._commands[call_id]
            return
        command.started, command.label, command.partial, command.recent = True, found.group(0), "", []

    def _print_output(self, call_id: str, command: _Command, lines: list[str]) -> None:
        if not lines or command.printed > BACKGROUND_LINES:
            return
        if self.live is None:  # on its own lines (with rich text they go above what still streams)
            self._end_text()
        if self._output_of != call_id:
            what = f"  {RESULT_MARK} {command.label} (in the background): "
            print_line(
                self.console, Text.assemble((what, "dim"), (_clip(command.command, self._room(len(what))), "dim"))
            )
            self._output_of = call_id
        for line in lines:
            command.printed += 1
            if command.printed > BACKGROUND_LINES:
                print_line(
                    self.console, Text(f"    … more output: /jobs shows the end of {command.label}", style="dim")
                )
                return
            print_line(self.console, Text.assemble(("    " + OUTPUT_MARK + " ", "dim"), (line, "dim")))

    def _end_outputs(self) -> None:
        """The run ended: a background command's line in progress is printed; no more of its
        output comes with this run (/jobs has it)."""
        if self.live is not None and self.live.output:
            self.live.show(output=[])
        for call_id, command in list(self._commands.items()):
            if command.started and command.partial:
                self._print_output(call_id, command, [_shown(command.partial)])
        self._commands.clear()
        self._output_of = None

    def _on_plan(self, chunk: dict[str, Any]) -> None:
        self._end_text()
        self.plan = chunk
        print_plan(self.console, chunk)
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
        line = Text.assemble(
            (
                f"↻ retrying in {delay:.1f}s (attempt {chunk.get('retryAttempt')} of {chunk.get('retryMaxAttempts')}): ",
                "yellow",
            ),
            (_clip(str(chunk.get("reason", "")), None), "dim"),
        )
        if self.live is not None:  # one line, updated in place, until the step goes on
            self.retrying = (
                int(chunk.get("retryAttempt") or 0),
                int(chunk.get("retryMaxAttempts") or 0),
                str(chunk.get("reason", "")),
            )
            self.live.show(notice=line)
        else:
            print_line(self.console, line)
        self._new_step()

    def _on_hook(self, chunk: dict[str, Any]) -> None:
        """A hook changed something (blocked, added context) or failed: one line."""
        outcome = str(chunk.get("outcome", ""))
        style = {"blocked": "yellow", "context": "dim", "error": "red", "timeout": "red"}.get(outcome, "dim")
        what = {"blocked": "blocked", "context": "added context", "error": "failed", "timeout": "timed out"}.get(
            outcome, outcome
        )
        message = " ".join(str(chunk.get("message", "")).split())
        head = f"⚑ {chunk.get('event', '?')} hook {what}"
        self._line(f"[{style}]{escape(head)}:[/] [dim]{escape(_clip(message, self._room(len(head) + 2)))}[/]")

    def _settle_retry(self) -> None:
        """The retried step went on (or the run ended): its retry line leaves the bottom of the
        screen, and one line says it was retried."""
        said, self.retrying = self.retrying, None
        if self.live is None or said is None:
            return
        self.live.show(notice=None)
        attempts, allowed, reason = said
        times = "once" if attempts == 1 else f"{attempts} times"
        print_line(
            self.console, Text(f"↻ retried {times} (of {allowed} allowed) after: {_clip(reason, None)}", style="dim")
        )

    def _on_done(self, chunk: dict[str, Any]) -> None:
        self._end_text()
        self._end_outputs()
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
