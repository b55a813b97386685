"""`cody-lsp demo [DIR]`: the whole product, offline.

A scripted model (`ScriptedProvider`, in this process) plays a built-in coding
scenario; everything else is real: the server subprocess, its SQLite database,
the tools that write files and run commands in DIR, and the client that
streams the chunks and renders them the way `cody-lsp chat` does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from rich.panel import Panel
from rich.text import Text

from ..testing.provider import ScriptedProvider
from ..testing.scenarios import FILES, demo_script, demo_turns
from .connection import CodyClient, CodyError
from .interrupts import stop_on_termination
from .render import ChunkRenderer, make_console, print_line, print_prompt_line, setup_cli_logging

DEMO_MODEL = "scripted-demo-model"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp demo",
        description="Play a built-in coding session offline: a scripted demo model (no real model is called) "
        "drives the real server, database, tools and client, building a small todo CLI in DIR.",
    )
    parser.add_argument(
        "dir", nargs="?", metavar="DIR", help="folder to work in (created if missing; default: a new temporary folder)"
    )
    parser.add_argument("--db", metavar="PATH", help="session database to use (default: a temporary one)")
    parser.add_argument("--fast", action="store_true", help="no pauses: play the scenario as fast as possible")
    return parser.parse_args(argv)


def _python_command() -> str:
    return "python3" if shutil.which("python3") else sys.executable


def main(argv: list[str]) -> int:
    args = parse_args(argv[1:])
    setup_cli_logging()
    console = make_console()
    if args.dir:
        folder = Path(args.dir).expanduser().resolve()
        if folder.exists() and not folder.is_dir():
            console.print(f"[red]{folder} is not a folder[/]")
            return 2
        taken = [name for name in FILES if (folder / name).exists()]
        if taken:
            console.print(
                f"[red]{folder} already has {', '.join(taken)}[/]: the demo writes these files; "
                "choose an empty folder (or leave DIR out to use a new temporary one)"
            )
            return 2
        folder.mkdir(parents=True, exist_ok=True)
    else:
        folder = Path(tempfile.mkdtemp(prefix="cody-demo-")).resolve()
    try:
        return asyncio.run(play(folder, args, console))
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print("\n[yellow]demo interrupted[/]")
        return 130


async def play(folder: Path, args: argparse.Namespace, console) -> int:
    python = _python_command()
    delay = 0.0 if args.fast else 0.02
    turns = demo_turns(python, delay)
    banner = Text.assemble(
        ("cody-lsp demo", "bold"),
        " · ",
        ("scripted demo model — no real model is called", "bold yellow"),
        "\nThe server, its database, the tools and this client are the real ones; the model's "
        "replies are a built-in script.\n",
        ("model: ", "dim"),
        DEMO_MODEL,
        ("   workspace: ", "dim"),
        str(folder),
    )
    # A box on a terminal; elsewhere plain lines, whole.
    console.print(Panel(banner, border_style="yellow", expand=False) if console.is_terminal else banner)
    with tempfile.TemporaryDirectory(prefix="cody-demo-db-") as state:
        db = Path(args.db).expanduser().resolve() if args.db else Path(state) / "sessions.db"
        async with ScriptedProvider(demo_script(python, delay), model_name=DEMO_MODEL) as provider:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CODY_")}
            env.update(
                {
                    "CODY_MODEL": DEMO_MODEL,
                    "CODY_MODEL_BASE_URL": provider.base_url,
                    "CODY_MODEL_API_KEY": "demo",
                    "CODY_DB": str(db),
                    "CODY_APPROVALS": "never",
                }
            )
            if os.environ.get("CODY_LOG_LEVEL"):
                env["CODY_LOG_LEVEL"] = os.environ["CODY_LOG_LEVEL"]
            client = await CodyClient.spawn(env=env, workspace_folders=[folder])
            try:
                with stop_on_termination():
                    session_id = await _play_turns(client, turns, console, pause=not args.fast)
            except CodyError as exc:
                console.print(f"[red]the demo failed: {exc.message}[/]")
                return 1
            finally:
                await client.close()
    if session_id is None:
        return 1
    _epilogue(console, folder, db if args.db else None)
    return 0


async def _play_turns(client: CodyClient, turns, console, *, pause: bool) -> str | None:
    renderer = ChunkRenderer(console)
    session_id: str | None = None
    for turn in turns:
        console.print()
        print_prompt_line(console, turn.prompt)
        if pause:
            await asyncio.sleep(0.3)
        stream = client.stream(turn.prompt, session_id=session_id)
        async for chunk in stream:
            renderer.handle(chunk)
        renderer.close_live()
        result = await stream.result()
        session_id = result.session_id
        if result.status != "done":
            message = result.error.message if result.error else result.status
            console.print(f"[red]the demo run ended with {result.status}: {message}[/]")
            return None
    return session_id


def _epilogue(console, folder: Path, db: Path | None) -> None:
    console.print()
    console.rule("[bold]demo finished[/]", style="dim")
    console.print(f"The files the scripted model made are in [bold]{folder}[/]:")
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            console.print(f"  {path.relative_to(folder)}  [dim]({path.stat().st_size:,} bytes)[/]")
    if db is not None:
        console.print(f"The session is stored in [bold]{db}[/].")
    console.print()
    console.print("To use cody-lsp with a real model, set these and start a chat in your project:")
    for line in (
        "export CODY_MODEL=...            [dim]# the model name, e.g. gpt-4o-mini[/]",
        "export CODY_MODEL_BASE_URL=...   [dim]# an OpenAI-compatible endpoint[/]",
        "export CODY_MODEL_API_KEY=...    [dim]# its API key[/]",
        'cody-lsp chat --workspace DIR    [dim]# or: cody-lsp run "PROMPT"[/]',
    ):
        print_line(console, f"  {line}")
