"""`cody-lsp run "PROMPT"` (one turn, for scripts and CI) and `cody-lsp sessions`.

`run` streams the turn as the chat shows it, or with `--json` prints every
chunk as one JSON object a line (session_start first, a terminal chunk last).
Ctrl+C cancels the run (a second one stops waiting). Exit codes: 0 done,
1 error, 2 bad usage (e.g. an unknown session), 3 stopped by a safety limit,
130 cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..wire import INVALID_PARAMS, UNKNOWN_SESSION, to_wire
from .connection import CodyClient, CodyError, RunStream
from .render import ChunkRenderer, make_console, preflight, setup_cli_logging

EXIT_CODES = {"done": 0, "error": 1, "circuit_breaker": 3, "cancelled": 130}


class CancelOnInterrupt:
    """While active, Ctrl+C (SIGINT) cancels the run instead of ending the process.

    The first Ctrl+C asks the server to cancel the run (the run then ends with a
    `cancelled` chunk as usual) and calls `on_first`; a second one calls `on_again`.
    """

    def __init__(
        self, stream: RunStream, on_first: Callable[[], Any] | None = None, on_again: Callable[[], Any] | None = None
    ):
        self.stream = stream
        self.on_first = on_first
        self.on_again = on_again
        self.count = 0
        self._installed = False

    def __enter__(self) -> CancelOnInterrupt:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.interrupt)
            self._installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            self._installed = False

    def interrupt(self) -> None:
        """What a Ctrl+C does (the signal handler while active)."""
        self.count += 1
        if self.count == 1:
            if self.on_first is not None:
                self.on_first()
            asyncio.ensure_future(self._cancel())
        elif self.on_again is not None:
            self.on_again()

    async def _cancel(self) -> None:
        try:
            await self.stream.cancel()
        except CodyError:
            pass


@contextlib.contextmanager
def stop_on_termination():
    """SIGTERM or SIGHUP cancels the current task, so its `finally` still closes the
    client (and the server with it) instead of the process vanishing mid-run."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def exit_code_of_error(exc: CodyError) -> int:
    return 2 if exc.code in (INVALID_PARAMS, UNKNOWN_SESSION) else 1


# ------------------------------------------------------------------------- run


def parse_run_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp run",
        description="Run one prompt to the end and exit (for scripts and CI).",
        epilog="Exit codes: 0 done, 1 error, 2 bad usage or unknown session, 3 stopped by a safety limit, "
        "130 cancelled (Ctrl+C). Needs CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY.",
    )
    parser.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="what to do; '-' (or nothing, with input piped in) reads it from stdin",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="continue this session")
    which.add_argument(
        "--continue", "-c", dest="cont", action="store_true", help="continue the latest session of the workspace folder"
    )
    parser.add_argument(
        "--workspace", "-w", metavar="DIR", default=".", help="workspace folder (default: the current folder)"
    )
    parser.add_argument("--json", action="store_true", help="print every chunk as one JSON object a line")
    return parser.parse_args(argv)


def run_main(argv: list[str]) -> int:
    args = parse_run_args(argv)
    prompt = args.prompt
    if prompt in (None, "-"):
        if prompt is None and sys.stdin.isatty():
            print("cody-lsp run: give a PROMPT (or '-' to read it from stdin)", file=sys.stderr)
            return 2
        prompt = sys.stdin.read()
    if not prompt.strip():
        print("cody-lsp run: the prompt is empty", file=sys.stderr)
        return 2
    folder = preflight("run", args.workspace)
    if folder is None:
        return 2
    try:
        return asyncio.run(_run(args, prompt, folder))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM / SIGHUP
        return 143
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


async def _run(args: argparse.Namespace, prompt: str, folder: Path) -> int:
    err = make_console(stderr=True)
    console = make_console()
    try:
        client = await CodyClient.spawn(workspace_folders=[folder])
    except CodyError as exc:
        err.print(f"[red]cody-lsp run: could not start the server:[/] {exc.message}")
        return 1
    try:
        with stop_on_termination():
            return await _run_turn(client, args, prompt, folder, console, err)
    finally:
        await client.close()


