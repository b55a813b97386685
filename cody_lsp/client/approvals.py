"""Answers to `cody/requestPermission`: asked at the terminal, or refused without `--yes`.

The server asks before a tool changes anything (write_file, edit_file,
run_command). The chat, and `run` in a terminal, show what the tool will do and
ask. `run` elsewhere (a script, CI) cannot ask anybody: without `--yes` it
refuses those tools and says so (the model is told the call was denied).

Chunks are shown the moment they are received, and a request is handled after
the chunks that came before it, so the tool call asked about is on screen
before its question.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from .reader import LineReader
from .render import RESULT_MARK, ChunkRenderer, print_line, summarize_args

SCOPE_WORDS = {"session": "in this session", "folder": "in this folder"}
# The answer "always" in each scope: its keys and its words in the question.
SCOPE_CHOICES = {
    "session": (("a", "always"), "[a]lways in this session"),
    "folder": (("f", "folder"), "always in this [f]older"),
}


@dataclass(frozen=True)
class Choice:
    """One answer to a permission question: the keys that give it, its words in the question,
    the answer sent, and what is said once it is given (None: nothing)."""

    keys: tuple[str, ...]
    label: str
    answer: dict[str, Any]
    said: str | None = None


ALLOW = Choice(("", "y", "yes"), "[Y]es", {"outcome": "allow"})
DENY = Choice(("n", "no"), "[n]o", {"outcome": "deny"}, "[yellow]denied[/]")


def choices_for(tool: str, options: Any) -> list[Choice]:
    """What the person may answer, as the server offers it (`params.options`): "always" in this
    session or in this folder, and for run_command always for a command prefix (`npm test`)."""
    if not isinstance(options, dict):  # a server without lasting rules: "always" is its own
        return [ALLOW, Choice(("a", "always"), "[a]lways", {"outcome": "allow_always"}, "always allowed"), DENY]
    scopes = [scope for scope in options.get("scopes") or [] if scope in SCOPE_WORDS] or ["session"]
    choices = [ALLOW]
    for scope in scopes:
        keys, label = SCOPE_CHOICES[scope]
        said = f"always allowed {SCOPE_WORDS[scope]}"
        choices.append(Choice(keys, label, {"outcome": "allow_always", "scope": scope}, said))
    prefix = options.get("commandPrefix")
    if tool == "run_command" and isinstance(prefix, str) and prefix:
        scope = "folder" if "folder" in scopes else scopes[0]
        choices.append(
            Choice(
                ("p", "prefix"),
                f"always for `{prefix}` ([p])",
                {"outcome": "allow_always", "scope": scope, "commandPrefix": prefix},
                f"always allowed for `{escape(prefix)}` {SCOPE_WORDS[scope]}",
            )
        )
    return [*choices, DENY]


def question(tool: str, choices: list[Choice]) -> str:
    return f"Allow {tool}? " + " · ".join(choice.label for choice in choices) + " "


def add_yes_flag(parser: argparse.ArgumentParser) -> None:
    """The `--yes` flag of the commands that run the agent."""
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="allow every tool call without asking (file writes and commands included)",
    )


def preview(tool: str, args: dict[str, Any]) -> list[str]:
    """What a tool call will do, in a few lines (markup), before it is approved."""
    lines: list[str] = []
    if tool == "run_command":
        lines.append(f"  [dim]$[/] {escape(str(args.get('command', '')))}")
    elif tool == "write_file" and isinstance(args.get("content"), str):
        content = args["content"].splitlines()
        lines += [f"  [green]+ {escape(line)}[/]" for line in content[:8]]
        if len(content) > 8:
            lines.append(f"  [dim]… {len(content) - 8} more lines[/]")
    elif tool == "edit_file" and isinstance(args.get("old_string"), str):
        old = args["old_string"].splitlines()
        new = str(args.get("new_string", "")).splitlines()
        lines += [f"  [red]- {escape(line)}[/]" for line in old[:6]]
        if len(old) > 6:
            lines.append(f"  [dim]… {len(old) - 6} more lines[/]")
        lines += [f"  [green]+ {escape(line)}[/]" for line in new[:6]]
        if len(new) > 6:
            lines.append(f"  [dim]… {len(new) - 6} more lines[/]")
    else:
        lines.append(f"  [dim]{escape(summarize_args(tool, args))}[/]")
    return lines


class TerminalApprover:
    """Asks the person at the terminal whether a tool may run.

    Ctrl+C (or Ctrl+D) at the question denies the call and calls `on_interrupt`
    (which cancels the run, as Ctrl+C does during a run).
    """

    def __init__(
        self,
        console: Console,
        reader: LineReader,
        renderer: ChunkRenderer,
        on_interrupt: Callable[[], None] | None = None,
    ):
        self.console = console
        self.reader = reader
        self.renderer = renderer
        self.on_interrupt = on_interrupt
        self.denied = 0  # calls the person answered no to

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.renderer.line_break()
        tool = str(params.get("toolName", "?"))
        args = params.get("args")
        for line in preview(tool, args if isinstance(args, dict) else {}):
            print_line(self.console, line)
        choices = choices_for(tool, params.get("options"))
        by_key = {key: choice for choice in choices for key in choice.keys}
        try:
            while True:
                answer = await self.reader.read(question(tool, choices), ask=True)
                choice = by_key.get(answer.strip().lower())
                if choice is not None:
                    break
                keys = ", ".join(f"{c.keys[1] if c is ALLOW else c.keys[0]} ({c.keys[-1]})" for c in choices)
                self.console.print(f"[dim]answer {escape(keys)}[/]")
        except (EOFError, KeyboardInterrupt):
            if self.on_interrupt is not None:
                self.on_interrupt()
            return DENY.answer
        if choice is DENY:
            self.denied += 1
        if choice.said is not None:
            self.console.print(f"  [dim]{RESULT_MARK}[/] {choice.said}")
        return choice.answer


class RefuseWithoutYes:
    """`run` where nobody can be asked and `--yes` was not given: every tool that would
    change something is refused, and the output says why and which flag allows it."""

    REASON = "nobody can be asked here (not a terminal); --yes allows tools that change files or run commands"

    def __init__(self, renderer: ChunkRenderer | None = None):
        self.renderer = renderer
        self.refused: list[str] = []

    def __call__(self, params: dict[str, Any]) -> str:
        self.refused.append(str(params.get("toolName", "?")))
        if self.renderer is not None:
            self.renderer.refused[str(params.get("toolCallId"))] = self.REASON
        return "deny"

    def summary(self) -> str | None:
        """The closing line about what was refused, or None."""
        if not self.refused:
            return None
        count = len(self.refused)
        names = ", ".join(dict.fromkeys(self.refused))
        return (
            f"{count} tool call{'s' if count != 1 else ''} refused ({names}): cody-lsp run was not in a terminal, "
            "so it could not ask; run it again with --yes to allow tools that change files or run commands"
        )
