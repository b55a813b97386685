"""Answers to `cody/requestPermission`: asked at the terminal, or refused without `--yes`.

The server asks before a tool changes anything (write_file, edit_file,
run_command). The chat, and `run` in a terminal, show what the tool will do — a
file change as a diff against the file now, with line numbers (diffs.py), folded
when long — and ask with a menu of the answers, one a line (menu.py): a number or
the answer's letter picks it at once (no Enter), ↑/↓ and Enter too, and `v` shows
the whole change or command first. A rule that would allow every command of the folder is confirmed
before it is made. `run` elsewhere (a script, CI) cannot ask anybody: without
`--yes` it refuses those tools and says so (the model is told the call was denied).

Chunks are shown the moment they are received, and a request is handled after
the chunks that came before it, so the tool call asked about is on screen
before its question.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from .diffs import diff_lines
from .menu import Menu, Option
from .reader import LineReader
from .render import RESULT_MARK, ChunkRenderer, print_line, summarize_args

SCOPE_WORDS = {"session": "in this session", "folder": "in this folder"}
OUTCOMES = ("allow", "allow_always", "deny")
# The answer "always" in each scope: its keys and its words in the question.
SCOPE_CHOICES = {
    "session": (("a", "always"), "[a]lways in this session"),
    "folder": (("f", "folder"), "always in this [f]older"),
}
# For run_command a rule without a prefix covers every command, compound ones too: said so.
ANY_COMMAND_LABELS = {"session": "[a]ny command in this session", "folder": "any command in this [f]older"}


@dataclass(frozen=True)
class Choice:
    """One answer to a permission question: the keys that give it, its words in the question,
    the answer sent, and what is said once it is given (None: nothing)."""

    keys: tuple[str, ...]
    label: str
    answer: dict[str, Any]
    said: str | None = None
    # Asked again before it is given (a rule that allows every command of the folder).
    confirm: str | None = None


ALLOW = Choice(("y", "yes"), "[y]es", {"outcome": "allow"})
# After `n`, on a terminal, when the server takes it: what the agent should do instead (a line).
FEEDBACK_QUESTION = "  Tell the agent what to do instead (Enter: just no): "
MAX_FEEDBACK = 4000
DENY = Choice(("n", "no"), "[n]o", {"outcome": "deny"}, "[yellow]denied[/]")
VIEW = ("v", "view")  # the keys that show the whole change or command


def choices_for(tool: str, options: Any) -> list[Choice]:
    """What the person may answer, as the server offers it (`params.options`): "always" in this
    session or in this folder, and for run_command always for a command prefix (`npm test`)."""
    if not isinstance(options, dict):  # a server without lasting rules: "always" is its own
        return [ALLOW, Choice(("a", "always"), "[a]lways", {"outcome": "allow_always"}, "always allowed"), DENY]
    if "allow_always" not in (options.get("outcomes") or OUTCOMES):  # this call only (e.g. leaving the sandbox)
        return [ALLOW, DENY]
    scopes = [scope for scope in options.get("scopes") or [] if scope in SCOPE_WORDS] or ["session"]
    domain = options.get("domain") if tool == "web_fetch" and isinstance(options.get("domain"), str) else None
    choices = [ALLOW]
    for scope in scopes:
        keys, label = SCOPE_CHOICES[scope]
        said = f"always allowed {SCOPE_WORDS[scope]}"
        confirm = None
        if domain:  # a web_fetch rule covers the URL's host only
            label = label.replace("lways", f"lways for {escape(domain)}", 1)
            said = f"fetches from {escape(domain)} always allowed {SCOPE_WORDS[scope]}"
            answer = {"outcome": "allow_always", "scope": scope, "domain": domain}
            choices.append(Choice(keys, label, answer, said))
            continue
        if tool == "run_command":  # a rule without a prefix covers every command, compound ones too
            label = ANY_COMMAND_LABELS[scope]
            said = f"every command always allowed {SCOPE_WORDS[scope]}"
            if scope == "folder":
                confirm = (
                    "This rule allows every command — any program, compound commands too — in every session "
                    "of this folder, without asking, until /permissions revokes it."
                )
        choices.append(Choice(keys, label, {"outcome": "allow_always", "scope": scope}, said, confirm))
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
    rule = options.get("sandboxedRule")
    if tool == "run_command" and isinstance(rule, dict) and rule.get("outcome") == "allow_always":
        answer = {key: rule[key] for key in ("outcome", "scope", "sandboxed") if key in rule}
        said = f"always sandboxed {SCOPE_WORDS.get(str(rule.get('scope')), 'in this folder')}, without asking"
        choices.append(Choice(("s", "sandboxed"), "any command [s]andboxed in this folder", answer, said))
    return [*choices, DENY]


def sandbox_notice(capabilities: dict[str, Any]) -> str | None:
    """The header's line when the server has no sandbox (initialize's `sandbox`), else None."""
    cody = (capabilities.get("experimental") or {}).get("cody") or {}
    sandbox = cody.get("sandbox")
    if not isinstance(sandbox, dict) or sandbox.get("available") is not False:
        return None
    reason = sandbox.get("reason") if isinstance(sandbox.get("reason"), str) else "unknown reason"
    return f"no command sandbox here ({reason}): commands the policy would run sandboxed are asked about instead"


def question(tool: str, choices: list[Choice]) -> str:
    return f"Allow {tool}? " + " · ".join([*(choice.label for choice in choices), "[v]iew all"]) + " "


def view_label(tool: str, change: dict[str, Any] | None) -> str:
    """What `v` shows, in the menu."""
    if change is not None or tool in ("write_file", "edit_file"):
        return "View the whole change"
    if tool in ("run_command", "hook"):
        return "View the whole command"
    return "View all of its arguments"


def menu_label(tool: str, choice: Choice, feedback: bool) -> str:
    """A choice's words in the menu (a sentence; its key is shown beside it)."""
    answer = choice.answer
    outcome = answer.get("outcome")
    if outcome == "allow":
        return "Yes"
    if outcome == "deny":
        return "No, and tell the agent what to do instead" if feedback else "No"
    scope = SCOPE_WORDS.get(str(answer.get("scope")), "")
    if "commandPrefix" in answer:
        return f"Yes, and always for `{answer['commandPrefix']}` {scope}".rstrip()
    if answer.get("sandboxed"):
        return "Yes, and run every command of this folder sandboxed, without asking"
    if tool == "run_command" and scope:
        return f"Yes, and any command {scope}"
    if set(answer) <= {"outcome", "scope"} and scope:
        return f"Yes, always {scope}"
    words = choice.label.replace("[", "").replace("]", "").replace("(", "").replace(")", "").strip()
    return f"Yes, {words[:1].lower()}{words[1:]}" if words else "Yes, always"