async def _run_turn(client: CodyClient, args: argparse.Namespace, prompt: str, folder: Path, console, err) -> int:
    try:
        session_id = args.session
        if args.cont:
            latest = await client.latest_session(folder)
            if latest is None:
                err.print(f"[dim]no earlier session in {folder}; starting a new one[/]")
            else:
                session_id = latest.id
        stream = client.stream(prompt, session_id=session_id)
        renderer = ChunkRenderer(console)
        waiting = asyncio.current_task()
        gave_up: list[bool] = []

        def again() -> None:
            gave_up.append(True)
            if waiting is not None:
                waiting.cancel()

        def first() -> None:
            if not args.json:
                renderer.line_break()
            err.print("[yellow]cancelling… (Ctrl+C again to stop waiting)[/]")

        try:
            with CancelOnInterrupt(stream, first, again):
                async for chunk in stream:
                    if args.json:
                        sys.stdout.write(json.dumps(chunk, ensure_ascii=False) + "\n")
                        sys.stdout.flush()
                    else:
                        renderer.handle(chunk)
                result = await stream.result()
        except asyncio.CancelledError:
            if not gave_up:
                raise
            err.print("[yellow]stopped waiting for the run[/]")
            return 130
        if not args.json:
            renderer.line_break()
            err.print(
                f'[dim]session {result.session_id} · continue with: cody-lsp run --session {result.session_id} "…"[/]',
                soft_wrap=True,
            )
        return EXIT_CODES.get(result.status, 1)
    except CodyError as exc:
        err.print(f"[red]cody-lsp run: {exc.message}[/]")
        return exit_code_of_error(exc)


# -------------------------------------------------------------------- sessions


def parse_sessions_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp sessions", description="List the sessions of a workspace folder, newest first."
    )
    parser.add_argument("--all", "-a", action="store_true", help="list the sessions of every folder")
    parser.add_argument(
        "--workspace", "-w", metavar="DIR", default=".", help="workspace folder (default: the current folder)"
    )
    parser.add_argument("--limit", "-n", type=int, default=20, help="how many to show (default: 20)")
    parser.add_argument("--json", action="store_true", help="print one JSON object a line")
    return parser.parse_args(argv)


def sessions_main(argv: list[str]) -> int:
    args = parse_sessions_args(argv)
    if not 1 <= args.limit <= 1000:
        print("cody-lsp sessions: --limit must be between 1 and 1000", file=sys.stderr)
        return 2
    folder = Path(args.workspace).expanduser().resolve()
    try:
        return asyncio.run(_sessions(args, folder))
    except KeyboardInterrupt:
        return 130


def format_time(stamp: str) -> str:
    """An ISO UTC timestamp as local 'YYYY-MM-DD HH:MM'."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def sessions_table(sessions: list, *, show_folder: bool, current: str | None = None):
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("id", no_wrap=True)
    table.add_column("title", overflow="ellipsis", no_wrap=True, ratio=1)
    table.add_column("msgs", justify="right", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    if show_folder:
        table.add_column("folder", overflow="ellipsis", no_wrap=True)
    for s in sessions:
        mark = "* " if s.id == current else ""
        row = [f"{mark}{s.id}", s.title, str(s.message_count), format_time(s.updated_at)]
        if show_folder:
            row.append(s.workspace_folder)
        table.add_row(*row, style="bold" if mark else None)
    return table


async def _sessions(args: argparse.Namespace, folder: Path) -> int:
    console = make_console()
    err = make_console(stderr=True)
    try:
        async with await CodyClient.spawn(workspace_folders=[folder] if folder.is_dir() else []) as client:
            page = await client.list_sessions(workspace_folder=None if args.all else folder, limit=args.limit)
    except CodyError as exc:
        err.print(f"[red]cody-lsp sessions: {exc.message}[/]")
        return exit_code_of_error(exc)
    if args.json:
        for session in page.sessions:
            print(json.dumps(to_wire(session), ensure_ascii=False))
        return 0
    if not page.sessions:
        where = "yet" if args.all else f"in {folder} yet (--all lists every folder's)"
        console.print(f"No sessions {where}.")
        return 0
    console.print(sessions_table(page.sessions, show_folder=args.all))
    if page.next_cursor:
        console.print(f"[dim]… more: show them with --limit {min(args.limit * 5, 1000)}[/]")
    return 0


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("run", [])
    setup_cli_logging()
    if command == "sessions":
        return sessions_main(rest)
    return run_main(rest)
