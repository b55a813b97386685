"""`cody-lsp chat`: a terminal chat over the cody/* protocol.

Text streams as it arrives, tool calls and results take a line each, and the
approvals of mutating tools are asked inline. Ctrl+C during a run cancels the
run and returns to the prompt (the session goes on); at the prompt Ctrl+C or
Ctrl+D leaves. Line editing and history come from prompt_toolkit, rendering
from rich.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..wire import SessionInfo
from .connection import CodyClient, CodyConnectionError, CodyError, RunStream
from .oneshot import CancelOnInterrupt, sessions_table, stop_on_termination
from .render import (
    RESULT_MARK,
    TOOL_MARK,
    ChunkRenderer,
    make_console,
    preflight,
    setup_cli_logging,
    summarize_args,
)

HELP = """\
[bold]Commands[/]
  /help          this help
  /clear         start a new session (the current one stays listed)
  /sessions      list this folder's sessions
  /resume ID     continue a session (an id from /sessions, or a unique start of one)
  /exit          leave (also Ctrl+D, or Ctrl+C at the prompt)
[bold]Keys[/]
  Enter sends the message · Ctrl+C during a run cancels it · ↑/↓ recall earlier messages"""

PROMPT = "› "
ASK_CHOICES = {
    "": "allow",
    "y": "allow",
    "yes": "allow",
    "a": "allow_always",
    "always": "allow_always",
    "n": "deny",
    "no": "deny",
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp chat",
        description="Chat with the coding agent in a workspace folder.",
        epilog="Needs CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY (try `cody-lsp demo` without them).",
    )
    parser.add_argument(
        "--workspace", "-w", metavar="DIR", default=".", help="workspace folder (default: the current folder)"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--continue", "-c", dest="cont", action="store_true", help="continue the folder's latest session"
    )
    which.add_argument("--session", metavar="ID", help="continue this session")
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="allow every tool call without asking (file writes and commands included)",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    setup_cli_logging()
    folder = preflight("chat", args.workspace)
    if folder is None:
        return 2
    try:
        return asyncio.run(Chat(args, folder).main())
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM / SIGHUP: the server was shut down on the way out
        return 143


class LineReader:
    """Reads the user's lines: prompt_toolkit on a terminal, plain lines otherwise.

    `interrupt()` (a Ctrl+C that arrived as a signal) makes the current read, or
    the next one, raise KeyboardInterrupt, as Ctrl+C typed at a prompt does.
    """

    def __init__(self, console: Console):
        self.console = console
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self._session: Any = None
        self._ask_session: Any = None
        self._task: asyncio.Task | None = None
        self._interrupted: asyncio.Task | None = None
        self._pending = False
        if self.interactive:
            from prompt_toolkit import PromptSession

            self._session = PromptSession(history=_history())
            self._ask_session = PromptSession()

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def interrupt(self) -> None:
        if self.busy:
            self._interrupted = self._task
            self._task.cancel()  # type: ignore[union-attr]
        else:
            self._pending = True

    async def read(self, message: str, *, ask: bool = False) -> str:
        """A line (without the newline); EOFError on Ctrl+D, KeyboardInterrupt on Ctrl+C."""
        if self._pending:
            self._pending = False
            raise KeyboardInterrupt
        task = self._task = asyncio.ensure_future(self._read(message, ask))
        try:
            kind, line = await task
        except asyncio.CancelledError:
            if self._interrupted is task:
                raise KeyboardInterrupt from None
            raise
        finally:
            self._task = None
        if kind == "interrupt":
            raise KeyboardInterrupt
        if kind == "eof":
            raise EOFError
        return line

    async def _read(self, message: str, ask: bool) -> tuple[str, str]:
        # KeyboardInterrupt must not leave a task (asyncio would end the loop with it).
        try:
            return "line", await self._read_line(message, ask)
        except KeyboardInterrupt:
            return "interrupt", ""
        except EOFError:
            return "eof", ""

    async def _read_line(self, message: str, ask: bool) -> str:
        if self.interactive:
            from prompt_toolkit.formatted_text import FormattedText

            session = self._ask_session if ask else self._session
            styled = FormattedText([("bold ansiyellow" if ask else "bold ansigreen", message)])
            # The chat's own SIGINT handler stays in place (see Chat.on_sigint).
            return await session.prompt_async(styled, handle_sigint=False)
        self.console.print(message, end="")
        line = await _read_stdin_line()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        self.console.print(line, markup=False)  # the input was not echoed: show it in the transcript
        return line


def _history() -> Any:
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    from ..config import db_path

    try:
        path = db_path().parent / "chat-history"
        path.parent.mkdir(parents=True, exist_ok=True)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


async def _read_stdin_line() -> str:
    """sys.stdin.readline() in a daemon thread (an exit never waits for it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = sys.stdin.readline()
        except Exception:
            line = ""
        loop.call_soon_threadsafe(lambda: future.done() or future.set_result(line))

    threading.Thread(target=read, daemon=True).start()
    return await future


class Chat:
    def __init__(self, args: argparse.Namespace, folder: Path):
        self.args = args
        self.folder = folder
        self.console = make_console()
        self.renderer = ChunkRenderer(self.console)
        self.reader = LineReader(self.console)
        self.client: CodyClient | None = None
        self.session: SessionInfo | None = None
        self.session_id: str | None = None
        self.stream: RunStream | None = None
        self.interrupt: CancelOnInterrupt | None = None

    # ----------------------------------------------------------------- main

    async def main(self) -> int:
        handler = (lambda _params: "allow") if self.args.yes else self.ask_permission
        try:
            self.client = await CodyClient.spawn(workspace_folders=[self.folder], permission_handler=handler)
        except CodyError as exc:
            self.console.print(f"[red]could not start the cody-lsp server:[/] {escape(exc.message)}")
            return 1
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self.on_sigint)
        except (NotImplementedError, RuntimeError):  # no signal handlers here: Ctrl+C stays KeyboardInterrupt
            pass
        try:
            with stop_on_termination():
                if not await self.open_session():
                    return 2
                return await self.loop()
        except CodyConnectionError as exc:
            self.renderer.line_break()
            self.console.print(f"[red]the server stopped:[/] {escape(exc.message)}")
            return 1
        finally:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signal.SIGINT)
            await self.client.close()

    def on_sigint(self) -> None:
        """Ctrl+C as a signal: cancels the run if one is going, else acts like Ctrl+C at a prompt.

        (At a prompt the terminal is in raw mode and Ctrl+C arrives as a key; the
        signal comes during a run, or in the moment before a prompt is ready.)
        """
        if self.interrupt is not None and not self.reader.busy:
            self.interrupt.interrupt()
        else:
            self.reader.interrupt()

    async def open_session(self) -> bool:
        assert self.client is not None
        console = self.console
        model = os.environ.get("CODY_MODEL", "")
        console.print(
            Text.assemble(
                ("cody", "bold cyan"), " · chat   ", ("model ", "dim"), model, ("  folder ", "dim"), str(self.folder)
            )
        )
        if self.args.session:
            try:
                page = await self.client.get_session(self.args.session, limit=10)
            except CodyError as exc:
                console.print(f"[red]{escape(exc.message)}[/]")
                return False
            self.resumed(page.session, page.messages)
        elif self.args.cont:
            latest = await self.client.latest_session(self.folder)
            if latest is None:
                console.print("[dim]No earlier session in this folder: starting a new one.[/]")
            else:
                page = await self.client.get_session(latest.id, limit=10)
                self.resumed(page.session, page.messages)
        else:
            console.print("[dim]New session.[/]")
        console.print("[dim]Enter sends · Ctrl+C cancels a run · Ctrl+D or /exit quits · /help for commands[/]")
        return True

    async def loop(self) -> int:
        while True:
            self.console.print()
            try:
                line = await self.reader.read(PROMPT)
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                return 0
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
                    self.console.print(f"[red]✗ {escape(exc.message)}[/]")
                continue
            await self.send(line)

    # ----------------------------------------------------------------- runs

    async def send(self, prompt: str) -> None:
        assert self.client is not None
        stream = self.client.stream(prompt, session_id=self.session_id)
        self.stream = stream
        consume = asyncio.ensure_future(self._consume(stream))
        gave_up: list[bool] = []

        def first() -> None:
            self.renderer.line_break()
            self.console.print("[yellow]cancelling… (Ctrl+C again to stop waiting)[/]")

        def again() -> None:
            gave_up.append(True)
            consume.cancel()

        self.interrupt = CancelOnInterrupt(stream, first, again)  # driven by on_sigint
        try:
            await consume
            result = await stream.result()
            self.session_id = result.session_id
        except asyncio.CancelledError:
            if not gave_up:  # not the second Ctrl+C: the chat itself is being stopped
                raise
            self.renderer.line_break()
            self.console.print("[yellow]stopped waiting for the run[/]")
            self.session_id = stream.session_id or self.session_id
        except CodyConnectionError:
            raise
        except CodyError as exc:
            self.renderer.line_break()
            self.console.print(f"[red]✗ {escape(exc.message)}[/]")
            if exc.code == -32001:  # the session was deleted meanwhile
                self.session_id = None
        finally:
            self.stream = None
            self.interrupt = None

    async def _consume(self, stream: RunStream) -> None:
        async for chunk in stream:
            if chunk.get("type") == "session_start":
                self.session_id = chunk.get("sessionId")
            self.renderer.handle(chunk)
        self.renderer.line_break()

    async def ask_permission(self, params: dict[str, Any]) -> str:
        """Ask inline whether a tool may run."""
        await asyncio.sleep(0.02)  # let the tool_call chunk that came first be shown
        self.renderer.line_break()
        tool = str(params.get("toolName", "?"))
        args = params.get("args") or {}
        for line in _preview(tool, args):
            self.console.print(line, no_wrap=True, overflow="ellipsis")
        try:
            while True:
                answer = await self.reader.read(f"Allow {tool}? [Y]es · [a]lways · [n]o ", ask=True)
                choice = ASK_CHOICES.get(answer.strip().lower())
                if choice is not None:
                    break
                self.console.print("[dim]answer y (yes), a (always, for this session) or n (no)[/]")
        except (EOFError, KeyboardInterrupt):
            # Ctrl+C at an approval: deny, and cancel the run as Ctrl+C does during a run.
            if self.interrupt is not None:
                self.interrupt.interrupt()
            return "deny"
        if choice == "deny":
            self.console.print(f"  [dim]{RESULT_MARK}[/] [yellow]denied[/]")
        return choice

    # ----------------------------------------------------------------- commands

    async def command(self, text: str) -> str | None:
        assert self.client is not None
        name, _, arg = text.partition(" ")
        name, arg = name.lower(), arg.strip()
        console = self.console
        if name in ("/exit", "/quit", "/q"):
            return "exit"
        if name in ("/help", "/?"):
            console.print(HELP)
        elif name in ("/clear", "/new"):
            self.session_id = None
            console.rule("[dim]new session[/]", style="dim")
            console.print("[dim]The previous session stays listed in /sessions.[/]")
        elif name == "/sessions":
            page = await self.client.list_sessions(workspace_folder=self.folder, limit=30)
            if not page.sessions:
                console.print("[dim]No sessions in this folder yet.[/]")
            else:
                console.print(sessions_table(page.sessions, show_folder=False, current=self.session_id))
                if self.session_id is None:
                    console.print("[dim]The current conversation is new: it is listed once you send a message.[/]")
        elif name == "/resume":
            await self.resume(arg)
        else:
            console.print(f"[red]unknown command {escape(name)}[/] — /help lists the commands")
        return None

    async def resume(self, arg: str) -> None:
        assert self.client is not None
        console = self.console
        if not arg:
            console.print("usage: /resume ID  (/sessions lists the ids)")
            return
        session_id = arg
        try:
            page = await self.client.get_session(session_id, limit=10)
        except CodyError as exc:
            if exc.code != -32001:
                raise
            listed = (await self.client.list_sessions(workspace_folder=self.folder, limit=200)).sessions
            matches = [s for s in listed if s.id.startswith(arg)]
            if len(matches) != 1:
                console.print(
                    f"[red]no session {escape(arg)!s}[/]"
                    if not matches
                    else f"[red]{len(matches)} sessions start with {escape(arg)}; give more of the id[/]"
                )
                return
            page = await self.client.get_session(matches[0].id, limit=10)
        self.resumed(page.session, page.messages)

    def resumed(self, session: SessionInfo, messages: list) -> None:
        self.session = session
        self.session_id = session.id
        console = self.console
        console.print(
            f"Resumed [bold]{escape(session.title)}[/] [dim]({session.id}, {session.message_count} messages)[/]"
        )
        if session.workspace_folder != str(self.folder):
            console.print(
                f"[yellow]This session belongs to {escape(session.workspace_folder)}; its tools work there.[/]"
            )
        if messages:
            console.rule("[dim]recent messages[/]", style="dim")
            show_history(console, messages)
            console.rule(style="dim")


