"""What the sandbox tests share: a place outside /tmp (which a sandboxed command may write),
a fake home with secrets, a TCP listener, and the skips for a kernel without the feature."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
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


# ------------------------------------------------------------------ git: what a sandboxed command may plant

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(folder: Path, *args: str) -> str:
    # safe.directory: the folder may belong to another user (the test as uid 65534).
    command = ["git", "-c", "safe.directory=*", "-C", str(folder), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env={**os.environ, **GIT_ENV})
    return done.stdout + done.stderr


def make_repo(folder: Path) -> None:
    git(folder, "init", "-q")
    (folder / "a.txt").write_text("a\n")
    git(folder, "add", "a.txt")
    git(folder, "commit", "-qm", "first")


PLANT = (
    "printf '#!/bin/sh\\ntouch {mark}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout; "
    "echo hook=$?; git config core.fsmonitor 'touch {mark}'; echo config=$?; "
    "printf '#!/bin/sh\\ntouch {mark}\\n' > .git/hooks/pre-commit; echo pre=$?"
)


def nothing_runs(folder: Path, mark: Path) -> None:
    """What the user's own git does next in the folder (outside the sandbox) runs nothing planted."""
    git(folder, "status")
    git(folder, "checkout", "-q", "-b", "after")
    (folder / "b.txt").write_text("b\n")
    git(folder, "add", "b.txt")
    git(folder, "commit", "-qm", "after")
    assert not mark.exists(), "a planted hook or fsmonitor ran outside the sandbox"


# A seccomp filter answering EPERM to unshare(), then the program: a machine where no namespace can
# be made (user namespaces turned off, a server that is not root), inherited by everything it starts.
WITHOUT_NAMESPACES = textwrap.dedent(
    """
    import errno, os, sys
    from cody_lsp import landlock
    number = {"x86_64": 272, "aarch64": 97}[os.uname().machine]
    landlock.install_seccomp(landlock.seccomp_program(deny_syscalls={number: errno.EPERM}))
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
    """
)


def without_namespaces(argv: list[str]) -> list[str]:
    """``argv`` (a Python program's arguments, after the interpreter) run where unshare() fails."""
    return [sys.executable, "-c", WITHOUT_NAMESPACES, *argv]


def python_for_nobody() -> tuple[str, dict[str, str]] | None:
    """An interpreter uid 65534 may run, with the environment that finds this project's packages."""
    import cody_lsp

    project = str(Path(cody_lsp.__file__).resolve().parent.parent)
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PYTHONPATH": os.pathsep.join([project, *site])}
    for candidate in (sys.executable, f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"):
        check = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                candidate,
                "-c",
                "import cody_lsp.server.tools, re2",
            ],
            capture_output=True,
            env={**env, "PATH": os.environ["PATH"]},
        )
        if check.returncode == 0:
            return candidate, env
    return None