def add_yes_flag(parser: argparse.ArgumentParser) -> None:
    """The `--yes` flag of the commands that run the agent."""
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="allow every tool call without asking (file writes and commands included)",
    )


PREVIEW_LINES = 8


def preview(
    tool: str,
    args: dict[str, Any],
    unsandboxed: dict[str, Any] | None = None,
    change: dict[str, Any] | None = None,
    width: int | None = None,
) -> list[str | Text]:
    """What a tool call will do, in a few lines (markup), before it is approved (`v`: all of it;
    `unsandboxed`: the request's, when the command asks to run outside the sandbox; `change`: the
    request's diff of a file change, against the file now). What its tool call's line above shows
    whole (on a terminal `width` wide; None: a line is never cut) is not said again."""
    lines: list[str | Text] = []
    if change is not None:
        shown, hidden = diff_lines(change)
        lines += [Text.assemble("  ", line) for line in shown]
        lines += _more(hidden)
        return lines
    call_line = len(tool) + 3 + len(summarize_args(tool, args))  # "● tool summary"
    shown_whole = width is None or call_line <= width
    if tool == "run_command":
        command = str(args.get("command", "")).splitlines() or [""]
        if len(command) == 1 and shown_whole and unsandboxed is None:
            return lines
        lines += [
            f"  [dim]{'$' if i == 0 else '>'}[/] {escape(line)}" for i, line in enumerate(command[:PREVIEW_LINES])
        ]
        lines += _more(len(command) - PREVIEW_LINES)
        if unsandboxed is not None:
            lines.append("  [yellow]outside the sandbox[/] [dim](it could write anywhere, use the network)[/]")
            lines.append(f"  [dim]reason:[/] {escape(str(unsandboxed.get('reason')))}")
    elif tool == "hook":  # a workspace's hook command, asked about before it ever runs
        where = f"{args.get('file', '?')}, {args.get('event', '?')}" + (
            f", tools matching {args['matcher']}" if args.get("matcher") else ""
        )
        lines.append(f"  [yellow]the workspace's hook[/] [dim]({escape(where)}) runs this command:[/]")
        command = str(args.get("command", "")).splitlines() or [""]
        lines += [
            f"  [dim]{'$' if i == 0 else '>'}[/] {escape(line)}" for i, line in enumerate(command[:PREVIEW_LINES])
        ]
        lines += _more(len(command) - PREVIEW_LINES)
    elif tool == "write_file" and isinstance(args.get("content"), str):
        content = args["content"].splitlines()
        lines += [f"  [green]+ {escape(line)}[/]" for line in content[:PREVIEW_LINES]]
        lines += _more(len(content) - PREVIEW_LINES)
    elif tool == "edit_file" and isinstance(args.get("old_string"), str):
        old = args["old_string"].splitlines()
        new = str(args.get("new_string", "")).splitlines()
        lines += [f"  [red]- {escape(line)}[/]" for line in old[:6]]
        lines += _more(len(old) - 6)
        lines += [f"  [green]+ {escape(line)}[/]" for line in new[:6]]
        lines += _more(len(new) - 6)
    elif not shown_whole:  # the arguments, which the call's line cut, once: as JSON, a level a line
        pretty = json.dumps(args, indent=2, ensure_ascii=False).splitlines()
        lines += [f"  [dim]{escape(line)}[/]" for line in pretty[:PREVIEW_LINES]]
        lines += _more(len(pretty) - PREVIEW_LINES)
    return lines


