"""`cody-lsp chat`: a terminal chat over the cody/* protocol.

Text streams as it arrives (on a terminal, as Markdown once each block is complete),
tool calls and results take a line each, and the approvals of mutating tools are
asked inline (one key answers). A line typed while a run goes — drawn below the
answer, never mixed into it — is sent to the session with priority `next`: the
model reads it at its next step (/queue lists what waits). Ctrl+C during a run interrupts it — the messages queued
behind it go on — (a second Ctrl+C while it is being stopped stops waiting for
it); at the prompt Ctrl+C clears the line and Ctrl+D (or /exit) leaves. Line
editing and history come from prompt_toolkit, rendering from rich.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import typing
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..protocol.wire import (
    CARRY_OUT_PROMPT,
    INVALID_PARAMS,
    UNKNOWN_SESSION,
    AgentList,
    CheckpointInfo,
    CommandInfo,
    Message,
    RestoreMode,
    SessionInfo,
    SessionMode,
    to_wire,
)
from .approvals import TerminalApprover, add_yes_flag, sandbox_notice
from .connection import CodyClient, CodyConnectionError, CodyError, PermissionHandler, RunStream, server_feature
from .help_screen import print_help
from .interrupts import CancelOnInterrupt, stop_on_termination
from .langservers import show_language_servers
from .live import markdown
from .mentions import completer, label, mentions
from .permission_rules import PermissionRules
from .reader import LineReader
from .render import (
    RESULT_MARK,
    TOOL_MARK,
    ChunkRenderer,
    make_console,
    preflight,
    print_line,
    print_plan,
    setup_cli_logging,
    summarize_args,
)
from .review import ReviewCommands
from .sessions import format_time, print_sessions, resolve_session, session_exists
from .startup import above_prompt, hint_run_coming
from .status_line import StatusLine
from .typeahead import TypeAhead
from .usage import show_context, show_usage

RESTORE_MODES: dict[str, RestoreMode] = {"b": "both", "f": "files", "c": "conversation"}
JOB_LINES = 3  # of a background command's output, in /jobs

HELP = """\
[bold]Commands[/]
  /help          this help
  /clear         start a new session (the current one stays listed)
  /sessions      list this folder's sessions
  /resume ID     continue a session (an id from /sessions, or a unique start of one)
  /model [NAME]  show the model, or set the one this session's next runs use
  /mode [MODE]   show the mode, or set this session's: code (changes files, runs commands),
                 ask (read-only answers), plan (read-only, answers with a plan)
  /go            carry out the plan: switch the session to code mode and send "Carry out the plan."
  /queue         list the messages waiting for this session (also during a run)
  /compact       summarize this session for the model, to free its context (all messages stay)
  /plan          show the agent's plan for this session again (its steps: ☐ to do, ◐ doing, ☑ done)
  /jobs          list this session's background commands with their last output
  /stop ID       stop a background command (an id from /jobs, or a unique start of one)
  /permissions   list the rules that let tools run without asking; /permissions revoke N removes one
  /agents        the agents the model can hand a task to (built in, the folder's, yours), and the
                 agent files that define none, with why
  /rewind [N [files|conversation|both]]
                 list the turns with the files each one changed; go back to turn N: its files, the
                 conversation from it on, or both (a restore can itself be undone: it is listed too)
  /fork [N]      continue in a new session holding this one's turns before turn N (all of them)
  /skills        the Agent Skills of this folder and yours (and why an invalid one is skipped)
  /diff [N|all]  the changes of the last run (of turn N; all: of the whole session), hunk by hunk,
                 numbered
  /undo-hunks [NUMBERS|all]
                 put back those hunks of /diff as they were before the run (your later edits stay)
  /lsp           the language servers code_nav may start here, and their state
  /usage         the tokens of each run and of the session (and their cost, with CODY_MODEL_PRICE)
  /context       what fills the model's context window: system prompt, instructions, tools, history
  /exit          leave (also Ctrl+D)
[bold]Keys[/]
  Enter sends the message; typed during a run, the model reads it at its next step
  @path attaches a file or folder (@app.py:10-20: those lines); Tab completes the path
  Ctrl+C during a run interrupts it (the messages queued behind it go on; a second Ctrl+C,
    while it is being stopped, stops waiting for it); at the prompt Ctrl+C clears the line
  Ctrl+D (or /exit) quits · ↑/↓ recall earlier messages"""

PROMPT = "› "
# The chat's own commands (they win over a custom command of the same name).
CHAT_COMMANDS = "help clear new sessions resume model mode go queue compact permissions rewind fork skills usage context exit quit".split()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp chat",
        description="Chat with the coding agent in a workspace folder.",
        epilog="Needs CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY (try `cody-lsp demo` without them).",
    )
    parser.add_argument(
        "--workspace",
        "-w",
        metavar="DIR",
        help="workspace folder (default: the current folder; with --session: the session's, which -w must match)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--continue", "-c", dest="cont", action="store_true", help="continue the folder's latest session"
    )
    which.add_argument("--session", metavar="ID", help="continue this session (its id, or a unique start of it)")
    add_yes_flag(parser)
    parser.add_argument(
        "--no-status",
        action="store_true",
        help="no status line at the bottom of the terminal (model, mode, context used, tokens, run time)",
    )
    return parser.parse_args(argv)


def help_text(text: str) -> Text:
    """/help as shown: its `[bold]…[/]` headings bold, every other character as it is (`[N]` and
    `[files|conversation|both]` are words of the help, not markup)."""
    out = Text()
    for line in text.splitlines(keepends=True):
        if line.startswith("[bold]") and "[/]" in line:
            heading, _, rest = line[len("[bold]") :].partition("[/]")
            out.append(heading, style="bold")
            out.append(rest)
        else:
            out.append(line)
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    setup_cli_logging()
    folder = preflight("chat", args.workspace, resuming=bool(args.session))
    if folder is None:
        return 2
    try:
        return asyncio.run(Chat(args, folder).main())
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM / SIGHUP: the server was shut down on the way out
        return 143


class Chat:
    def __init__(self, args: argparse.Namespace, folder: Path):
        self.args = args
        self.folder = folder
        self.console = make_console()
        self.renderer = ChunkRenderer(self.console)
        # The folder's custom slash commands (cody/listCommands), read at the start and by /help.
        self.custom: list[CommandInfo] = []
        names = lambda: [*CHAT_COMMANDS, *(c.name for c in self.custom)]  # noqa: E731
        # The custom commands are read once the server is up (finish_start): a `/` completed
        # before that waits for them (a few seconds at most).
        self.commands_known = asyncio.Event()
        self.reader = LineReader(
            self.console, completer=completer(folder, names, self.commands_ready) if sys.stdin.isatty() else None
        )
        self.client: CodyClient | None = None
        self.session_id: str | None = None
        # The model of the current session: the session's own once resumed, else the default.
        self.default_model = os.environ.get("CODY_MODEL", "")
        self.model = self.default_model
        self.mode: SessionMode = "code"  # the current session's
        self.run_id: str | None = None  # the run of the message sent at the prompt
        self.run_ids: set[str] = set()  # every run whose chunks are shown (queued messages start their own)
        self.typed_ids: set[str] = set()  # messages already on screen as typed at the prompt
        self.pending: dict[RunStream, asyncio.Future[Any]] = {}  # requests sent during this turn, unanswered
        self._wake: asyncio.Future[None] | None = None
        # On a terminal that can move the cursor, the line typed during a run is drawn below the answer.
        self.typeahead = TypeAhead(self.typed_during_run, on_edit=self.show_typed if self.renderer.live else None)
        self.interrupt: CancelOnInterrupt | None = None
        self.hinted_exit = False
        self.rules = PermissionRules(self.console, folder)
        self.last_mode: str | None = None  # the mode of the last run sent at the prompt
        self.review = ReviewCommands(self)  # /diff, /undo-hunks
        # The bottom row: model, mode, context used, tokens, the run's time (status_line.py).
        shows_status = not getattr(args, "no_status", False) and self.renderer.live is not None
        self.status = StatusLine(self.console, shows_status and sys.stdin.isatty() and sys.stdout.isatty())
        self.reader.on_render = self.status.redraw
        self.reader.rows = self.status.rows
        self.rules_shown = False
        self.starting: asyncio.Task[None] | None = None

    # ----------------------------------------------------------------- main

    def permission_handler(self) -> PermissionHandler:
        if self.args.yes:
            return lambda _params: "allow"
        approver = TerminalApprover(
            self.console, self.reader, self.renderer, on_interrupt=self.cancel_run, feedback=self.takes_feedback
        )

        async def ask(params: dict[str, Any]) -> dict[str, Any]:
            self.typeahead.pause()  # the question's prompt reads the terminal now
            if self.renderer.live is not None:
                self.renderer.live.pause()
            self.status.update(asking=True)
            try:
                return await approver(params)
            finally:
                self.status.update(asking=False)
                if self.renderer.live is not None:
                    self.renderer.live.resume()
                if self.pending:
                    self.typeahead.resume()

        return ask

    async def main(self) -> int:
        try:
            self.client = await CodyClient.spawn(
                workspace_folders=[self.folder],
                permission_handler=self.permission_handler(),
                steering=True,
                wants=("usage", "editDiffs"),
            )
        except CodyError as exc:
            self.console.print(f"[red]could not start the cody-lsp server:[/] {escape(exc.message)}")
            return 1
        self.client.on_chunk.append(self.show)
        self.client.on_session_changed.append(self.changed_elsewhere)
        self.client.on_queue_changed.append(self.queue_changed)
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self.on_sigint)
        except (NotImplementedError, RuntimeError):  # no signal handlers here: Ctrl+C stays KeyboardInterrupt
            pass
        try:
            with stop_on_termination():
                if not await self.open_session():
                    return 2
                self.status.update(model=self.model, mode=self.mode)
                self.status.start()
                self.starting = asyncio.ensure_future(self.finish_start())
                return await self.loop()
        except CodyConnectionError as exc:
            self.renderer.close_live()
            self.console.print(f"[red]the server stopped:[/] {escape(exc.message)}")
            return 1
        finally:
            self.status.stop()
            if self.starting is not None:
                self.starting.cancel()
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signal.SIGINT)
            await self.client.close()

    async def finish_start(self) -> None:
        """What needs the server fully up, while the prompt is shown (startup.py)."""
        assert self.client is not None
        with contextlib.suppress(CodyError):
            await hint_run_coming(self.client)
            if not self.rules_shown:
                files = (await self.client.list_instructions(self.folder)).instructions
                self.rules_shown = True
                if files and not self.pending:  # (a run started meanwhile: its own lines come first)
                    line = Text.assemble(("rules ", "dim"), ", ".join(files))
                    await above_prompt(lambda: print_line(self.console, line))
            await self.read_commands()
            self.commands_known.set()
            await self.refresh_context()
        self.commands_known.set()

    async def commands_ready(self) -> None:
        """The custom commands are known (or a few seconds went by)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.commands_known.wait(), 10)

    async def refresh_context(self) -> None:
        """The status line's context figures: the session's last request, else the estimate of the next."""
        assert self.client is not None
        if not self.status.active or not server_feature(self.client, "contextReport"):
            return
        with contextlib.suppress(CodyError):
            report = await self.client.get_context(
                self.session_id, workspace_folder=None if self.session_id else self.folder
            )
            measured = report.context_tokens
            self.status.update(
                window=report.window,
                context_tokens=measured if measured is not None else report.total_tokens,
                estimated=measured is None,
                model=report.model or self.status.status.model,
            )

    async def refresh_usage(self) -> None:
        """The session's tokens as the server counted them (compactions included), after a turn."""
        assert self.client is not None
        if self.session_id is None or not self.status.active:
            return
        with contextlib.suppress(CodyError):
            session = (await self.client.get_session(self.session_id, limit=1)).session
            usage = session.usage
            if usage is not None:
                self.status.update(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
            if session.context_tokens is not None:
                self.status.update(context_tokens=session.context_tokens, estimated=False)

    def queue_changed(self, params: dict[str, Any]) -> None:
        """`cody/queueChanged`: the status line counts the messages waiting for this session."""
        if isinstance(params, dict) and params.get("sessionId") == self.session_id:
            queued = params.get("queued")
            self.status.update(queued=len(queued) if isinstance(queued, list) else 0)

    def on_sigint(self) -> None:
        """Ctrl+C as a signal: cancels the run if one is going, else acts like Ctrl+C at a prompt.

        (At a prompt the terminal is in raw mode and Ctrl+C arrives as a key; the
        signal comes during a run, or in the moment before a prompt is ready.)
        """
        if self.interrupt is not None and not self.reader.busy:
            self.interrupt.interrupt()
        else:
            self.reader.interrupt()

    def takes_feedback(self) -> bool:
        """The server gives a deny's feedback to the model (it advertises denyFeedback)."""
        return self.client is not None and bool(server_feature(self.client, "denyFeedback"))

    def cancel_run(self) -> None:
        """Ctrl+C at an approval: the call is denied and the run cancelled, as Ctrl+C during a run does."""
        if self.interrupt is not None:
            self.interrupt.interrupt()

    async def open_session(self) -> bool:
        assert self.client is not None
        console = self.console
        resumed: tuple[SessionInfo, list[Message]] | None = None
        note = "New session."
        if self.args.session:
            try:
                session = await resolve_session(self.client, self.args.session)
            except CodyError as exc:
                if exc.code not in (UNKNOWN_SESSION, INVALID_PARAMS):
                    raise
                console.print(f"cody-lsp chat: {exc.message}", style="red", markup=False)
                return False
            if self.args.workspace is not None and Path(session.workspace_folder).resolve() != self.folder:
                console.print(
                    f"cody-lsp chat: session {session.id} belongs to {session.workspace_folder}, not {self.folder}; "
                    "leave out -w to continue it in its own folder",
                    style="red",
                    markup=False,
                )
                return False
            resumed = await recent_messages(self.client, session.id)
        elif self.args.cont:
            latest = await self.client.latest_session(self.folder)
            if latest is None:
                note = "No earlier session in this folder: starting a new one."
            else:
                resumed = await recent_messages(self.client, latest.id)
        instruction_files = None
        if resumed is not None:
            self.model = resumed[0].model or self.default_model
            self.mode = resumed[0].mode or "code"
            instruction_files = resumed[0].instructions
        # The header: each part whole on its line (a long model name or folder is never broken);
        # a new session's rules follow once the server has read them (finish_start).
        print_line(
            console,
            Text.assemble(
                ("cody", "bold cyan"), " · chat   ", ("model ", "dim"), self.model or "?", ("  mode ", "dim"), self.mode
            ),
        )
        print_line(console, Text.assemble(("folder ", "dim"), str(self.folder)))
        sandbox = sandbox_notice(self.client.capabilities)
        if sandbox is not None:
            console.print(f"[yellow]{escape(sandbox)}[/]")
        if instruction_files is not None:
            self.rules_shown = True
            if instruction_files:
                print_line(console, Text.assemble(("rules ", "dim"), ", ".join(instruction_files)))
        if resumed is not None:
            self.resumed(*resumed)
        else:
            console.print(f"[dim]{note}[/]")
        console.print("[dim]Enter sends, also during a run · Ctrl+C interrupts a run · /help for commands[/]")
        return True

    async def loop(self) -> int:
        while True:
            self.console.print()
            try:
                line = await self.reader.read(PROMPT, default=self.typeahead.unfinished())
            except EOFError:
                self.console.print()
                return 0
            except KeyboardInterrupt:
                # Ctrl+C at the prompt clears the line; it does not quit.
                if not self.hinted_exit:
                    self.console.print("[dim](Ctrl+D or /exit quits)[/]", end="")
                    self.hinted_exit = True
                continue
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                try:
                    if await self.command(text) == "exit":
                        return 0
                except CodyConnectionError:
                    raise
                except CodyError as exc:
                    self.console.print(f"✗ {exc.message}", style="red", markup=False)
                continue
            await self.send(line)

    # ----------------------------------------------------------------- runs

    def show(self, chunk: dict[str, Any]) -> None:
        """Each chunk of this turn's runs, the moment it is received: a permission request,
        handled after the chunks that came before it, finds its tool call on screen."""
        if chunk.get("runId") not in self.run_ids:
            return
        self.status.chunk(chunk)
        kind = chunk.get("type")
        if kind == "session_start":
            self.session_id = chunk.get("sessionId") or self.session_id
            if chunk.get("runId") == self.run_id:
                self.last_mode = chunk.get("mode")
            if chunk.get("runId") != self.run_id and self.interrupt is not None:
                self.interrupt.count = 0  # a queued message's own run: Ctrl+C interrupts this one
        if kind == "user_message":  # a message entered a run: show it unless it was typed at the prompt
            if chunk.get("messageId") not in self.typed_ids:
                self.renderer.line_break()
                print_line(self.console, Text.assemble(("› ", "bold green"), str(chunk.get("content", ""))))
            return
        self.renderer.handle(chunk)

    async def send(self, prompt: str, command: dict[str, str] | None = None) -> None:
        """One turn: the message typed at the prompt (or a custom `command`, which the server
        expands), and those typed while its runs go."""
        assert self.client is not None
        message_id = _message_id()
        new_session = self.session_id is None
        self.last_mode = None
        attachments = self.attached(prompt) if command is None else []
        stream = self.client.stream(
            prompt, session_id=self.session_id, message_id=message_id, attachments=attachments, command=command
        )
        self.run_id, self.run_ids, self.typed_ids = stream.run_id, {stream.run_id}, {message_id}
        self.follow(stream)
        answer = self.pending[stream]
        gave_up: list[bool] = []

        def first() -> None:
            self.renderer.settle()  # what streamed so far stays above the notice, in its place
            self.console.print("[yellow]cancelling… (Ctrl+C again to stop waiting)[/]")

        def again() -> None:
            gave_up.append(True)
            for waiting in self.pending.values():
                waiting.cancel()

        self.interrupt = InterruptOnCtrlC(self, stream, first, again)  # driven by on_sigint
        self.typeahead.resume()
        self.status.working(True)
        try:
            while self.pending:
                self._wake = asyncio.get_running_loop().create_future()
                await asyncio.wait([*self.pending.values(), self._wake], return_when=asyncio.FIRST_COMPLETED)
                for sent, waiting in list(self.pending.items()):
                    if waiting.done():
                        del self.pending[sent]
                        self.answered(sent is stream, waiting)
            if gave_up:
                self.renderer.line_break()
                self.console.print("[yellow]stopped waiting for the run[/]")
            elif new_session and _status(answer) not in (None, "done"):
                await self.forget_unkept_session()
            elif self.last_mode == "plan" and _status(answer) == "done":
                self.renderer.line_break()
                self.console.print(
                    "[dim]/go carries out this plan (switches the session to code mode and sends "
                    f"“{CARRY_OUT_PROMPT}”)[/]"
                )
        finally:
            self.typeahead.pause()
            for waiting in self.pending.values():
                waiting.cancel()
            self.pending.clear()
            self.renderer.close_live()
            self.status.working(False)
            self.run_id = None
            self.interrupt = None
            asyncio.ensure_future(self.refresh_usage())

    def attached(self, text: str) -> list[dict[str, Any]]:
        """The files its `@path` mentions attach (mentions.py), said in a dim line."""
        attachments, unknown = mentions(text, self.folder)
        if attachments:
            print_line(self.console, f"[dim]attached: {escape(', '.join(label(a) for a in attachments))}[/]")
        if unknown:
            print_line(self.console, f"[dim]not in this folder, sent as text: {escape(' '.join(unknown))}[/]")
        return attachments

    def follow(self, stream: RunStream) -> None:
        self.pending[stream] = asyncio.ensure_future(stream.result())
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def answered(self, first: bool, waiting: asyncio.Future[Any]) -> None:
        """A cody/run of this turn answered: keep the session; say what failed."""
        if waiting.cancelled():  # the second Ctrl+C: stopped waiting
            return
        exc = waiting.exception()
        if exc is None:
            if first:
                self.session_id = waiting.result().session_id
            return
        if isinstance(exc, CodyConnectionError) or not isinstance(exc, CodyError):
            raise exc
        self.renderer.line_break()
        self.console.print(f"✗ {exc.message}", style="red", markup=False)
        if exc.code == UNKNOWN_SESSION:  # the session was deleted meanwhile
            self.session_id = None

    async def forget_unkept_session(self) -> None:
        """A run that made its session and failed before anything happened leaves no session
        behind (protocol.md): the next message then starts a new one, not in the deleted id."""
        assert self.client is not None
        if self.session_id is not None and not await session_exists(self.client, self.session_id):
            self.session_id = None
            self.model = self.default_model
            self.console.print("[dim]Nothing of this turn was kept: the next message starts a new session.[/]")

    def show_typed(self, typed: str) -> None:
        """The line being typed during a run, below the answer (nothing when it is empty)."""
        if self.renderer.live is not None:
            self.renderer.live.show(typed=typed or None)

    def typed_during_run(self, line: str) -> None:
        """A line typed while a run goes: a `next` message for the session, or /queue, /plan, /jobs, /stop."""
        self.renderer.line_break()
        name, _, arg = line.strip().partition(" ")
        during = {"/queue": self.show_queue, "/plan": self.show_plan, "/jobs": self.show_jobs}
        if name.lower() in during:
            asyncio.ensure_future(self.quietly(during[name.lower()]()))
        elif name.lower() == "/stop":
            asyncio.ensure_future(self.quietly(self.stop_job(arg.strip())))
        elif line.startswith("/"):
            command = escape(line.split()[0])
            self.console.print(
                f"[dim]{command} was not run: during a run only /queue, /plan, /jobs and /stop work; type it "
                "again once the run has ended[/]"
            )
        else:
            asyncio.ensure_future(self.send_next(line))

    async def send_next(self, line: str) -> None:
        assert self.client is not None
        for _ in range(500):  # a new session: its id comes with the run's first chunk
            if self.session_id is not None or not self.pending:
                break
            await asyncio.sleep(0.01)
        if self.session_id is None or not self.pending:
            self.console.print("[dim]not sent: the run ended before its session started[/]")
            return
        attachments = self.attached(line)
        stream = self.client.stream(
            line, session_id=self.session_id, priority="next", message_id=_message_id(), attachments=attachments
        )
        self.run_ids.add(stream.run_id)
        self.follow(stream)
        print_line(self.console, f"[dim]» queued for the model's next step: {escape(line)}[/]")

    async def quietly(self, work: Any) -> None:
        """A command typed during a run: its failure is said, never raised into the run."""
        try:
            await work
        except CodyError as exc:
            self.console.print(f"✗ {exc.message}", style="red", markup=False)

    async def show_queue(self) -> None:
        assert self.client is not None
        queued = await self.client.list_queued(self.session_id) if self.session_id else []
        if not queued:
            self.console.print("[dim]Nothing is queued.[/]")
        for item in queued:
            print_line(self.console, f"[dim]{item.priority}[/] {escape(item.prompt)}")

    # ----------------------------------------------------------------- commands

    async def command(self, text: str) -> str | None:
        assert self.client is not None
        name, _, arg = text.partition(" ")
        name, arg = name.lower(), arg.strip()
        console = self.console
        if name in ("/exit", "/quit", "/q"):
            return "exit"
        if name in ("/help", "/?"):
            print_help(console, HELP, help_text(HELP))
            await self.read_commands()
            self.show_commands()
        elif name in ("/clear", "/new"):
            self.session_id = None
            self.model = self.default_model
            self.mode = "code"
            console.rule("[dim]new session[/]", style="dim")
            console.print(f"[dim]The previous session stays listed in /sessions. Model: {escape(self.model)}[/]")
        elif name == "/sessions":
            page = await self.client.list_sessions(workspace_folder=self.folder, limit=30)
            if not page.sessions:
                console.print("[dim]No sessions in this folder yet.[/]")
            else:
                print_sessions(console, page.sessions, show_folder=False, current=self.session_id)
                if self.session_id is None:
                    console.print("[dim]The current conversation is new: it is listed once you send a message.[/]")
        elif name == "/resume":
            if not arg:
                console.print("usage: /resume ID  (/sessions lists the ids)")
                return None
            session = await resolve_session(self.client, arg)
            self.resumed(*await recent_messages(self.client, session.id))
        elif name == "/model":
            await self.set_model(arg)
        elif name == "/mode":
            await self.set_mode(arg.lower())
        elif name == "/go":
            if self.session_id is None:
                console.print("[dim]Nothing to carry out yet: ask for a plan first (/mode plan).[/]")
                return None
            if self.mode != "code":
                await self.set_mode("code")
            await self.send(CARRY_OUT_PROMPT)
        elif name == "/queue":
            await self.show_queue()
        elif name == "/compact":
            await self.compact()
        elif name == "/plan":
            await self.show_plan()
        elif name == "/jobs":
            await self.show_jobs()
        elif name == "/stop":
            await self.stop_job(arg)
        elif name == "/permissions":
            await self.rules.command(self.client, arg, self.session_id)
        elif name == "/agents":
            show_agents(console, await self.client.list_agents(self.folder))
        elif name == "/rewind":
            await self.rewind(arg)
        elif name == "/fork":
            await self.fork(arg)
        elif name == "/skills":
            await self.show_skills()
        elif await self.custom_command(text):
            pass
        elif name == "/diff":
            await self.review.diff(arg)
        elif name in ("/undo-hunks", "/undo"):
            await self.review.undo_hunks(arg)
        elif name == "/lsp":
            await show_language_servers(self.console, self.client, self.folder)
        elif name == "/usage":
            await show_usage(console, self.client, self.session_id, self.status.status.price)
        elif name == "/context":
            if not server_feature(self.client, "contextReport"):
                console.print("[dim]This server does not say what fills the context (no cody/getContext).[/]")
                return None
            report = await self.client.get_context(
                self.session_id, workspace_folder=None if self.session_id else self.folder
            )
            show_context(console, report)
        else:
            console.print(f"[red]unknown command {escape(name)}[/] — /help lists the commands")
        return None

    async def show_plan(self) -> None:
        """/plan: the session's plan as the agent left it (cody/getSession's `session.plan`)."""
        assert self.client is not None
        plan = None
        if self.session_id is not None:
            page = await self.client.get_session(self.session_id, limit=1)
            plan = to_wire(page.session.plan) if page.session.plan is not None else None
        if plan is None:
            self.console.print("[dim]No plan in this session yet: the agent makes one for a task of several steps.[/]")
            return
        print_plan(self.console, plan)

    async def show_jobs(self) -> None:
        """/jobs: the session's background commands, each with its state and last output lines."""
        assert self.client is not None
        commands = await self.client.list_background_commands(self.session_id) if self.session_id else []
        if not commands:
            self.console.print("[dim]No background commands in this session.[/]")
            return
        for command in commands:
            if command.status == "running":
                state = "[green]running[/]"
            else:
                state = f"[dim]{command.status} (exit code {command.exit_code})[/]"
            print_line(self.console, f"[bold]{command.id}[/] {state}  {escape(command.command)}")
            for line in command.output.splitlines()[-JOB_LINES:]:
                print_line(self.console, f"    [dim]{escape(line)}[/]")
        self.console.print("[dim]/stop ID stops one[/]")

    async def stop_job(self, arg: str) -> None:
        """/stop ID: stop a background command (a unique start of its id will do)."""
        assert self.client is not None
        if not arg:
            self.console.print("usage: /stop ID  (/jobs lists the ids)")
            return
        commands = await self.client.list_background_commands(self.session_id) if self.session_id else []
        matching = [c for c in commands if c.id == arg] or [c for c in commands if c.id.startswith(arg)]
        if len(matching) != 1:
            why = "no background command" if not matching else "more than one background command"
            self.console.print(f"[red]{why} of this session starts with {escape(arg)}[/] — /jobs lists them")
            return
        result = await self.client.stop_background_command(matching[0].id)
        if result.stopped and result.command is not None:
            self.console.print(f"[green]stopped[/] {matching[0].id} [dim](exit code {result.command.exit_code})[/]")
        else:
            self.console.print(f"[dim]{matching[0].id} had ended already[/]")

    # ----------------------------------------------------------------- custom commands and skills

    async def read_commands(self) -> None:
        """The folder's custom slash commands, from the server (when it has them)."""
        assert self.client is not None
        if server_feature(self.client, "commands"):
            listed = await self.client.list_commands(self.folder)
            self.custom = [c for c in listed if c.source != "builtin" and c.name not in CHAT_COMMANDS]

    def show_commands(self) -> None:
        if not self.custom:
            return
        self.console.print(
            "[bold]Custom commands[/] [dim](.cody/commands, .claude/commands, .github/prompts, yours)[/]"
        )
        for command in self.custom:
            usage = f"/{command.name}" + (f" {command.argument_hint}" if command.argument_hint else "")
            print_line(self.console, f"  {escape(usage):<14} {escape(command.description)} [dim]({command.source})[/]")

    async def custom_command(self, text: str) -> bool:
        """`/name ARGS` of a custom command: sent for the server to expand; False if there is none."""
        name, _, arguments = text.strip()[1:].partition(" ")
        if not any(c.name == name for c in self.custom):
            await self.read_commands()  # a file added since
            if not any(c.name == name for c in self.custom):
                return False
        await self.send(text.strip(), command={"name": name, "arguments": arguments.strip()})
        return True

    async def show_skills(self) -> None:
        assert self.client is not None
        if not server_feature(self.client, "skills"):
            self.console.print("[dim]This server has no skills.[/]")
            return
        listed = await self.client.list_skills(self.folder)
        if listed.enabled is False:
            self.console.print("[dim]Skills are off (CODY_SKILLS=off).[/]")
            return
        if not listed.skills:
            self.console.print(
                "[dim]No skills: put NAME/SKILL.md in .agents/skills, .claude/skills or .github/skills "
                "(or in ~/.claude/skills for every folder).[/]"
            )
            return
        for skill in listed.skills:
            if skill.valid:
                description = escape(" ".join(skill.description.split())[:200])
                print_line(self.console, f"  [bold]{escape(skill.name)}[/] [dim]({skill.source})[/] {description}")
            else:
                print_line(self.console, f"  [red]{escape(skill.name)}[/] [dim]({skill.source}) skipped:[/]")
                self.console.print(f"    {escape(skill.reason or '?')}")  # whole: what to fix
            print_line(self.console, f"    [dim]{escape(skill.path)}[/]")

    async def compact(self) -> None:
        assert self.client is not None
        if self.session_id is None:
            self.console.print("[dim]Nothing to compact yet: send a message first.[/]")
            return
        result = await self.client.compact(self.session_id)
        if result.error is not None:
            self.console.print(f"[red]not compacted[/]: {escape(result.error.message)}", soft_wrap=True)
        elif not result.compacted:
            self.console.print("[dim]Nothing to compact.[/]")
        else:
            self.console.print(
                f"[dim]Compacted: the model now gets {result.messages_after} messages instead of "
                f"{result.messages_before} (about {result.tokens_after:,} tokens instead of {result.tokens_before:,}).[/]"
            )

    async def turns(self) -> list[Checkpoint]:
        """The session's checkpoints, numbered from 1, each with the text of its prompt."""
        assert self.client is not None and self.session_id is not None
        listing = await self.client.list_checkpoints(self.session_id)
        if listing.unavailable:
            self.console.print(f"[yellow]Checkpoints are off on this server:[/] {escape(listing.unavailable)}")
            return []
        page = await self.client.get_session(self.session_id, limit=1000)
        prompts = {m.position: m.content or "" for m in page.messages}
        return [
            Checkpoint(i + 1, c, None if c.position is None else prompts.get(c.position))
            for i, c in enumerate(listing.checkpoints)
        ]

    def show_turns(self, turns: list[Checkpoint]) -> None:
        for turn in turns:
            info = turn.info
            if info.kind == "undo":
                what = f"[dim]before the restore of {format_time(info.created_at)}[/]"
            else:
                prompt = turn.prompt if turn.prompt is not None else f"(the turn at position {info.position})"
                what = escape((prompt.strip().splitlines() or [""])[0][:70])
            files = ", ".join(escape(f"{c.path} ({c.status})") for c in info.changes[:6])
            more = f" and {len(info.changes) - 6} more" if len(info.changes) > 6 else ""
            changed = (
                f"changed {len(info.changes)} file{'s' if len(info.changes) != 1 else ''}: {files}{more}"
                if info.changes
                else "changed no file"
            )
            self.console.print(f"  [bold]{turn.number:>3}[/]  {what}\n       [dim]{changed}[/]", soft_wrap=True)

    async def rewind(self, arg: str) -> None:
        """/rewind: list the turns; /rewind N MODE (or the questions) restores one."""
        if self.session_id is None:
            self.console.print("[dim]Nothing to rewind yet: send a message first.[/]")
            return
        turns = await self.turns()
        if not turns:
            self.console.print("[dim]No checkpoints in this session yet.[/]")
            return
        words = arg.split()
        if not words:
            self.show_turns(turns)
            try:
                picked = (await self.reader.read("Go back to which one? (a number; Enter: none) ", ask=True)).strip()
            except (EOFError, KeyboardInterrupt):
                return
            if not picked:
                return
            words = [picked]
        chosen = next((t for t in turns if str(t.number) == words[0]), None)
        if chosen is None:
            self.console.print(f"[red]no turn {escape(words[0])}[/]: /rewind lists them (1–{len(turns)})")
            return
        mode = words[1].lower() if len(words) > 1 else ""
        if not mode:
            try:
                mode = (
                    await self.reader.read(
                        "Restore both, only the files, or only the conversation? (b/f/c, Enter: both) ", ask=True
                    )
                ).strip().lower() or "both"
            except (EOFError, KeyboardInterrupt):
                return
        restore = RESTORE_MODES.get(mode[:1])
        if restore is None:
            self.console.print("[red]say files, conversation or both[/]")
            return
        assert self.client is not None
        result = await self.client.restore_checkpoint(chosen.info.checkpoint_id, restore, session_id=self.session_id)
        for change in result.files:
            self.console.print(f"  {escape(change.path)} [dim]({change.status})[/]", soft_wrap=True)
        for left in result.not_restored or []:
            self.console.print(f"  [yellow]{escape(left.path)} not restored: {escape(left.reason)}[/]", soft_wrap=True)
        for big in result.skipped or []:
            self.console.print(f"  [dim]{escape(big.path)} left alone: {big.size:,} bytes, over the size cap[/]")
        done = []
        if restore != "conversation":
            done.append(f"{len(result.files)} file(s) restored")
        if result.conversation is not None:
            done.append(f"the conversation now ends before that turn ({result.conversation.position} messages)")
        self.console.print(
            f"[green]Rewound[/]: {'; '.join(done)}. [dim]To undo: /rewind, then the last entry.[/]", soft_wrap=True
        )

    async def fork(self, arg: str) -> None:
        """/fork [N]: a new session with this one's turns before turn N (all of them), which the chat goes on in."""
        if self.session_id is None:
            self.console.print("[dim]Nothing to fork yet: send a message first.[/]")
            return
        assert self.client is not None
        position = None
        if arg:
            turns = await self.turns()
            chosen = next((t for t in turns if str(t.number) == arg and t.info.position is not None), None)
            if chosen is None:
                self.console.print(f"[red]no turn {escape(arg)}[/]: /rewind lists them")
                return
            position = chosen.info.position
        forked = await self.client.fork_session(self.session_id, position=position)
        history = await self.client.get_session(forked.id, limit=10)
        self.console.print(f"[green]Forked[/] {self.session_id} → {forked.id} [dim](files are not touched)[/]")
        self.resumed(history.session, history.messages)

    async def set_model(self, name: str) -> None:
        assert self.client is not None
        if not name:
            self.console.print(f"model: {self.model or '?'}  [dim](/model NAME sets this session's)[/]")
            return
        if self.session_id is None:  # nothing sent yet: the session starts now, with this model
            session = await self.client.create_session(model=name, workspace_folder=self.folder)
        else:
            session = await self.client.update_session(self.session_id, model=name)
        self.session_id, self.model = session.id, session.model
        self.console.print(f"model: {escape(session.model)} [dim](for this session's next runs)[/]")

    async def set_mode(self, mode: str) -> None:
        assert self.client is not None
        if not mode:
            self.console.print(f"mode: {self.mode}  [dim](/mode ask|plan|code sets this session's)[/]")
            return
        chosen = next((m for m in typing.get_args(SessionMode) if m == mode), None)
        if chosen is None:
            self.console.print(f"[red]unknown mode {escape(mode)}[/] — the modes are code, ask and plan")
            return
        if self.session_id is None:  # nothing sent yet: the session starts now, in this mode
            session = await self.client.create_session(
                model=self.model or None, workspace_folder=self.folder, mode=chosen
            )
        else:
            session = await self.client.update_session(self.session_id, mode=chosen)
        self.session_id, self.mode = session.id, session.mode or "code"
        what = {"code": "changes files and runs commands", "ask": "read-only", "plan": "read-only, answers with a plan"}
        self.console.print(f"mode: {self.mode} [dim]({what[self.mode]}; for this session's next runs)[/]")

    def changed_elsewhere(self, params: dict[str, Any]) -> None:
        """`cody/sessionChanged`: another client (an editor's panel, an ACP agent's) changed this
        session's mode or model; the next messages go with it, and the user is told."""
        session = params.get("session")
        changed = params.get("changed")
        if not isinstance(session, dict) or session.get("id") != self.session_id or not isinstance(changed, list):
            return
        mode = next((m for m in typing.get_args(SessionMode) if m == session.get("mode")), None)
        if "mode" in changed and mode is not None and mode != self.mode:
            self.mode = mode
            print_line(self.console, f"[dim]mode: {mode} (set in another client; for this session's next runs)[/]")
        model = session.get("model")
        if "model" in changed and isinstance(model, str) and model and model != self.model:
            self.model = model
            print_line(self.console, f"[dim]model: {escape(model)} (set in another client)[/]")

    def resumed(self, session: SessionInfo, messages: list[Message]) -> None:
        self.session_id = session.id
        self.model = session.model or self.default_model
        self.mode = session.mode or "code"
        console = self.console
        console.print(
            f"Resumed [bold]{escape(session.title)}[/] [dim]({session.id}, {session.message_count} messages, "
            f"model {escape(self.model)})[/]",
            soft_wrap=True,
        )
        if Path(session.workspace_folder).resolve() != self.folder:
            console.print(
                f"[yellow]This session belongs to {escape(session.workspace_folder)}; its tools work there.[/]"
            )
        if messages:
            console.rule("[dim]recent messages[/]", style="dim")
            show_history(console, messages, session.message_count)
            console.rule(style="dim")


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint as /rewind shows it: its number, and its run's prompt (when in the history shown)."""

    number: int
    info: CheckpointInfo
    prompt: str | None


class InterruptOnCtrlC(CancelOnInterrupt):
    """Ctrl+C during a run interrupts the session's running run (cody/interrupt): the messages
    queued behind it go on. Before the session is known, the run is cancelled by its id."""

    def __init__(self, chat: Chat, stream: RunStream, on_first: Any, on_again: Any):
        super().__init__(stream, on_first, on_again)
        self.chat = chat

    async def _cancel(self) -> None:
        client, session_id = self.chat.client, self.chat.session_id
        if client is None or session_id is None:
            await super()._cancel()
            return
        with contextlib.suppress(CodyError):
            await client.interrupt(session_id)


def _status(answer: asyncio.Future[Any]) -> str | None:
    """The status of a run's answer (None: it did not answer with a result)."""
    if not answer.done() or answer.cancelled() or answer.exception() is not None:
        return None
    return str(answer.result().status)


def _message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:20]}"


