"""Which of the user's ignore rules a shadow store applies, as git would for the folder.

The shadow store's work tree is the workspace folder, so git itself reads the folder's own
`.gitignore` files (the root one and the nested ones) whether or not the folder is a repository.
What git would add when the folder *is* in a repository lives outside the folder, and is copied
into the shadow store's `info/exclude` (lowest precedence first, as git ranks them): the user's
global excludes (`core.excludesFile`, by default `~/.config/git/ignore`), the repository's
`info/exclude`, and — for a folder below the repository's top — the `.gitignore` files of the
directories above it. Their patterns are relative to where they were written (the top, or their
directory), so each is rewritten relative to the folder: a pattern without a slash applies at any
depth and is kept; an anchored one is kept when its leading names match the folder's path (the
rest of it then applies below the folder), and left out otherwise.

Version-control metadata of other systems (`.hg`, `.svn`, `.jj`) is never recorded either.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .git import base_env, run_git

log = logging.getLogger(__name__)

MAX_EXCLUDE_BYTES = 1 << 20  # of one file of patterns
OTHER_VCS = (".hg/", ".svn/", ".jj/")


@dataclass(frozen=True, slots=True)
class UserRepo:
    """The user's repository the folder is in."""

    toplevel: Path  # its work tree's top (the folder or a directory above it)
    common_dir: Path  # its git directory (for a linked worktree: the main one's)


def find_repo(folder: Path) -> UserRepo | None:
    """The repository `folder` is in (its `.git` or a parent's), found without running git."""
    here = folder
    while True:
        dot_git = here / ".git"
        git_dir = _git_dir(dot_git)
        if git_dir is not None:
            return UserRepo(here, _common_dir(git_dir))
        if here.parent == here:
            return None
        here = here.parent


def _git_dir(dot_git: Path) -> Path | None:
    try:
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():
            text = dot_git.read_text("utf-8", "replace")[:4096].strip()
            if text.startswith("gitdir:"):
                target = Path(text.removeprefix("gitdir:").strip())
                return target if target.is_absolute() else dot_git.parent / target
    except OSError:
        pass
    return None


def _common_dir(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text("utf-8", "replace").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return common if common.is_absolute() else git_dir / common


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_EXCLUDE_BYTES)
    except OSError:
        return b""


async def global_excludes(git: str, folder: Path) -> Path | None:
    """The user's `core.excludesFile` for `folder` (their configuration, read, never written), or
    git's default, when it exists."""
    env = base_env()
    for name in ("HOME", "XDG_CONFIG_HOME"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    path: Path | None = None
    try:
        result = await run_git(
            git, ["config", "--path", "--get", "core.excludesFile"], env=env, cwd=str(folder), timeout=10, check=False
        )
        value = result.stdout.decode("utf-8", "surrogateescape").strip()
        if result.returncode == 0 and value:
            path = Path(value).expanduser()
    except Exception as exc:  # no answer: git's default
        log.info("could not read core.excludesFile (%s); using git's default", exc)
    if path is None:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        path = Path(xdg) / "git" / "ignore"
    if not path.is_absolute():
        path = folder / path
    return path if path.is_file() else None


def shadow_excludes(folder: Path, repo: UserRepo | None, global_file: Path | None) -> bytes:
    """The content of the shadow store's `info/exclude` for `folder`."""
    lines = [b"# written by cody-lsp: the user's excludes as git would apply them to this folder"]
    if repo is not None:
        below = folder.relative_to(repo.toplevel).parts if folder != repo.toplevel else ()
        sources: list[tuple[Path | None, tuple[str, ...]]] = [
            (global_file, ()),
            (repo.common_dir / "info" / "exclude", ()),
        ]
        for depth in range(len(below)):  # the .gitignore files of the directories above the folder
            sources.append((repo.toplevel.joinpath(*below[:depth]) / ".gitignore", below[:depth]))
        for path, base in sources:
            if path is None:
                continue
            rest = tuple(os.fsencode(p) for p in below[len(base) :])
            for line in _read(path).splitlines():
                lines.extend(rebase(line, rest))
    lines.extend(p.encode() for p in OTHER_VCS)
    return b"\n".join(lines) + b"\n"


def rebase(line: bytes, below: tuple[bytes, ...]) -> list[bytes]:
    """A pattern line written for a directory, as the lines that say the same for its
    subdirectory `below` (names from it): none when it cannot match anything there."""
    line = line.rstrip(b"\r")
    if not line.strip() or line.startswith(b"#"):
        return []
    if not below:
        return [line]
    negate = line.startswith(b"!")
    pattern = line[1:] if negate else line
    if b"/" not in pattern.rstrip(b"/"):  # no slash but a trailing one: it matches at any depth
        return [line]
    names = pattern.lstrip(b"/").split(b"/")
    prefix = b"!/" if negate else b"/"
    return [prefix + b"/".join(rest) for rest in _consume(names, list(below)) if any(rest)]


def _consume(names: list[bytes], below: list[bytes]) -> list[list[bytes]]:
    """What may remain of a pattern's names once they matched the directories `below`."""
    if not below:
        return [names]
    if not names:
        return []
    head = names[0]
    if head == b"**":  # any number of directories: none of them, or this one and maybe more
        absorbed = [[b"**", *names[1:]]] if len(below) == 1 else _consume(names, below[1:])
        return _consume(names[1:], below) + absorbed
    if not fnmatch.fnmatchcase(os.fsdecode(below[0]), os.fsdecode(head)):
        return []
    return _consume(names[1:], below[1:])
