"""`cody-lsp sessions`: list the stored sessions, delete them (`rm`) or rename them.

Wherever a session is named (here, `--session` of `chat` and `run`, the chat's
/resume) its id or a unique start of it will do: `resolve_session`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

from rich.console import Console

from ..protocol.wire import INVALID_PARAMS, UNKNOWN_SESSION, SessionInfo, to_wire
from .connection import CodyClient, CodyError
from .render import existing_folder, make_console, print_table, setup_cli_logging

SUBCOMMANDS = ("list", "rm", "rename", "fork")


def exit_code_of_error(exc: CodyError) -> int:
    """2 for what the user got wrong (an unknown session, a bad value), else 1."""
    return 2 if exc.code in (INVALID_PARAMS, UNKNOWN_SESSION) else 1


async def all_sessions(client: CodyClient, workspace_folder: str | Path | None = None) -> AsyncIterator[SessionInfo]:
    """Every stored session (of one folder, or of all), newest first."""
    cursor = None
    while True:
        page = await client.list_sessions(workspace_folder=workspace_folder, limit=1000, cursor=cursor)
        for session in page.sessions:
            yield session
        cursor = page.next_cursor
        if not cursor:
            return


async def resolve_session(client: CodyClient, ref: str) -> SessionInfo:
    """The session `ref` names: its id, or the one session whose id starts with it.
    Raises CodyError (UNKNOWN_SESSION or INVALID_PARAMS) saying what is wrong."""
    ref = ref.strip()
    if not ref:
        raise CodyError(INVALID_PARAMS, "give a session id (cody-lsp sessions lists them)")
    try:
        return (await client.get_session(ref, limit=1)).session
    except CodyError as exc:
        if exc.code != UNKNOWN_SESSION:
            raise
    matches = [session async for session in all_sessions(client) if session.id.startswith(ref)]
    if not matches:
        raise CodyError(UNKNOWN_SESSION, f"no session '{ref}' (cody-lsp sessions --all lists them)")
    if len(matches) > 1:
        raise CodyError(INVALID_PARAMS, f"{len(matches)} sessions start with '{ref}': give more of the id")
    return matches[0]


async def session_exists(client: CodyClient, session_id: str) -> bool:
    """Whether the session is still stored (a run that made its session and failed before
    anything happened leaves none behind; another client may have deleted it)."""
    try:
        await client.get_session(session_id, limit=1)
    except CodyError as exc:
        if exc.code != UNKNOWN_SESSION:
            raise
        return False
    return True


def format_time(stamp: str) -> str:
    """An ISO UTC timestamp as local 'YYYY-MM-DD HH:MM'."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def print_sessions(console: Console, sessions: list[SessionInfo], *, show_folder: bool, current: str | None = None):
    """The sessions as a table: id, title, message count, last update (and folder)."""
    headers = ["id", "title", "msgs", "updated"] + (["folder"] if show_folder else [])
    rows, bold = [], set()
    for i, s in enumerate(sessions):
        mark = "* " if s.id == current else ""
        if mark:
            bold.add(i)
        row = [f"{mark}{s.id}", s.title, str(s.message_count), format_time(s.updated_at)]
        rows.append(row + ([s.workspace_folder] if show_folder else []))
    print_table(console, headers, rows, bold_rows=frozenset(bold))