# ----------------------------------------------------------------------- helpers


def _preview(tool: str, args: dict[str, Any]) -> list[str]:
    """What a tool call will do, in a few lines, before it is approved."""
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


def show_history(console: Console, messages: list) -> None:
    """Earlier messages of a session, compactly."""
    for message in messages:
        content = (message.content or "").strip()
        if message.role == "user":
            if message.kind == "interrupted":
                console.print("[dim](interrupted)[/]")
            else:
                console.print(Text.assemble(("› ", "bold green"), _first_lines(content, 3)))
        elif message.role == "assistant":
            if content:
                console.print(_first_lines(content, 6))
            for call in message.tool_calls or []:
                try:
                    args = json.loads(call.arguments) if call.arguments else {}
                except (json.JSONDecodeError, TypeError):
                    args = {"raw": call.arguments}
                console.print(
                    f"[bold cyan]{TOOL_MARK}[/] [bold]{escape(call.name)}[/] "
                    f"[dim]{escape(summarize_args(call.name, args))}[/]",
                    no_wrap=True,
                    overflow="ellipsis",
                )
        elif message.role == "tool":
            first = content.splitlines()[0] if content else ""
            console.print(f"  [dim]{RESULT_MARK} {escape(first)}[/]", no_wrap=True, overflow="ellipsis")


def _first_lines(text: str, n: int) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:n]) + (f"\n… ({len(lines) - n} more lines)" if len(lines) > n else "")