# ----------------------------------------------------------------------- history

# A resumed session shows its last turns only, however long it is: the turns shown, the messages
# fetched to find them (pages, at most), and per message the lines of its text and the tool calls listed.
HISTORY_TURNS = 3
HISTORY_PAGE, HISTORY_PAGES = 50, 4
PROMPT_LINES, ANSWER_LINES, CALLS_SHOWN, RESULTS_SHOWN = 3, 6, 3, 3


async def recent_messages(client: CodyClient, session_id: str) -> tuple[SessionInfo, list[Message]]:
    """The session and its last messages: enough pages for its last HISTORY_TURNS turns, or as
    many as HISTORY_PAGES give (a turn may hold hundreds of tool calls)."""
    page = await client.get_session(session_id, limit=HISTORY_PAGE)
    messages = page.messages
    for _ in range(HISTORY_PAGES - 1):
        if page.next_before is None or len(_prompts(messages)) >= HISTORY_TURNS:
            break
        page = await client.get_session(session_id, limit=HISTORY_PAGE, before=page.next_before)
        messages = page.messages + messages
    return page.session, messages


def _prompts(messages: list[Message]) -> list[int]:
    """Where the turns start: the prompts the user typed."""
    return [i for i, m in enumerate(messages) if m.role == "user" and m.kind == "message"]


