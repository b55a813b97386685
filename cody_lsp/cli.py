"""Command line: `cody-lsp [COMMAND]`; without a command it serves the protocol on stdio.

The client commands (chat, run, sessions, demo) live in their own modules and
are imported only when asked for, so starting the server stays fast: nothing
heavy is imported before the command is known.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import os
import select
import stat
import sys
import threading
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from .server.acp.initialize import EarlyStart as AcpEarlyStart
    from .server.lsp.early_initialize import EarlyStart
    from .server.lsp.server import CodyServer

# name: (module whose main(argv) runs it, or None for the server; one line for --help)
COMMANDS: dict[str, tuple[str | None, str]] = {
    "serve": (None, "serve the protocol to an editor on stdio (the default) or --tcp"),
    "acp": (None, "serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, Emacs)"),
    "chat": ("cody_lsp.client.chat", "chat with the coding agent in this terminal"),
    "run": ("cody_lsp.client.oneshot", "run one prompt to its end and exit (for scripts and CI)"),
    "sessions": ("cody_lsp.client.sessions", "list, delete, rename or fork the stored sessions"),
    "demo": ("cody_lsp.client.demo", "play a scripted coding session offline (no model needed)"),
    "config": ("cody_lsp.client.show_config", "show the effective settings and where each comes from"),
    "mcp": ("cody_lsp.client.mcp_list", "list the MCP servers of a folder, their state and tools (mcp list)"),
}
DEFAULT_COMMAND = "serve"
# The commands that take their settings from the configuration file too (config_file.py), and
# those that need the API key (read from its file or command once, by the command: its server inherits it).
CONFIGURED = ("chat", "run", "sessions")
NEED_THE_KEY = ("chat", "run")
TOP_LEVEL_FLAGS = ("-h", "--help", "--version")


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The top-level parser (its help lists the commands) and the `serve` parser."""
    parser = argparse.ArgumentParser(
        prog="cody-lsp",
        description="The editor backend of a coding agent, and its terminal client.",
        epilog="Without a command, cody-lsp serves the protocol on stdio (`cody-lsp --tcp HOST:PORT` serves "
        "on a socket). `cody-lsp COMMAND --help` shows a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"cody-lsp {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    serve_parser = commands.add_parser(
        "serve",
        help=COMMANDS["serve"][1],
        prog="cody-lsp serve",
        description="Serve the cody protocol (JSON-RPC with LSP framing) to one editor client: on stdin/stdout "
        "by default, or on a TCP socket. This is what `cody-lsp` without a command does.",
    )
    serve_parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    serve_parser.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="serve on a TCP socket instead (port 0: a free one; loopback only unless --allow-remote); a client "
        "must present the connection token the server makes (or CODY_TCP_TOKEN, or --token-file)",
    )
    serve_parser.add_argument(
        "--unix", metavar="PATH", help="serve on a Unix socket made at PATH (mode 0600: your user only; no token)"
    )
    serve_parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="with --tcp: the connection token is the first line of this file (mode 0600)",
    )
    serve_parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --tcp: allow an address that is not loopback (0.0.0.0, ::, a LAN address): anyone who can "
        "reach it and has the token drives an agent that runs commands as you",
    )
    commands.add_parser(
        "acp",
        help=COMMANDS["acp"][1],
        prog="cody-lsp acp",
        description="Serve the Agent Client Protocol (v1, newline-delimited JSON-RPC) on stdin/stdout, for an "
        "editor that starts agents: Zed, JetBrains IDEs, Neovim (CodeCompanion, avante), Emacs (agent-shell). "
        "Same sessions, tools, approvals and database as the LSP face (acp.md).",
    )
    for name, (_module, help_line) in COMMANDS.items():
        if name not in ("serve", "acp"):
            commands.add_parser(name, help=help_line, add_help=False)
    return parser, serve_parser


