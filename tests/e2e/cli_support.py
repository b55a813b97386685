"""Helpers of the CLI tests: the `cody-lsp` child in a pseudo-terminal (pexpect) or as a
plain subprocess, and the environment that points it at the scripted provider."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

from ..conftest import server_env

PROMPT = "› "


def cli_env(provider, db_path: Path, **extra: str) -> dict[str, str]:
    return server_env(provider, db_path, TERM="dumb", NO_COLOR="1", XDG_STATE_HOME=str(db_path.parent), **extra)


class Terminal:
    """A `cody-lsp` child in a pty."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str],
        cwd: Path,
        dimensions: tuple[int, int] = (50, 200),
        wrap: Callable[[list[str]], list[str]] | None = None,
    ):
        """`wrap`: the Python program's arguments (`-m cody_lsp …`) → the whole command line."""
        argv = ["-m", "cody_lsp", *args]
        command = wrap(argv) if wrap is not None else [sys.executable, *argv]
        self.child = pexpect.spawn(
            command[0],
            command[1:],
            env=env,
            cwd=str(cwd),
            encoding="utf-8",
            dimensions=dimensions,
            timeout=20,
        )

    async def expect(self, text: str, timeout: float = 20) -> str:
        """Wait for `text`; returns what came before it."""
        await asyncio.to_thread(self.child.expect_exact, text, timeout=timeout)
        return self.child.before

    async def ready(self) -> None:
        """Wait until the prompt reads keys (raw mode: echo off), so a Ctrl+D is a key, not a tty EOF."""
        assert await asyncio.to_thread(self.child.waitnoecho, 10)

    def send_line(self, text: str) -> None:
        self.child.send(text + "\r")

    async def exit_status(self) -> int:
        await asyncio.to_thread(self.child.expect, pexpect.EOF, timeout=20)
        self.child.close()
        return self.child.exitstatus

    def kill(self, wait: Callable[[], None] = lambda: time.sleep(0.1)) -> None:
        """SIGTERM first (the chat then shuts its server down), SIGKILL if that does not end it
        within 5 s. `wait`: what to do meanwhile, 0.1 s at a time."""
        if self.child.isalive():
            self.child.kill(signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if not self.child.isalive():
                    return
                wait()
            self.child.terminate(force=True)

    def server_pids(self) -> list[int]:
        path = Path(f"/proc/{self.child.pid}/task/{self.child.pid}/children")
        return [int(pid) for pid in path.read_text().split()]


def user_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def cody(args: list[str], env: dict[str, str], cwd: Path, stdin: bytes | None = None) -> tuple[int, str, str]:
    """`cody-lsp ARGS` as a subprocess whose stdin and stdout are pipes (not a terminal):
    (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        *args,
        env=env,
        cwd=str(cwd),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    return process.returncode, out.decode(), err.decode()


class Screen:
    """A `cody-lsp` child in a pty whose output is played on a terminal emulator (pyte), so a
    test reads the screen as a person sees it (cursor moves, redraws and erasures applied)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, dimensions: tuple[int, int] = (40, 100)):
        import pyte

        rows, columns = dimensions
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
        env.pop("NO_COLOR", None)
        self.term = Terminal(args, env, cwd, dimensions)
        self.screen = pyte.Screen(columns, rows)
        # A terminal answers a request for the cursor's position (ESC [6n): the chat's line editor
        # asks before each prompt and, unanswered, waits ~1 s for it (then warns "your terminal
        # doesn't support cursor position requests").
        self.screen.write_process_input = self.child.send  # type: ignore[method-assign]
        self.stream = pyte.Stream(self.screen)
        self.raw = ""

    @property
    def child(self) -> pexpect.spawn:
        return self.term.child

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines()).rstrip()

    def _pump(self, timeout: float) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:  # it has ended: nothing more comes
            time.sleep(timeout)
            return
        self.raw += data
        self.stream.feed(data)

    async def until(self, test, timeout: float = 20) -> str:
        """Read the output until `test(screen text)` holds (a string: it is on the screen)."""
        check = (lambda text: test in text) if isinstance(test, str) else test
        deadline = time.monotonic() + timeout
        while not check(self.text()):
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen after {timeout}s: {test!r}\n{self.text()}")
            await asyncio.to_thread(self._pump, 0.05)
        return self.text()

    def kill(self) -> None:
        # Read (and answer) what it writes as it ends: unanswered, its line editor's request for
        # the cursor's position holds its exit ~1 s.
        self.term.kill(wait=lambda: self._pump(0.1))