def last_turns(messages: list[Message]) -> list[Message]:
    """The messages of the last HISTORY_TURNS turns (a turn starts at a prompt the user typed)."""
    starts = _prompts(messages)
    return messages[starts[-HISTORY_TURNS] if len(starts) >= HISTORY_TURNS else 0 :]


def show_history(console: Console, messages: list[Message], total: int) -> None:
    """The last turns of a session, compactly: a few lines a message, each line fitted to a
    terminal, whatever the session holds; the messages before them are counted."""
    shown = last_turns(messages)
    earlier = max(0, total - len(shown))
    if earlier:
        console.print(f"[dim]… {earlier:,} earlier message{'s' if earlier != 1 else ''}[/]")
    results = 0  # tool results shown in a row
    for message in shown:
        content = (message.content or "").strip()
        if message.role != "tool":
            if results > RESULTS_SHOWN:
                print_line(console, f"  [dim]{RESULT_MARK} … {results - RESULTS_SHOWN} more results[/]")
            results = 0
        if message.role == "user":
            error = message.error
            if message.kind == "interrupted":
                console.print("[dim](interrupted)[/]")
            elif message.kind == "failed":
                why = f" ({error.code}): {error.message}" if error else ""
                print_line(console, Text(f"✗ failed{why}", style="red"))
            elif message.kind == "compaction":
                console.print("[dim](earlier messages compacted for the model)[/]")
            elif message.kind == "circuit_breaker":
                why = f": {error.message}" if error else ""
                print_line(console, Text(f"⚠ stopped by a safety limit{why}", style="red"))
            else:
                for i, line in enumerate(_first_lines(content, PROMPT_LINES)):
                    print_line(console, Text.assemble(("› " if i == 0 else "  ", "bold green"), line))
        elif message.role == "assistant":
            if content and console.is_terminal and not console.is_dumb_terminal:  # as the answer was shown
                lines = content.splitlines()
                console.print(markdown("\n".join(lines[:ANSWER_LINES])))
                if len(lines) > ANSWER_LINES:
                    console.print(f"[dim]… ({len(lines) - ANSWER_LINES} more lines)[/]")
            for line in _first_lines(content, ANSWER_LINES) if content and not console.is_terminal else []:
                print_line(console, Text(line))
            if content and console.is_terminal and console.is_dumb_terminal:
                for line in _first_lines(content, ANSWER_LINES):
                    print_line(console, Text(line))
            calls = message.tool_calls or []
            for call in calls[:CALLS_SHOWN]:
                try:
                    args = json.loads(call.arguments) if call.arguments else {}
                except (json.JSONDecodeError, TypeError):
                    args = {"raw": call.arguments}
                print_line(
                    console,
                    f"[bold cyan]{TOOL_MARK}[/] [bold]{escape(call.name)}[/] "
                    f"[dim]{escape(summarize_args(call.name, args))}[/]",
                )
            if len(calls) > CALLS_SHOWN:
                print_line(console, f"[dim]… {len(calls) - CALLS_SHOWN} more tool calls[/]")
        elif message.role == "tool":
            results += 1
            if results <= RESULTS_SHOWN:
                first = content.splitlines()[0] if content else ""
                print_line(console, f"  [dim]{RESULT_MARK} {escape(first)}[/]")
    if results > RESULTS_SHOWN:
        print_line(console, f"  [dim]{RESULT_MARK} … {results - RESULTS_SHOWN} more results[/]")


def show_agents(console: Console, listing: AgentList) -> None:
    """`/agents`: each agent with where it comes from and its tools; a file that defines none, with why."""
    for agent in listing.agents:
        where = agent.source if agent.path is None else f"{agent.source} · {agent.path}"
        if not agent.valid:
            console.print(
                f"[red]✗[/] [bold]{escape(agent.name)}[/] [dim]({escape(where)})[/]: {escape(agent.reason or '')}"
            )
            continue
        tools = "every tool but task" if agent.tools == ["*"] else ", ".join(agent.tools) or "no tools"
        model = f" · model {agent.model}" if agent.model else ""
        console.print(f"[bold]{escape(agent.name)}[/] [dim]({escape(where)}) · {escape(tools)}{escape(model)}[/]")
        console.print(f"  {escape(agent.description)}", highlight=False)


def _first_lines(text: str, n: int) -> list[str]:
    lines = text.splitlines()
    return lines[:n] + ([f"… ({len(lines) - n} more lines)"] if len(lines) > n else [])
