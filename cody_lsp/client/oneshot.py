"""`cody-lsp run "PROMPT"`: one turn, for scripts and CI.

`run` streams the turn as the chat shows it, or with `--json` prints every
chunk as one JSON object a line (session_start first, a terminal chunk last).
In a terminal it asks before a tool changes anything, as the chat does;
elsewhere such tools need `--yes`, and without it they are refused (the model
is told, and the output says so). Ctrl+C cancels the run (a second one, while
the cancel is under way, stops waiting). Exit codes: 0 done, 1 error, 2 bad
usage (e.g. an unknown session), 3 stopped by a safety limit, 4 done but a tool call
was refused (so CI notices what did not run), 130 cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..protocol.wire import INVALID_PARAMS
from .approvals import RefuseWithoutYes, TerminalApprover, add_yes_flag
from .connection import CodyClient, CodyError, PermissionHandler
from .interrupts import CancelOnInterrupt, stop_on_termination
from .reader import LineReader
from .render import ChunkRenderer, make_console, preflight, setup_cli_logging
from .sessions import exit_code_of_error, resolve_session, session_exists

EXIT_CODES = {"done": 0, "error": 1, "circuit_breaker": 3, "cancelled": 130}
# The run ended `done`, but this command refused a tool call (nobody could be asked and --yes
# was not given, or the person answered no): CI notices what did not run.
REFUSED = 4


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp run",
        description="Run one prompt to the end and exit (for scripts and CI). In a terminal, tools that change "
        "files or run commands are asked about; elsewhere they need --yes.",
        epilog="Exit codes: 0 done, 1 error, 2 bad usage or unknown session, 3 stopped by a safety limit, "
        "4 done but a tool call was refused (no --yes where nobody can be asked, or answered no), 130 cancelled (Ctrl+C). Needs CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY.",
    )
    parser.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="what to do; '-' (or nothing, with input piped in) reads it from stdin",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="continue this session (its id, or a unique start of it)")
    which.add_argument(
        "--continue", "-c", dest="cont", action="store_true", help="continue the latest session of the workspace folder"
    )
    parser.add_argument(
        "--workspace",
        "-w",
        metavar="DIR",
        help="workspace folder (default: the current folder; with --session: the session's, which -w must match)",
    )
    parser.add_argument("--json", action="store_true", help="print every chunk as one JSON object a line")
    add_yes_flag(parser)
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    setup_cli_logging()
    prompt = args.prompt
    if prompt in (None, "-"):
        if prompt is None and sys.stdin.isatty():
            print("cody-lsp run: give a PROMPT (or '-' to read it from stdin)", file=sys.stderr)
            return 2
        prompt = sys.stdin.read()
    if not prompt.strip():
        print("cody-lsp run: the prompt is empty", file=sys.stderr)
        return 2
    folder = preflight("run", args.workspace, resuming=bool(args.session))
    if folder is None:
        return 2
    try:
        return asyncio.run(OneShot(args, prompt, folder).main())
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM / SIGHUP
        return 143
    except BrokenPipeError:
        _quiet_stdout()
        return 1


def _quiet_stdout() -> None:
    """The reader of our output went away (e.g. `| head`): stop quietly."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class OneShot:
    def __init__(self, args: argparse.Namespace, prompt: str, folder: Path):
        self.args = args
        self.prompt = prompt
        self.folder = folder
        self.console = make_console()
        self.err = make_console(stderr=True)
        self.renderer = ChunkRenderer(self.console)
        self.interrupt: CancelOnInterrupt | None = None
        self.refuser: RefuseWithoutYes | None = None
        self.approver: TerminalApprover | None = None
        self.run_id: str | None = None
        self.waiting: asyncio.Future | None = None
        self.broken_pipe = False

    def permission_handler(self) -> PermissionHandler:
        if self.args.yes:
            return lambda _params: "allow"
        if not self.args.json and sys.stdin.isatty() and sys.stdout.isatty():
            reader = LineReader(self.console, history=False)
            self.approver = TerminalApprover(self.console, reader, self.renderer, on_interrupt=self._interrupt)
            return self.approver
        self.refuser = RefuseWithoutYes(None if self.args.json else self.renderer)
        return self.refuser

    def _interrupt(self) -> None:
        if self.interrupt is not None:
            self.interrupt.interrupt()

    async def main(self) -> int:
        try:
            client = await CodyClient.spawn(
                workspace_folders=[self.folder],
                permission_handler=self.permission_handler(),
                wants=() if self.args.json else ("editDiffs",),  # what an edit changed, shown after it
            )
        except CodyError as exc:
            self.err.print(f"cody-lsp run: could not start the server: {exc.message}", markup=False)
            return 1
        client.on_chunk.append(self.show)
        try:
            with stop_on_termination():
                return await self.run(client)
        except CodyError as exc:
            self.renderer.close_live()
            self.err.print(f"cody-lsp run: {exc.message}", markup=False)
            return exit_code_of_error(exc)
        finally:
            await client.close()
            if self.broken_pipe:
                _quiet_stdout()

    async def session_to_continue(self, client: CodyClient) -> str | None:
        """The session the run continues (None: a new one); CodyError when it cannot be."""
        if self.args.session:
            session = await resolve_session(client, self.args.session)
            if self.args.workspace is not None and Path(session.workspace_folder).resolve() != self.folder:
                raise CodyError(
                    INVALID_PARAMS,
                    f"session {session.id} belongs to {session.workspace_folder}, not {self.folder}; "
                    "leave out -w to continue it in its own folder",
                )
            return session.id
        if self.args.cont:
            latest = await client.latest_session(self.folder)
            if latest is None:
                self.err.print(f"[dim]no earlier session in {self.folder}; starting a new one[/]")
                return None
            return latest.id
        return None

    def show(self, chunk: dict[str, Any]) -> None:
        """Each chunk of our run, the moment it is received (so it is on screen before a
        permission request that came after it)."""
        if chunk.get("runId") != self.run_id or self.broken_pipe:
            return
        try:
            if self.args.json:
                sys.stdout.write(json.dumps(chunk, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                self.renderer.handle(chunk)
        except BrokenPipeError:
            self.broken_pipe = True
            if self.waiting is not None:
                self.waiting.cancel()

    async def run(self, client: CodyClient) -> int:
        args, err = self.args, self.err
        continued = await self.session_to_continue(client)
        stream = client.stream(self.prompt, session_id=continued)
        self.run_id = stream.run_id
        self.waiting = waiting = asyncio.ensure_future(stream.result())
        gave_up: list[bool] = []

        def first() -> None:
            if not args.json:
                self.renderer.line_break()
            err.print("[yellow]cancelling… (Ctrl+C again to stop waiting)[/]")

        def again() -> None:
            gave_up.append(True)
            waiting.cancel()

        try:
            with CancelOnInterrupt(stream, first, again) as self.interrupt:
                result = await waiting
        except asyncio.CancelledError:
            if self.broken_pipe:
                return 1
            if not gave_up:
                raise
            err.print("[yellow]stopped waiting for the run[/]")
            return 130
        finally:
            self.interrupt = None
        if not args.json:
            self.renderer.close_live()
        summary = self.refuser.summary() if self.refuser is not None else None
        if summary:
            err.print(f"cody-lsp run: {summary}", markup=False, style="yellow")
        if not args.json:
            if continued is None and result.status != "done" and not await session_exists(client, result.session_id):
                # A run that made its session and failed before anything happened leaves none behind.
                err.print("[dim]no session was kept: nothing happened in it[/]")
            else:
                err.print(
                    f'[dim]session {result.session_id} · continue with: cody-lsp run --session {result.session_id} "…"[/]',
                    soft_wrap=True,
                )
        code = EXIT_CODES.get(result.status, 1)
        return REFUSED if code == 0 and self.refusals() else code

    def refusals(self) -> int:
        """How many tool calls of the run this command refused (nobody to ask, or the person said no)."""
        return (len(self.refuser.refused) if self.refuser is not None else 0) + (
            self.approver.denied if self.approver is not None else 0
        )