def main(argv: list[str] | None = None) -> int:
    """Run a command; a Ctrl+C that arrives before the command handles it (while its modules
    load, in the first fraction of a second) ends it quietly with code 130, never a traceback."""
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str]) -> int:
    if not argv or (argv[0].startswith("-") and argv[0] not in TOP_LEVEL_FLAGS):
        argv = [DEFAULT_COMMAND, *argv]
    command = argv[0]
    if command in TOP_LEVEL_FLAGS:
        build_parser()[0].parse_args(argv)  # prints the help or the version and exits 0
        return 0
    if command not in COMMANDS:
        print(f"cody-lsp: unknown command '{command}'; try: {', '.join(COMMANDS)} (cody-lsp --help)", file=sys.stderr)
        return 2
    module_name = COMMANDS[command][0]
    if command == "acp":
        return acp(argv[1:])
    if module_name is None:
        return serve(build_parser()[1].parse_args(argv[1:]))
    if command in CONFIGURED and not {"-h", "--help"} & set(argv[1:]):
        from . import config_file
        from .config import file_problem

        config_file.apply()
        if command in NEED_THE_KEY:
            config_file.apply_key()
        problem = file_problem()
        if problem is not None:
            print(f"cody-lsp {command}: {problem}", file=sys.stderr)
            return 2
        from .client import prestart  # the server loads while the client does

        prestart.start(command, argv[1:])

    return int(importlib.import_module(module_name).main(argv))


# ------------------------------------------------------------------------ serve


def serve(args: argparse.Namespace) -> int:
    from . import config_file
    from .config import file_problem

    config_file.apply()  # the file's settings where the environment has none (its problem fails every run)
    address = None
    if args.tcp and args.unix:
        print("cody-lsp: --tcp and --unix cannot be used together; choose one", file=sys.stderr)
        return 2
    if (args.token_file or args.allow_remote) and not args.tcp:
        print("cody-lsp: --token-file and --allow-remote go with --tcp HOST:PORT", file=sys.stderr)
        return 2
    if args.tcp:
        address = parse_address(args.tcp)
        if address is None:
            print(f"cody-lsp: --tcp wants HOST:PORT (e.g. 127.0.0.1:7000), not '{args.tcp}'", file=sys.stderr)
            return 2
        remote = _remote_problem(address[0], args.allow_remote)
        if remote is not None:
            print(f"cody-lsp: {remote}", file=sys.stderr)
            return 2
    elif not args.unix:
        refused = _stdio_refused(
            "the cody protocol (JSON-RPC) on stdin/stdout, for an editor to talk to. "
            "For the terminal chat run `cody-lsp chat`; `cody-lsp --help` lists the commands. "
            "Ctrl+C stops the server."
        )
        if refused is not None:
            return refused
    token = None
    if address is not None:
        try:
            token = _given_token(args.token_file)
        except ValueError as exc:
            print(f"cody-lsp: {exc}", file=sys.stderr)
            return 2
    _setup_logging()
    if file_problem() is not None:
        logging.getLogger(__name__).warning("%s (every run fails until it is fixed)", file_problem())
    early = None
    if address is None and not args.unix and not sys.stdin.isatty():
        try:
            early = _answer_initialize_early()
        except KeyboardInterrupt:  # SIGINT or SIGTERM before the server was up
            _flush()
            os._exit(0)  # the server's imports may still be running in their thread
    config_file.apply_key()  # after initialize is answered: a key command may take a moment
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    _use_pidfd_child_watcher()
    from .server.lsp.server import create_server
    from .testing import loop_lag as diagnostics  # noqa: F401 - event-loop lag report, only with CODY_LOOP_LAG_REPORT

    server = create_server()
    if address is not None or args.unix:
        failed = _serve_socket(server, address, args, token)
        if failed:
            return failed
    else:
        server.start_io(early=early)
    # The stdin reader thread may still be blocked in read(): leave without joining it.
    _flush()
    os._exit(server.exit_code)