def _more(count: int) -> list[str]:
    return [f"  [dim]… {count} more line{'s' if count != 1 else ''} (v shows all)[/]"] if count > 0 else []


def full_view(tool: str, args: dict[str, Any], change: dict[str, Any] | None = None) -> list[Text]:
    """The whole change or command, every line of it (nothing clipped): what `v` shows."""
    if change is not None:
        return diff_lines(change, folded=None)[0]
    if tool == "run_command":
        command = str(args.get("command", "")).splitlines() or [""]
        return [Text.assemble(("$ " if i == 0 else "> ", "dim"), line) for i, line in enumerate(command)]
    if tool == "write_file" and isinstance(args.get("content"), str):
        head = Text(f"{args.get('path', '')} (whole new content)", style="bold")
        return [head, *(Text(f"+ {line}", style="green") for line in args["content"].splitlines())]
    if tool == "edit_file" and isinstance(args.get("old_string"), str):
        old = args["old_string"].splitlines()
        new = str(args.get("new_string", "")).splitlines()
        path = str(args.get("path", ""))
        style = {"+": "green", "-": "red", "@": "cyan"}
        return [
            Text(line, style=style.get(line[:1], "") if not line.startswith(("+++", "---")) else "bold")
            for line in difflib.unified_diff(old, new, f"{path} (now)", f"{path} (after the edit)", lineterm="")
        ]
    return [Text(line) for line in json.dumps(args, indent=2, ensure_ascii=False).splitlines()]


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
        feedback: Callable[[], bool] = lambda: False,
    ):
        self.console = console
        self.reader = reader
        self.renderer = renderer
        self.on_interrupt = on_interrupt
        self.feedback = feedback  # whether the server takes a deny's feedback (denyFeedback)
        self.denied = 0  # calls the person answered no to

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.renderer.line_break()
        tool = str(params.get("toolName", "?"))
        raw = params.get("args")
        args = raw if isinstance(raw, dict) else {}
        unsandboxed = params.get("unsandboxed")
        change = params.get("diff") if isinstance(params.get("diff"), dict) else None
        width = self.console.width if self.console.is_terminal else None
        for line in preview(tool, args, unsandboxed if isinstance(unsandboxed, dict) else None, change, width):
            if change is None and tool in ("run_command", "hook"):
                self.console.print(line, overflow="fold")  # a command to approve is read whole, folded
            else:
                print_line(self.console, line)
        if change is not None:
            self.renderer.shown_diffs.add(str(params.get("toolCallId")))
        choices = choices_for(tool, params.get("options"))
        feedback = self.reader.interactive and self.feedback()
        options = [
            Option(
                choice.keys[0] if choice is DENY else str(n), menu_label(tool, choice, feedback), choice.keys, choice
            )
            for n, choice in enumerate(choices, 1)
        ]
        options.append(
            Option(
                "v",
                view_label(tool, change),
                VIEW,
                VIEW,
            )
        )
        menu = Menu(self.console, self.reader)
        try:
            while True:
                asked = f"{tool} (subagent)" if params.get("parentToolCallId") else tool  # a task's child's call
                title = Text(f"Allow {asked}?", style="bold yellow")
                picked = await menu.choose(title, options)
                if picked.value is VIEW:
                    for text in full_view(tool, args, change):
                        self.console.print(text, soft_wrap=not self.console.is_terminal)
                    continue
                choice = picked.value
                if choice.confirm is None or await self._confirmed(choice):
                    break
        except (EOFError, KeyboardInterrupt):
            if self.on_interrupt is not None:
                self.on_interrupt()
            self.renderer.refused[str(params.get("toolCallId"))] = ""
            return DENY.answer
        if choice is DENY:
            self.denied += 1
            self.renderer.refused[str(params.get("toolCallId"))] = ""  # said here: the result adds nothing
            told = await self._instead()
            if told:
                self.console.print(f"  [dim]{RESULT_MARK}[/] [yellow]denied[/], and the agent is told: {escape(told)}")
                return {**DENY.answer, "feedback": told}
        if choice.said is not None:
            self.console.print(f"  [dim]{RESULT_MARK}[/] {choice.said}")
        return choice.answer

    async def _instead(self) -> str:
        """After `n`: a line of what to do instead, on a terminal, when the server takes it ("": none)."""
        if not (self.reader.interactive and self.feedback()):
            return ""
        try:
            line = await self.reader.read(FEEDBACK_QUESTION, ask=True)
        except (EOFError, KeyboardInterrupt):
            return ""
        return line.strip()[:MAX_FEEDBACK]

    async def _confirmed(self, choice: Choice) -> bool:
        """A rule this broad is made only when the same key is pressed again."""
        self.console.print(f"  [yellow]{escape(choice.confirm or '')}[/]", soft_wrap=not self.console.is_terminal)
        key = choice.keys[0]
        answer = await self.reader.read_key(f"Press {key} again to make it, any other key to go back: ")
        return answer.strip().lower() in choice.keys


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
