"""The LSP face's real server in this process: `create_server` served in a thread of its own,
over two pipes, spoken to by the same pytest-lsp client a process would get.

A server process costs ~1 CPU-s to start (its imports) and most tests check what a client sees
of the protocol, not what only a process shows. So `tests/conftest.py` starts a test's first
server here, unless the test is marked `process` (signals, exit codes, the server's stderr, its
pid and children, the early answers of its start, two processes sharing a database: these need
a process of their own). What differs from `python -m cody_lsp` (cli.serve) is only what a
process has of its own:

- the environment: the server's (the test's `server_env`) is put into `os.environ` while it
  serves and restored when it stops, so one in-process server at a time: a test's second
  server is a process;
- the start before the server: the configuration file is applied as `cli.serve` does, but
  `initialize` is not answered early (server/lsp/early_initialize.py: tested by its own tests,
  and by every process-level test);
- no signal handlers (Python installs them in the main thread only), no `os._exit`: the thread
  ends when the server does (`exit`, the end of its input);
- the log goes to this process' logging (captured by pytest), not to a stderr of its own;
- it is not a child subreaper (tools/shell.py): a server process that is one ends every child
  re-parented to it that is not one of its commands' — here those are the test's own processes
  (other servers, a chat). Commands' leftovers are found by their marker only, as on a kernel
  without subreapers; what the subreaper adds is tested with server processes.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import Any

from pygls.io_ import run_async

# The in-process server serving now, if any (one at a time: the environment is the process').
_active: InProcessServer | None = None
JOIN_TIMEOUT = 30.0


def _not_a_subreaper() -> bool:
    return False


def _no_subreaper() -> None:
    """The servers of this process never make it a child subreaper (see the module docstring)."""
    from cody_lsp.server.tools import shell

    shell._set_subreaper = _not_a_subreaper


def available() -> bool:
    """Whether a server may be started in this process now (none is serving)."""
    return _active is None


class _PipeWriter:
    """What pygls writes the client's messages to: the write end of the server's input pipe."""

    def __init__(self, transport: asyncio.WriteTransport):
        self._transport = transport

    def write(self, data: bytes) -> None:
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._transport.close()


class InProcessServer:
    """`create_server()` serving on stdin/stdout pipes in a thread; `exit_code` once it ended."""

    def __init__(self, env: Mapping[str, str]):
        self.env = dict(env)
        self.exit_code: int | None = None
        self.error: BaseException | None = None
        self._saved_env: dict[str, str] | None = None
        self._thread: threading.Thread | None = None
        self._client_fds: tuple[int, int] | None = None  # (read the server's output, write its input)

    def start(self) -> tuple[int, int]:
        """Start serving; the client's ends of the pipes: (read fd, write fd)."""
        global _active
        if _active is not None:
            raise RuntimeError("a server already serves in this process")
        _active = self
        self._saved_env = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        to_server_r, to_server_w = os.pipe()
        to_client_r, to_client_w = os.pipe()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(to_server_r, to_client_w, ready), name="cody-lsp-in-process", daemon=True
        )
        self._thread.start()
        ready.wait(JOIN_TIMEOUT)
        if self.error is not None:
            raise RuntimeError("the in-process server did not start") from self.error
        self._client_fds = (to_client_r, to_server_w)
        return self._client_fds

    def _serve(self, stdin_fd: int, stdout_fd: int, ready: threading.Event) -> None:
        stdin = os.fdopen(stdin_fd, "rb", buffering=0)
        stdout = os.fdopen(stdout_fd, "wb", buffering=0)
        try:
            from cody_lsp import config_file
            from cody_lsp.server.lsp.server import create_server

            _no_subreaper()
            config_file.apply()  # as cli.serve: the file's settings where the environment has none
            config_file.apply_key()
            server = create_server()
        except BaseException as exc:
            self.error = exc
            ready.set()
            stdin.close()
            stdout.close()
            return
        ready.set()
        try:
            server.start_io(stdin=stdin, stdout=stdout)
            self.exit_code = server.exit_code
        except BaseException as exc:  # reported by stop()
            self.error = exc
        finally:
            for stream in (stdout, stdin):
                try:
                    stream.close()
                except OSError:
                    pass

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close_input(self) -> None:
        """The end of the server's input, as when a client process ends."""
        if self._client_fds is not None:
            _close(self._client_fds[1])

    async def stop(self) -> None:
        """Wait for the server's thread to end (after `exit` or the end of its input), then give
        the process its environment back. Raises when the server failed or did not end."""
        global _active
        thread = self._thread
        try:
            if thread is not None:
                await asyncio.to_thread(thread.join, JOIN_TIMEOUT)
                if thread.is_alive():
                    self.close_input()
                    await asyncio.to_thread(thread.join, JOIN_TIMEOUT)
                if thread.is_alive():
                    raise RuntimeError(f"the in-process server did not end within {2 * JOIN_TIMEOUT:g} s")
        finally:
            if self._client_fds is not None:
                for fd in self._client_fds:
                    _close(fd)
                self._client_fds = None
            if _active is self and (thread is None or not thread.is_alive()):
                if self._saved_env is not None:
                    os.environ.clear()
                    os.environ.update(self._saved_env)
                _active = None
        if self.error is not None:
            raise RuntimeError("the in-process server failed") from self.error


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


async def connect(client: Any, server: InProcessServer) -> None:
    """Connect a pygls client (pytest-lsp's LanguageClient) to `server`'s pipes, as its
    `start_io` does to a process' stdin and stdout."""
    read_fd, write_fd = server.start()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    # The pipe objects own the fds from here on: closed by the transports (stop() closes any left).
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0))
    transport, _protocol = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, "wb", buffering=0))
    server._client_fds = None  # the transports close them
    client.protocol.set_writer(_PipeWriter(transport))
    client._async_tasks.append(
        asyncio.ensure_future(
            run_async(
                stop_event=client._stop_event,
                reader=reader,
                protocol=client.protocol,
                error_handler=client.report_server_error,
            )
        )
    )
    client.in_process = server
    client.input_transport = transport