def _stdio_refused(serving: str) -> int | None:
    """The exit code when stdin cannot carry the protocol (said on stderr); None to go on. On a
    terminal, what is served there is said first (`serving`)."""
    problem = stdin_problem()
    if problem is not None:
        message, code = problem
        if message:
            print(f"cody-lsp: {message}", file=sys.stderr)
        return code
    if sys.stdin.isatty():
        print(f"cody-lsp: serving {serving}", file=sys.stderr)
    return None


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def acp(argv: list[str]) -> int:
    """`cody-lsp acp`: answer `initialize` before importing the face, then serve it."""
    if argv:
        build_parser()[0].parse_args(["acp", *argv])  # --help, or an error naming the argument
        return 0
    refused = _stdio_refused(
        "the Agent Client Protocol on stdin/stdout, for an editor to start; "
        "`cody-lsp --help` lists the commands. Ctrl+C stops it."
    )
    if refused is not None:
        return refused
    # Only what the answer to `initialize` needs is imported before it (the cold start:
    # bench/acp_face.py); logging is set up after it (until then a warning goes to stderr as is).
    from . import config_file
    from .config import ServerConfig, file_problem
    from .jsonrpc.codec import WireLimits
    from .server.acp.initialize import answer_early

    try:
        limits = WireLimits.from_env()
    except ValueError as exc:
        print(f"cody-lsp: {exc}", file=sys.stderr)
        return 2
    # The configuration file's settings, the key included: `initialize` says whether the model is
    # configured (its authMethods), and a key file or command that fails is said there.
    config_file.apply()
    config_file.apply_key()
    config = ServerConfig()
    early = None
    if not sys.stdin.isatty():
        import signal

        previous = signal.signal(signal.SIGTERM, _stop_waiting)
        try:
            early = answer_early(0, sys.stdout.buffer, config, limits.max_message_bytes)
        except KeyboardInterrupt:  # SIGINT or SIGTERM before the client said anything
            return 0
        except OSError as exc:
            print(f"cody-lsp: could not answer initialize early: {exc}", file=sys.stderr)
        finally:
            signal.signal(signal.SIGTERM, previous)
    if early is not None and early.answered and not early.consumed:
        early = _import_face_unless_the_input_ends(early)
    _setup_logging()
    if file_problem() is not None:
        logging.getLogger(__name__).warning("%s (every session fails until it is fixed)", file_problem())
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    _use_pidfd_child_watcher()
    from .server.acp.server import AcpAgent

    code = AcpAgent(config, limits).serve(early)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _serve_socket(
    server: CodyServer, address: tuple[str, int] | None, args: argparse.Namespace, token: str | None
) -> int:
    """Serve on --tcp or --unix until the client is done; 2 when the socket cannot be made."""
    from pathlib import Path

    from .config import token_path
    from .server.lsp.listen import new_token, write_token_file

    made_file: list[Path] = []
    if address is not None:
        where = _join(*address)
        source = "CODY_TCP_TOKEN" if args.token_file is None else args.token_file
        secret = token or new_token()

        def listening(bound: tuple[str, int]) -> None:
            if token is None:  # made here: written to a file of the user's only, which the client reads
                path = token_path(int(bound[1]))
                write_token_file(path, secret)
                made_file.append(path)
                told = f"the connection token is in {path}"
            else:
                told = f"the connection token is the one in {source}"
            print(f"listening on {_join(str(bound[0]), int(bound[1]))}", file=sys.stderr)
            print(
                f"cody-lsp: {told}; a client presents it as the header `Cody-Token: <token>` of its first message "
                "(protocol.md, Transport)",
                file=sys.stderr,
                flush=True,
            )

        def start() -> None:
            server.serve_tcp(address[0], address[1], on_listening=listening, token=secret)

    else:
        where = args.unix
        path = Path(args.unix).expanduser().absolute()

        def unix_listening(_bound: object) -> None:
            print(f"listening on {path}", file=sys.stderr, flush=True)

        def start() -> None:
            server.serve_unix(path, on_listening=unix_listening)

    try:
        start()
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        print(f"cody-lsp: cannot listen on {where}: {reason}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        for path in made_file:
            path.unlink(missing_ok=True)
    return 0


def _given_token(token_file: str | None) -> str | None:
    """The connection token the user gave (--token-file, CODY_TCP_TOKEN), or None: the server makes one."""
    from pathlib import Path

    from .protocol.wire import TOKEN_VARIABLE
    from .server.lsp.listen import check_token, read_token_file

    if token_file is not None:
        return read_token_file(Path(token_file).expanduser())
    given = os.environ.get(TOKEN_VARIABLE)
    return check_token(given, TOKEN_VARIABLE) if given else None


def _remote_problem(host: str, allowed: bool) -> str | None:
    """Why `host` cannot be served (not loopback, without --allow-remote), or None; with the
    flag, a warning is printed."""
    from .server.lsp.listen import is_loopback

    if is_loopback(host):
        return None
    if not allowed:
        return (
            f"--tcp {host} is not a loopback address: every machine that reaches it could try to drive an agent "
            "that runs commands as you. Use 127.0.0.1 (or --unix PATH); to serve it anyway, add --allow-remote"
        )
    print(
        f"cody-lsp: warning: serving on {host}, which is not loopback (--allow-remote): the connection is not "
        "encrypted, and anyone who can reach it and learns the token drives the agent as you",
        file=sys.stderr,
    )
    return None


def parse_address(text: str) -> tuple[str, int] | None:
    """'HOST:PORT', '[IPv6]:PORT' or 'PORT' (on 127.0.0.1); None if it is not one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        return None
    return host or "127.0.0.1", int(port)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def stdin_problem() -> tuple[str, int] | None:
    """Why stdin cannot be served, as (message, exit code); None when it can.

    A pipe, a socket, a file or a terminal can. /dev/null has nothing to read:
    the server ends at once, as at the end of any input. Other devices that are
    not terminals cannot be watched for input at all.
    """
    try:
        info = os.fstat(0)
    except OSError:
        return "stdin is closed: there is no client to serve (give the server a pipe, or use --tcp HOST:PORT)", 2
    if not stat.S_ISCHR(info.st_mode) or os.isatty(0):
        return None
    try:
        if info.st_rdev == os.stat(os.devnull).st_rdev:
            return "", 0
    except OSError:
        pass
    return "stdin is a device the server cannot read messages from (give it a pipe, or use --tcp HOST:PORT)", 2


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
    from .secrets import cap_wire_loggers

    cap_wire_loggers()  # no request bodies or SQL parameters in the log, unless CODY_LOG_WIRE=1


def _answer_initialize_early() -> EarlyStart | None:
    """Answer `initialize` before pygls is imported, then the client's first session lists and
    session page while the server's imports run in a thread (server/lsp/early_initialize.py says how); None when
    the wire limits in the environment are wrong (the server then says so)."""
    import signal

    from .config import db_path
    from .jsonrpc.codec import WireLimits
    from .server.lsp.early_initialize import answer_initialize_early, serve_early

    try:
        limits = WireLimits.from_env()
    except ValueError:
        return None
    previous = signal.signal(signal.SIGTERM, _stop_waiting)
    try:
        early = answer_initialize_early(0, sys.stdout.buffer, limits)
        if early.answered_id is None:
            return early
        ready, done = os.pipe()
        importing = threading.Thread(target=_import_server, args=(done,), name="import-server", daemon=True)
        importing.start()
        early = serve_early(0, sys.stdout.buffer, limits, early, db=db_path(), ready=ready)
        if early.exit_code is not None:  # shutdown and exit answered before the server was up
            _flush()
            os._exit(early.exit_code)
        if early.answered:
            logging.getLogger(__name__).info(
                "answered %s before the server was up", ", ".join(method for _, method, _ in early.answered)
            )
        importing.join()
        os.close(ready)
        return early
    except OSError as exc:  # the client is gone already: the server finds out and ends as usual
        logging.getLogger(__name__).warning("could not answer early: %s", exc)
        return None
    finally:
        signal.signal(signal.SIGTERM, previous)


# What the server imports before it can answer anything (the rest of its start is fast).
SERVER_MODULES = (
    "cody_lsp.server.lsp.server",
    "cody_lsp.server.lsp.editor_state",
    "cody_lsp.server.core.runs",
    "cody_lsp.server.store.database",
)


def _import_face_unless_the_input_ends(early: AcpEarlyStart) -> AcpEarlyStart:
    """After `initialize` was answered early with nothing behind it: import the ACP face in a
    thread while waiting for the client's next bytes. When the input ends first (a client that
    probed the agent and closed it), the process ends at once (0) rather than after the import;
    the bytes that came are the server's to read."""
    ready, done = os.pipe()
    importing = threading.Thread(
        target=_import_server, args=(done, ("cody_lsp.server.acp.server",)), name="import-face", daemon=True
    )
    importing.start()
    try:
        readable, _, _ = select.select([0, ready], [], [])
        if 0 in readable:
            chunk = os.read(0, 65536)
            if not chunk:
                _flush()
                os._exit(0)
            early = dataclasses.replace(early, consumed=chunk)
    except (OSError, ValueError):
        pass  # the server reads stdin itself and finds out
    importing.join()
    os.close(ready)
    return early


def _import_server(done: int, modules: tuple[str, ...] = ()) -> None:
    """The server's imports (`modules`, else SERVER_MODULES), in a thread while the early start
    answers; `done` is written when they are over. A failure is left to the main thread's own
    import, which raises it again."""
    try:
        for name in modules or SERVER_MODULES:
            importlib.import_module(name)
    except BaseException:
        logging.getLogger(__name__).debug("importing the server failed", exc_info=True)
    finally:
        os.write(done, b".")
        os.close(done)


def _stop_waiting(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


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
