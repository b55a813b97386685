"""Workspace folders for the tests: files written, read back, and the user's git."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

# The user's git as the tests run it: no system or global configuration of the machine.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(folder: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True).stdout


def write(folder: Path, path: str, data: str | bytes, mode: int | None = None) -> Path:
    target = folder / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        target.chmod(mode)
    return target


def files_of(folder: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file below the folder but .git: its content (a symlink: its target) and whether it is executable."""
    found = {}
    for dirpath, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(dirpath, name)
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[rel] = (os.readlink(path).encode(), False)
            else:
                found[rel] = (path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return found


def git_state(folder: Path) -> tuple[bytes, ...]:
    """What of the user's repository a checkpoint must never change: its index file's bytes, `git
    status`, its refs, stash and worktrees, and the names of its objects."""
    index = (folder / ".git" / "index").read_bytes()  # before `git status`, which may refresh it
    return (
        index,
        git(folder, "--no-optional-locks", "status", "--porcelain=v2", "--untracked-files=all"),
        git(folder, "for-each-ref"),
        git(folder, "stash", "list"),
        git(folder, "worktree", "list", "--porcelain"),
        b"\n".join(sorted(str(p.relative_to(folder)).encode() for p in (folder / ".git" / "objects").rglob("*"))),
    )


def path_without_git(folder: Path, *more: str) -> str:
    """A PATH with the tools a run needs (a shell, the command wrapper's) and `more`, but no git."""
    folder.mkdir(exist_ok=True)
    for tool in ("sh", "env", "setpriv", "true", *more):
        found = shutil.which(tool)
        if found:
            os.symlink(found, folder / tool)
    return str(folder)
