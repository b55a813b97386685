"""What the sandbox tests share: a place outside /tmp (which a sandboxed command may write),
a fake home with secrets, a TCP listener, and the skips for a kernel without the feature."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cody_lsp import landlock

SUPPORT = landlock.support()
needs_landlock = pytest.mark.skipif(not SUPPORT.available, reason=f"the kernel has no Landlock: {SUPPORT.reason}")
needs_tcp_rules = pytest.mark.skipif(SUPPORT.abi < 4, reason=f"Landlock ABI {SUPPORT.abi} < 4 has no TCP rules")
needs_scoping = pytest.mark.skipif(
    SUPPORT.abi < 6, reason=f"Landlock ABI {SUPPORT.abi} < 6 does not scope signals and abstract sockets"
)
needs_seccomp = pytest.mark.skipif(not SUPPORT.seccomp, reason="no seccomp filter on this kernel or architecture")
needs_namespace = pytest.mark.skipif(not SUPPORT.namespace, reason="this process may not make a network namespace")

# /var/tmp is not among the sandbox's writable directories (/tmp and $TMPDIR are).
OUTSIDE_TMP = "/var/tmp"
FAKE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nfake-key-for-the-sandbox-tests\n"


@dataclass
class Place:
    """A folder, a home with secrets and a state directory, none of them under /tmp."""

    base: Path
    folder: Path
    home: Path
    state: Path

    @property
    def db(self) -> Path:
        return self.state / "sessions.db"


@contextlib.contextmanager
def outside_tmp() -> Iterator[Place]:
    if not os.access(OUTSIDE_TMP, os.W_OK):
        pytest.skip(f"{OUTSIDE_TMP} is not writable here: the tests need a place outside /tmp")
    base = Path(tempfile.mkdtemp(prefix="cody-sandbox-test-", dir=OUTSIDE_TMP))
    try:
        place = Place(base, base / "ws", base / "home", base / "state")
        for directory in (place.folder, place.home / ".ssh", place.home / ".config" / "gh", place.state):
            directory.mkdir(parents=True)
        (place.home / ".ssh" / "id_rsa").write_text(FAKE_KEY)
        (place.home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_fake\n")
        (place.home / ".bashrc").write_text("# readable\n")
        yield place
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def tcp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A listener on 127.0.0.1 (port, what connections said), accepting in a thread."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    heard: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    heard.append(conn.recv(100))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], heard
    finally:
        stop.set()
        thread.join()
        server.close()


def connect_command(port: int) -> str:
    """A shell command that connects to 127.0.0.1:port and says hello, printing what happened."""
    code = textwrap.dedent(
        f"""
        import socket
        try:
            s = socket.create_connection(("127.0.0.1", {port}), timeout=5)
            s.sendall(b"hello from the command")
            s.close()
            print("connected")
        except OSError as exc:
            print("refused:", type(exc).__name__, exc)
        """
    )
    return f"{sys.executable} -c '{code}'"


# A seccomp filter answering ENOSYS to Landlock's system calls, then the program: a kernel
# without Landlock, as far as the program can tell (inherited by everything it starts).
WITHOUT_LANDLOCK = textwrap.dedent(
    """
    import errno, os, sys
    from cody_lsp import landlock
    landlock.install_seccomp(landlock.seccomp_program(deny_syscalls={n: errno.ENOSYS for n in (444, 445, 446)}))
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
    """
)


def without_landlock(argv: list[str]) -> list[str]:
    """``argv`` (a Python program's arguments, after the interpreter) run without Landlock."""
    return [sys.executable, "-c", WITHOUT_LANDLOCK, *argv]
