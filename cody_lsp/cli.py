"""Command line: `cody-lsp` serves the protocol on stdio (or `--tcp HOST:PORT`).

The client commands (chat, run, sessions, demo) live in their own modules and
are imported only when asked for, so starting the server stays fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def _setup_logging() -> None:
    # stdout is the protocol: everything the server says goes to stderr.
    level = os.environ.get("CODY_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls.protocol").setLevel(logging.WARNING)
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))


def _use_pidfd_child_watcher() -> None:
    """Python 3.11 waits for each subprocess in a thread of its own; 3.12+ uses pidfds."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    import asyncio

    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return  # the kernel has no pidfd_open
    asyncio.set_child_watcher(asyncio.PidfdChildWatcher())


def serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="cody-lsp", description="Run the cody-lsp server (stdio by default).")
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="serve on a TCP socket instead of stdio")
    args = parser.parse_args(argv)
    _setup_logging()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    _use_pidfd_child_watcher()
    from .server import diagnostics  # noqa: F401 - event-loop lag report, only with CODY_LOOP_LAG_REPORT
    from .server.lsp import create_server

    server = create_server()
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    # The stdin reader thread may still be blocked in read(): leave without joining it.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(server.exit_code)


COMMANDS = {
    "chat": "cody_lsp.client.chat",
    "run": "cody_lsp.client.oneshot",
    "sessions": "cody_lsp.client.oneshot",
    "demo": "cody_lsp.client.demo",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS:
        import importlib

        module = importlib.import_module(COMMANDS[argv[0]])
        return module.main(argv)
    if argv and argv[0] == "serve":
        argv = argv[1:]
    return serve(argv)