# ---------------------------------------------------------------------- command


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp sessions",
        description="List the stored sessions (the default), delete, rename or fork them. "
        "A session id may be shortened to a unique start of it.",
    )
    commands = parser.add_subparsers(dest="action", metavar="ACTION", title="actions")
    listing = commands.add_parser(
        "list", prog="cody-lsp sessions [list]", help="list a folder's sessions, newest first (the default)"
    )
    listing.add_argument("--all", "-a", action="store_true", help="list the sessions of every folder")
    listing.add_argument("--workspace", "-w", metavar="DIR", help="workspace folder (default: the current folder)")
    listing.add_argument("--limit", "-n", type=int, default=20, help="how many to show (default: 20)")
    listing.add_argument("--json", action="store_true", help="print one JSON object a line")
    remove = commands.add_parser("rm", prog="cody-lsp sessions rm", help="delete sessions")
    remove.add_argument("ids", nargs="+", metavar="ID", help="a session id (or a unique start of one)")
    rename = commands.add_parser("rename", prog="cody-lsp sessions rename", help="give a session a new title")
    rename.add_argument("id", metavar="ID", help="a session id (or a unique start of one)")
    rename.add_argument("title", metavar="TITLE", help="the new title")
    fork = commands.add_parser(
        "fork", prog="cody-lsp sessions fork", help="copy a session (up to a turn) into a new session of its folder"
    )
    fork.add_argument("id", metavar="ID", help="a session id (or a unique start of one)")
    fork.add_argument(
        "--position",
        "-p",
        type=int,
        metavar="N",
        help="end the copy just before the turn whose prompt is at this position (default: copy all of it)",
    )
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        parser.error(f"unknown action '{argv[0]}'; try: {', '.join(SUBCOMMANDS)}")
    if not argv or argv[0] not in (*SUBCOMMANDS, "-h", "--help"):
        argv = ["list", *argv]
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    setup_cli_logging()
    folder = None
    if args.action == "list":
        if not 1 <= args.limit <= 1000:
            print("cody-lsp sessions: --limit must be between 1 and 1000", file=sys.stderr)
            return 2
        folder = existing_folder("sessions", args.workspace)
        if folder is None:
            return 2
    try:
        return asyncio.run(_main(args, folder))
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace, folder: Path | None) -> int:
    console = make_console()
    err = make_console(stderr=True)
    try:
        client = await CodyClient.spawn(workspace_folders=[folder] if folder else [])
    except CodyError as exc:
        err.print(f"cody-lsp sessions: {exc.message}", soft_wrap=True, markup=False)
        return exit_code_of_error(exc)
    try:
        if args.action == "list":  # answered while the server still loads: it is stopped, not waited for
            try:
                return await _list(client, args, folder, console)
            finally:
                await client.close(quick=True)
        async with client:
            if args.action == "rm":
                return await _remove(client, args.ids, console, err)
            session = await resolve_session(client, args.id)
            if args.action == "fork":
                forked = await client.fork_session(session.id, position=args.position)
                console.print(
                    f"forked {session.id} into {forked.id}: {forked.title} ({forked.message_count} messages); "
                    f"continue it with: cody-lsp chat --session {forked.id}",
                    soft_wrap=True,
                    markup=False,
                )
                return 0
            updated = await client.update_session(session.id, title=args.title)
            console.print(f"renamed {updated.id}: {updated.title}", soft_wrap=True, markup=False)
            return 0
    except CodyError as exc:
        err.print(f"cody-lsp sessions: {exc.message}", soft_wrap=True, markup=False)
        return exit_code_of_error(exc)


async def _list(client: CodyClient, args: argparse.Namespace, folder: Path | None, console: Console) -> int:
    page = await client.list_sessions(workspace_folder=None if args.all else folder, limit=args.limit)
    if args.json:
        for session in page.sessions:
            print(json.dumps(to_wire(session), ensure_ascii=False))
        return 0
    if not page.sessions:
        where = "yet" if args.all else f"in {folder} yet (--all lists every folder's)"
        console.print(f"No sessions {where}.", markup=False)
        return 0
    print_sessions(console, page.sessions, show_folder=args.all)
    if page.next_cursor:
        console.print(f"[dim]… more: show them with --limit {min(args.limit * 5, 1000)}[/]")
    return 0


async def _remove(client: CodyClient, refs: list[str], console: Console, err: Console) -> int:
    code = 0
    for ref in refs:
        try:
            session = await resolve_session(client, ref)
            await client.delete_session(session.id)
        except CodyError as exc:
            err.print(f"cody-lsp sessions rm: {exc.message}", soft_wrap=True, markup=False)
            code = max(code, exit_code_of_error(exc))
            continue
        console.print(f"deleted {session.id} ({session.title})", soft_wrap=True, markup=False)
    return code
