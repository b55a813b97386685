"""Running git for the shadow stores, and nothing of the user's git.

Every command runs with an environment built from nothing but ``PATH``: the shadow store's own
``GIT_DIR``, ``GIT_WORK_TREE`` and ``GIT_INDEX_FILE``, no system or global configuration
(``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``, ``HOME`` and ``XDG_CONFIG_HOME`` inside
the store), literal pathspecs, no replace objects, no terminal prompt. So no ``GIT_*`` variable of
the server's environment, no hook, no fsmonitor, no filter or diff driver of the user's
configuration reaches a shadow command, and none of them can find the user's repository.

Commands run in a process group of their own; a command that is cancelled, or takes longer than its
timeout, is killed with its children. Output is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...protocol.capabilities import checkpoints_unavailable
from ..tools.shell import helper_ended, spawn_helper

log = logging.getLogger(__name__)

MIN_VERSION = (2, 32)  # GIT_CONFIG_GLOBAL (2.32), rev-list --disk-usage (2.31)
MAX_OUTPUT = 256 << 20  # bytes of a command's output kept in memory
MAX_ERROR = 64 << 10  # bytes of its stderr kept


class GitError(Exception):
    """A shadow git command failed; the message says which and why (its stderr, shortened)."""


def find_git() -> str | None:
    """The `git` on the PATH that can be run, or None."""
    return shutil.which("git")


def unavailable_reason() -> str | None:
    """Why checkpoints cannot work on this machine (cheap: what `initialize` says), or None."""
    return checkpoints_unavailable()


async def check_version(git: str) -> str | None:
    """Why this git cannot serve the shadow stores (too old, does not run), or None."""
    try:
        result = await run_git(git, ["--version"], env=base_env(), timeout=10)
    except (GitError, OSError) as exc:
        return f"git ({git}) does not run: {exc}"
    match = re.search(rb"(\d+)\.(\d+)", result.stdout)
    if match is None:
        return f"git ({git}) says no version: {result.stdout[:80]!r}"
    version = (int(match.group(1)), int(match.group(2)))
    if version < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        return f"git {version[0]}.{version[1]} is too old for checkpoints (they need git {need} or newer)"
    return None


def base_env() -> dict[str, str]:
    """The environment every git command of this module starts from: PATH and nothing of git's."""
    return {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "LANG": "C"}


def shadow_env(git_dir: str, work_tree: str | None) -> dict[str, str]:
    """The environment of a command on the shadow store at `git_dir` (for the folder `work_tree`)."""
    env = base_env()
    env.update(
        {
            "GIT_DIR": git_dir,
            "GIT_INDEX_FILE": os.path.join(git_dir, "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "HOME": git_dir,
            "XDG_CONFIG_HOME": os.path.join(git_dir, "no-config"),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_AUTHOR_NAME": "cody-lsp",
            "GIT_AUTHOR_EMAIL": "cody-lsp@localhost",
            "GIT_COMMITTER_NAME": "cody-lsp",
            "GIT_COMMITTER_EMAIL": "cody-lsp@localhost",
            # For every command (also on stores made before their configuration said so): git's
            # untracked cache (`update-index` drops it where the configuration does not want it, and
            # it serves `status --untracked-files=all` only when the configuration asks for all); a
            # split index (a snapshot's three index writes write only what changed, not all 10,000
            # entries of a large folder; a shared index no longer used is deleted at once — the
            # store's lock keeps every other reader out).
            "GIT_CONFIG_COUNT": "4",
            "GIT_CONFIG_KEY_0": "core.untrackedCache",
            "GIT_CONFIG_VALUE_0": "true",
            "GIT_CONFIG_KEY_1": "status.showUntrackedFiles",
            "GIT_CONFIG_VALUE_1": "all",
            "GIT_CONFIG_KEY_2": "core.splitIndex",
            "GIT_CONFIG_VALUE_2": "true",
            "GIT_CONFIG_KEY_3": "splitIndex.sharedIndexExpire",
            "GIT_CONFIG_VALUE_3": "now",
        }
    )
    if work_tree is not None:
        env["GIT_WORK_TREE"] = work_tree
    return env


@dataclass(frozen=True, slots=True)
class Result:
    stdout: bytes
    stderr: bytes
    returncode: int


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_git(
    git: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
    stdin: bytes | None = None,
    timeout: float = 120.0,
    check: bool = True,
    max_output: int = MAX_OUTPUT,
) -> Result:
    """Run `git args…`; its output (at most `max_output` bytes: more is a GitError). Killed (with
    its process group) when cancelled or after `timeout` seconds."""
    proc = await spawn_helper(
        git,
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = await asyncio.wait_for(_communicate(proc, stdin, max_output), timeout)
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        raise GitError(f"git {args[0]} took longer than {timeout:g} s and was stopped") from None
    except BaseException:
        _kill(proc)
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
        raise
    finally:
        if proc.returncode is not None:
            helper_ended(proc)
    result = Result(stdout, stderr, proc.returncode if proc.returncode is not None else -1)
    if check and result.returncode != 0:
        raise GitError(f"git {args[0]} failed ({result.returncode}): {_first_lines(stderr)}")
    return result


async def _communicate(proc: asyncio.subprocess.Process, stdin: bytes | None, max_output: int) -> tuple[bytes, bytes]:
    assert proc.stdout is not None and proc.stderr is not None

    async def feed() -> None:
        if proc.stdin is None:
            return
        try:
            if stdin:
                proc.stdin.write(stdin)
                await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with contextlib.suppress(Exception):
                proc.stdin.close()

    async def read(stream: asyncio.StreamReader, limit: int, what: str, *, strict: bool) -> bytes:
        chunks, size = [], 0
        while chunk := await stream.read(1 << 16):
            size += len(chunk)
            if size > limit:
                if strict:
                    raise GitError(f"git printed more than {limit:,} bytes of {what}; stopped")
                continue
            chunks.append(chunk)
        return b"".join(chunks)

    _fed, out, err = await asyncio.gather(
        feed(),
        read(proc.stdout, max_output, "output", strict=True),
        read(proc.stderr, MAX_ERROR, "errors", strict=False),
    )
    await proc.wait()
    return out, err


def _first_lines(stderr: bytes, limit: int = 400) -> str:
    text = stderr.decode("utf-8", "replace").strip().replace("\n", " | ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Stream:
    """A git command whose output is read as it comes (a diff that may be long: `read()` chunks) or
    that answers requests one by one (`cat-file --batch`: `request()`), then `close()` (which kills
    it if it is still running)."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self._proc = proc

    @classmethod
    async def start(
        cls, git: str, args: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None, stdin: bool = False
    ) -> Stream:
        proc = await spawn_helper(
            git,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        return cls(proc)

    async def read(self) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(1 << 16)

    async def request(self, line: bytes) -> bytes:
        """Write `line`, read one line of answer (without its newline)."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        await proc.stdin.drain()
        answer = await proc.stdout.readuntil(b"\n")
        return answer[:-1]

    async def read_exactly(self, size: int) -> bytes:
        assert self._proc.stdout is not None
        return await self._proc.stdout.readexactly(size)

    async def close(self) -> int:
        """Wait for the end (killing the command if its output was not read to the end)."""
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        if proc.returncode is None and proc.stdout is not None and not proc.stdout.at_eof():
            _kill(proc)
        code = await proc.wait()
        helper_ended(proc)
        return code
