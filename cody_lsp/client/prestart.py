"""The server of `cody-lsp chat` and `cody-lsp run`, started before the client's own imports.

The server answers `initialize` before it imports pygls (server/lsp/early_initialize.py) and
then imports the rest in the background; the client needs asyncio, rich, prompt_toolkit and the
wire types. Started one after the other, the two costs add up; here the command line starts the
server — and sends its `initialize` — first thing, so the server loads on one core while the
client loads on the other. `CodyClient.spawn` then takes this server over when it is the one it
would have started (the same `initialize`), and starts its own otherwise; one nobody took over
is stopped when the process ends.

Standard library only: this runs before anything else is imported.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__

INITIALIZE_ID = "init_prestarted"
CLIENT_NAME = "cody-lsp-client"


def declared_features(permissions: bool, steering: bool, wants: Sequence[str] = ()) -> dict[str, bool]:
    """What a CodyClient declares in `initialize`'s `capabilities.experimental.cody`."""
    # Subagents: this client's renderers show a subagent's chunks under its task call (render.py).
    declared = {
        "permissions": permissions,
        "sessionChanges": True,
        "hooks": True,
        "subagents": True,
        "plans": True,
        "toolOutput": True,  # a running command's output, shown as it comes (render.py)
    }
    if steering:
        declared["steering"] = True
    declared.update(dict.fromkeys(sorted(wants), True))
    return declared


def file_uri(folder: str | Path) -> str:
    text = str(folder)
    if text.startswith("file:"):
        return text
    return Path(text).expanduser().resolve().as_uri()


def initialize_params(workspace_folders: Sequence[str | Path], declared: dict[str, bool]) -> dict[str, Any]:
    folders = [{"uri": file_uri(f), "name": Path(str(f)).name or str(f)} for f in workspace_folders]
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": CLIENT_NAME, "version": __version__},
        "rootUri": folders[0]["uri"] if folders else None,
        "capabilities": {"experimental": {"cody": declared}},
        "workspaceFolders": folders or None,
    }


def server_command() -> list[str]:
    return [sys.executable, "-m", "cody_lsp"]


@dataclass
class Started:
    process: subprocess.Popen[bytes]
    params: dict[str, Any]


_started: Started | None = None


def _option(args: Sequence[str], short: str, long: str) -> str | None:
    """The value of `-w DIR`, `--workspace DIR`, `--workspace=DIR` or `-wDIR` (the last one given)."""
    value = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in (short, long) and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(long + "="):
            value = arg[len(long) + 1 :]
        elif arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
            value = arg[len(short) :]
    return value


COMMANDS = ("chat", "run", "sessions")


def start(command: str, args: Sequence[str]) -> None:
    """Start the server of `chat`, `run` or `sessions` now, with the `initialize` its client will send."""
    global _started
    if _started is not None or command not in COMMANDS:
        return
    folder = Path(_option(args, "-w", "--workspace") or ".").expanduser()
    try:
        folder = folder.resolve()
        if not folder.is_dir():
            return  # the command says what is wrong
    except OSError:
        return
    folders = [folder]
    if command == "chat":
        declared = declared_features(True, True, ("usage", "editDiffs"))
    elif command == "run":
        declared = declared_features(True, False, () if "--json" in args else ("editDiffs",))
    else:  # sessions: its folder's server for a listing (the default action), else one of no folder
        declared = declared_features(False, False)
        action = args[0] if args and not args[0].startswith("-") else "list"
        if action != "list":
            folders = []
    params = initialize_params(folders, declared)
    body = json.dumps({"jsonrpc": "2.0", "id": INITIALIZE_ID, "method": "initialize", "params": params})
    data = body.encode()
    try:
        process = subprocess.Popen(
            server_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
            start_new_session=True,
        )
        assert process.stdin is not None
        process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        process.stdin.flush()
    except OSError:
        return
    _started = Started(process, params)
    atexit.register(discard)


def take(params: dict[str, Any]) -> subprocess.Popen[bytes] | None:
    """The server started here, when its `initialize` is `params` (it is the caller's now); None
    otherwise (one started for other params is stopped)."""
    global _started
    started, _started = _started, None
    if started is None:
        return None
    if started.params != params or started.process.poll() is not None:
        _stop(started.process)
        return None
    return started.process


def discard() -> None:
    """Stop the server started here if nobody took it over (the command ended before it spawned one)."""
    global _started
    started, _started = _started, None
    if started is not None:
        _stop(started.process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        process.terminate()
        process.wait(5)
    except (OSError, subprocess.TimeoutExpired):
        try:
            process.kill()
            process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass
