"""What a sandboxed command may read but not write inside the folders it may write: version-control
metadata and the files other programs act on by themselves (SECURITY.md, "The command sandbox").

A command in the sandbox may write its workspace folder, but whatever it writes into ``.git`` (a
hook, ``core.fsmonitor``) or ``.vscode/tasks.json`` runs later *outside* the sandbox, when git,
the editor or direnv acts on the folder. So these paths are read-only to it:

- :data:`BUILT_IN`, relative to the folder, and the user's own additions (``CODY_SANDBOX_PROTECT``:
  the list only grows; a folder's files cannot touch it);
- what git's files there name: the repository a ``.git`` *file* points to (a worktree's or a
  submodule's) and its common directory, the directory ``core.hooksPath`` names (and, for husky's
  ``.husky/_``, ``.husky``), the files ``include.path`` / ``includeIf.*.path`` name, the ``.git`` of
  each submodule ``.gitmodules`` lists; and the version-control metadata of the folders above it
  (a repository the folder is part of);
- :data:`IN_HOME`, when the command may write the user's home (the folder is the home, or holds it).

:func:`protect` says how, from what exists when the command starts (the sandbox acts on it,
:mod:`.sandbox`):

- a path that exists is bound read-only over itself in the command's own mount namespace
  (``read_only``); the directories between it and a directory the command may write are bound
  over themselves too (``pinned``), so that they cannot be renamed away and replaced;
- a path that does not exist, inside a directory of the folder that does (``.vscode/tasks.json``
  when ``.vscode`` exists): that directory is read-only;
- a path whose first component does not exist in the folder (``.git`` in a folder that is not a
  repository, ``.envrc``), or is a symlink: only a placeholder in the folder could keep it from
  being made, and none is made there. Its state is noted (``watched``); a :class:`Lookout` (inotify)
  lets the sandbox stop the command the moment it makes one (:meth:`Protection.breached`), and
  :meth:`Protection.settle` compares once the command and everything it started have ended: what the
  command made there (or made through the symlink, or put in its place) is moved aside, to
  ``NAME.sandbox-refused-XXXXXX`` beside it (nothing is deleted), a symlink put back, and the result
  says so.

Bounded: a handful of ``lstat`` calls per path, git's small files read up to :data:`MAX_FILE_BYTES`,
at most :data:`MAX_SUBMODULES` submodules; no directory is walked.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

VCS_NAMES = (".git", ".hg", ".svn", ".jj")
VCS_WHY = (
    "version-control metadata: a hook or a setting written there, such as core.fsmonitor, would run outside the "
    "sandbox the next time git, or the editor's git integration, runs in the folder"
)
AGENT_WHY = "an agent's own configuration: the MCP servers, hooks and commands it runs by itself"
HOOKS_WHY = "a git hook manager runs the commands it names on the next git commit"
# Relative to each writable folder: the path, and why a command may not write it.
BUILT_IN: tuple[tuple[str, str], ...] = (
    *((name, VCS_WHY) for name in VCS_NAMES),
    (".envrc", "direnv runs it when a shell enters the folder"),
    (
        ".vscode/settings.json",
        "the editor applies it by itself when the folder is open, and it can name programs to run",
    ),
    (".vscode/tasks.json", "the editor runs its tasks, some as soon as the folder is opened"),
    (".vscode/launch.json", "the editor's debugger runs what it names"),
    (".vscode/mcp.json", AGENT_WHY),
    (".idea", "JetBrains IDEs run the run configurations and startup tasks it holds"),
    (".devcontainer", "the editor builds and starts the container it defines"),
    (".devcontainer.json", "the editor builds and starts the container it defines"),
    (".cody", AGENT_WHY),
    (".claude", AGENT_WHY),
    (".mcp.json", AGENT_WHY),
    (".pre-commit-config.yaml", HOOKS_WHY),
    (".husky", HOOKS_WHY),
    ("lefthook.yml", HOOKS_WHY),
    (".lefthook.yml", HOOKS_WHY),
)
# Relative to the user's home, when a sandboxed command may write there (the folder is the home, or
# holds it, or the home lies in /tmp): what shells, the desktop and the user's tools run by themselves.
HOME_WHY = "a program of the user's runs it by itself (a shell when it starts, the desktop session, git, an agent)"
IN_HOME = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".xprofile",
    ".xsessionrc",
    ".pam_environment",
    ".gitconfig",
    ".config/git",
    ".config/fish",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/Code/User",
    ".codex",
    ".local/bin",
    "bin",
)
USER_WHY = "the user's sandbox_protect setting names it"
GIT_DIR_WHY = "the repository a .git file points to: " + VCS_WHY
HOOKS_PATH_WHY = "git runs the hooks in it: the repository's core.hooksPath names it"
INCLUDE_WHY = "git reads it as part of the repository's configuration: an include.path names it"
REFUSED_SUFFIX = ".sandbox-refused-"

MAX_FILE_BYTES = 65536  # of a .git file, commondir, a config file, .gitmodules
MAX_SUBMODULES = 256
MAX_INCLUDE_DEPTH = 3
MAX_ANCESTORS = 64


@dataclass(frozen=True)
class Item:
    """A path a sandboxed command may not write, as the model is shown it, and why."""

    path: str  # real, absolute
    shown: str  # relative to the folder when inside it
    why: str


@dataclass
class Watched:
    """A name directly in the folder that the kernel cannot keep from being made or replaced:
    what it was when the command started."""

    name: str
    entries: list[tuple[str, str]]  # (relative protected path beneath it or it, why)
    link: str | None  # the symlink that was there (its text; put back if replaced), None: nothing was
    present: frozenset[str]  # the entries that existed (through the symlink) at the start


@dataclass
class Protection:
    """How a sandboxed command is kept from writing the protected paths (see the module)."""

    folder: str
    read_only: list[Item] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    watched: list[Watched] = field(default_factory=list)
    # Paths that do not exist, kept from being made by a read-only directory (named to the model).
    absent: list[Item] = field(default_factory=list)
    # "mounts" (read-only mounts, :mod:`.sandbox`) or "split" (no mount namespace here: Landlock
    # keeps the protected paths and their directories' entries as they are); and why not mounts.
    strategy: str = "mounts"
    split_reason: str | None = None

    def mounts(self) -> list[tuple[str, bool]]:
        """(path, read-only) to bind over themselves, each directory before what is beneath it."""
        binds = [(item.path, True) for item in self.read_only] + [(path, False) for path in self.pinned]
        return sorted(binds, key=lambda bind: (bind[0].count("/"), bind[0]))

    def split_paths(self) -> list[str]:
        """What Landlock must leave out of the write rules when there are no mounts: every
        protected path, existing or not (a missing one keeps its directory from gaining entries)."""
        paths = [item.path for item in self.read_only]
        for watched in self.watched:
            paths.append(os.path.join(self.folder, watched.name))
        return paths

    def shown(self) -> list[Item]:
        items = [*self.read_only, *self.absent]
        for watched in self.watched:
            items += [Item(os.path.join(self.folder, rel), rel, why) for rel, why in watched.entries]
        return items

    def explain(self, output: str) -> str | None:
        """What to tell the model about a command that ran into a protected path: those its output
        names (or, when it says a file system is read-only, all of them), why, and the way out."""
        items = self.shown()
        named = [item for item in items if _mentions(output, item)]
        # The most precise: .vscode/tasks.json rather than the .vscode that keeps it from being made.
        named = [item for item in named if not any(_under(other.path, item.path + "/") for other in named)]
        if not named and "read-only file system" in output.lower():
            named = list(self.read_only)
        if not named:
            return None
        named = named[:8]
        one = len(named) == 1
        names = ", ".join(item.shown for item in named)
        if self.strategy == "mounts":
            state = f"{names} {'is' if one else 'are'} read-only in the sandbox"
        else:
            state = (
                f"{names} {'is' if one else 'are'} kept as {'it is' if one else 'they are'} in the sandbox "
                f"(nothing can be made, removed or renamed beside {'it' if one else 'them'} either)"
            )
        whys = list(dict.fromkeys(item.why for item in named))
        why = whys[0] if len(whys) == 1 else "; ".join(f"{item.shown}: {item.why}" for item in named)
        return (
            f"{state} — {why}. A command that must write {'it' if one else 'them'} (git commit, git init, a change "
            "of those settings) runs outside the sandbox only with the user's approval: call run_command again with "
            '"sandbox": false and a "reason" saying why'
        )

    def breached(self, names: Iterable[str]) -> list[str]:
        """Of the watched ``names``, those the command has made (or made through, or replaced)."""
        wanted = set(names)
        every = ANY in wanted
        return [w.name for w in self.watched if (every or w.name in wanted) and _breach(self.folder, w, None)[0]]

    def to_follow(self, names: Iterable[str]) -> list[str]:
        """Of the watched ``names``, those that are directories now and hold protected paths below
        them (``.vscode`` for ``.vscode/tasks.json``): what to watch as well, one level down."""
        wanted = set(names)
        return [
            w.name
            for w in self.watched
            if (ANY in wanted or w.name in wanted)
            and any("/" in rel for rel, _ in w.entries)
            and os.path.isdir(os.path.join(self.folder, w.name))
        ]

    def settle(self, stopped: Iterable[str] = ()) -> list[str]:
        """Once the command and everything it started ended: move aside what it made where the
        kernel could not stop it (see the module); ``stopped``: the names it was stopped for as
        soon as it made them. What to tell the model, one line per name."""
        if not self.watched:
            return []
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            log.warning("could not check what a sandboxed command made in %s: %s", self.folder, exc)
            return []
        notes = []
        try:
            for watched in self.watched:
                note = _settle_one(fd, self.folder, watched, watched.name in set(stopped))
                if note:
                    notes.append(note)
        finally:
            os.close(fd)
        return notes


def _mentions(output: str, item: Item) -> bool:
    """Whether ``output`` names the item: its real path, or its shown path as a whole (``.git/x``,
    ``'./.envrc'``; not ``/bin/sh`` for ``bin``, nor ``.gitignore`` for ``.git``)."""
    if item.path in output:
        return True
    before = r"(?:^|(?<=[\s'\"`(=:,])|(?<=\./))"
    after = r"(?=$|[/\s'\"`):,])"
    return bool(re.search(before + re.escape(item.shown) + after, output, re.MULTILINE))


def _lstat(path: str, dir_fd: int | None = None) -> os.stat_result | None:
    try:
        return os.lstat(path, dir_fd=dir_fd)
    except OSError:
        return None


def _present(folder: str, entries: Iterable[tuple[str, str]]) -> frozenset[str]:
    return frozenset(rel for rel, _ in entries if os.path.lexists(os.path.join(folder, rel)))


def _move_aside(fd: int, name: str) -> str | None:
    """Rename ``name`` (in the folder ``fd``, not followed) to a free NAME.sandbox-refused-XXXXXX."""
    for _ in range(8):
        aside = f"{name}{REFUSED_SUFFIX}{secrets.token_hex(3)}"
        if _lstat(aside, fd) is not None:
            continue
        try:
            os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            log.warning("could not move aside %r, which a sandboxed command made: %s", name, exc)
            return None
        return aside
    return None


def _link_text(name: str, fd: int | None) -> str | None:
    try:
        return os.readlink(name, dir_fd=fd)
    except OSError:
        return None


def _breach(folder: str, watched: Watched, fd: int | None) -> tuple[bool, set[str], bool, os.stat_result | None]:
    """(breached, the protected entries made, whether the name was replaced, what is there now)."""
    name = watched.name if fd is not None else os.path.join(folder, watched.name)
    now = _lstat(name, fd)
    was = watched.link is not None
    # A symlink is the same when it says the same (its inode may be a new one, or an old one reused).
    if was:
        replaced = now is None or not stat.S_ISLNK(now.st_mode) or _link_text(name, fd) != watched.link
    else:
        replaced = now is not None
    made = set(_present(folder, watched.entries) - watched.present)
    # Made at a name that holds none of the protected paths (a .vscode/ of its own): no breach.
    return bool(made or (replaced and was)), made, replaced, now


def _settle_one(fd: int, folder: str, watched: Watched, stopped: bool) -> str | None:
    breached, made, replaced, now = _breach(folder, watched, fd)
    if not breached:
        return None
    was = watched.link is not None
    what = sorted(made) or [watched.name]
    why = next(why for rel, why in watched.entries if rel in what or not made)
    aside = _move_aside(fd, watched.name) if now is not None else None
    restored = False
    if watched.link is not None and (now is None or aside is not None) and not made:
        try:
            os.symlink(watched.link, watched.name, dir_fd=fd)
            restored = True
        except OSError as exc:
            log.warning("could not put back the symlink %r a sandboxed command replaced: %s", watched.name, exc)
    done = f"it was moved to {aside}" if aside else ("it is gone" if now is None else "it could NOT be moved aside")
    if restored:
        done += f"; the symlink {watched.name} -> {watched.link} was put back"
    verb = "made"
    if was and replaced and not made:
        verb = "removed" if now is None else "replaced"
    log.warning("a sandboxed command %s %s in %s (%s); %s", verb, ", ".join(what), folder, why, done)
    if stopped:
        done = f"the command was stopped as soon as it did; {done}"
    return (
        f"the command {verb} {', '.join(what)}, which a sandboxed command may not — {why}. {done[0].upper()}{done[1:]}. "
        f'To {"make" if verb == "made" else "change"} it, run the command again with "sandbox": false and a "reason" '
        "saying why (the user is asked)"
    )


# ------------------------------------------------------------------ seeing it made at once

_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_IN_MASK = _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE | _IN_ONLYDIR
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then the name, NUL-padded)
MAX_FOLLOWED = 64
ANY = "*"  # Lookout.names(): events were lost, every watched name may have changed


class Lookout:
    """The kernel's word (inotify) on names made, removed or renamed directly in the folder — and
    one level down in a directory :meth:`follow` names —, so that a command which makes a
    protected name can be stopped at once rather than when it ends. Raises OSError when inotify
    cannot be had (then only :meth:`Protection.settle` acts, when the command ends)."""

    def __init__(self, folder: str):
        import ctypes

        self.folder = folder
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self._dirs: dict[int, str] = {}
        try:
            self._add(folder, "", follow=False)
        except OSError:
            os.close(self.fd)
            raise

    def _add(self, path: str, name: str, *, follow: bool) -> None:
        import ctypes

        mask = _IN_MASK | (0 if follow else _IN_DONT_FOLLOW)
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_add_watch({path}): {os.strerror(code)}")
        self._dirs[wd] = name

    def follow(self, name: str) -> None:
        """Watch the folder's directory ``name`` too (through a symlink): its events count for ``name``."""
        if name in self._dirs.values() or len(self._dirs) > MAX_FOLLOWED:
            return
        try:
            self._add(os.path.join(self.folder, name), name, follow=True)
        except OSError:
            pass  # gone meanwhile, or not a directory: the end of the command still looks

    def names(self) -> set[str]:
        """The folder's names the pending events concern (an event in a followed directory: its name)."""
        seen: set[str] = set()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return seen
            if not data:
                return seen
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, _mask, _cookie, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                if wd == -1:  # the queue overflowed: events were lost
                    seen.add(ANY)
                    continue
                top = self._dirs.get(wd)
                if top is None:
                    continue
                seen.add(top or os.fsdecode(raw))

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


# ------------------------------------------------------------------ what to protect


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _read(path: str) -> str | None:
    """A small file's text (None: absent, not a regular file, or too large)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def _git_value(raw: str) -> str:
    """A git config value: comments cut, quotes and escapes undone (no continuation lines)."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def git_config_paths(text: str) -> tuple[list[str], list[str]]:
    """(core.hooksPath values, include.path and includeIf.*.path values) of a git config file."""
    hooks: list[str] = []
    includes: list[str] = []
    section = ""
    for line in text.splitlines():
        heading = _SECTION.match(line)
        if heading:
            section = heading.group(1).lower() + ("." if heading.group(2) is not None else "")
            line = heading.group(3)
            if not line.strip():
                continue
        entry = _ENTRY.match(line)
        if not entry or entry.group(2) is None:
            continue
        key, value = entry.group(1).lower(), _git_value(entry.group(2))
        if section == "core" and key == "hookspath" and value:
            hooks.append(value)
        elif section in ("include", "includeif.") and key == "path" and value:
            includes.append(value)
    return hooks, includes


def _expand(value: str, base: str) -> str:
    if value.startswith("~/") or value == "~":
        return os.path.expanduser(value)
    return os.path.join(base, value)


class _Planner:
    def __init__(self, folder: str, writable: list[str]):
        self.folder = folder
        self.writable = writable
        self.items: dict[str, Item] = {}
        self.absent: dict[str, Item] = {}
        self.watched: dict[str, Watched] = {}
        self.git_seen: set[str] = set()
        self.stats: dict[str, os.stat_result | None] = {}

    def lstat(self, path: str) -> os.stat_result | None:
        if path not in self.stats:
            self.stats[path] = _lstat(path)
        return self.stats[path]

    def writable_path(self, path: str) -> bool:
        return any(_under(path, root) for root in self.writable)

    def shown(self, path: str) -> str:
        if _under(path, self.folder) and path != self.folder:
            return path[len(self.folder) :].lstrip("/")
        return path

    def read_only(self, path: str, why: str, *, real: bool = False) -> None:
        """``real``: ``path`` is known to be real (made of components that are no symlinks)."""
        if not real:
            path = os.path.realpath(path)
        if path in self.items or not self.writable_path(path):
            return  # Landlock already refuses writes there
        if not real and self.lstat(path) is None:
            return
        self.items[path] = Item(path, self.shown(path), why)

    def entry(self, rel: str, why: str) -> None:
        """A path relative to the folder (see the module for what each case becomes)."""
        parts = [p for p in rel.split("/") if p and p != "."]
        if not parts or ".." in parts:
            return
        here = self.folder
        for i, part in enumerate(parts):
            path = f"{here}/{part}"
            st = self.lstat(path)
            if st is None or stat.S_ISLNK(st.st_mode):
                if here == self.folder:
                    self.watch(parts[0], "/".join(parts), why, st)
                else:
                    self.read_only(here, why, real=True)  # the directory that would hold it
                    full = os.path.join(self.folder, rel)
                    self.absent.setdefault(full, Item(full, self.shown(full), why))
                if st is not None and os.path.exists(os.path.join(self.folder, rel)):
                    self.read_only(os.path.join(self.folder, rel), why)  # what the symlink leads to
                return
            if i == len(parts) - 1:
                self.read_only(path, why, real=True)
            elif not stat.S_ISDIR(st.st_mode):
                return  # a file where a directory would be: the path cannot be made
            here = path

    def watch(self, name: str, rel: str, why: str, st: os.stat_result | None) -> None:
        watched = self.watched.get(name)
        if watched is None:
            link = None
            if st is not None:
                try:
                    link = os.readlink(os.path.join(self.folder, name))
                except OSError:
                    link = None
            watched = self.watched[name] = Watched(name, [], link, frozenset())
        watched.entries.append((rel, why))
        if st is not None:  # a symlink: what it leads to now (nothing is beneath a name that is not there)
            watched.present = _present(self.folder, watched.entries)

    def protect_path(self, path: str, why: str) -> None:
        """An absolute path: read-only when it exists; inside the folder, as an entry."""
        if _under(path, self.folder) and path != self.folder:
            self.entry(self.shown(path), why)
        else:
            self.read_only(path, why)

    def git(self, dot_git: str) -> None:
        """A ``.git`` (directory or file) and what git's files there name."""
        worktree = os.path.dirname(dot_git)
        git_dir = dot_git
        st = self.lstat(dot_git)
        if st is not None and stat.S_ISREG(st.st_mode):
            text = _read(dot_git) or ""
            match = re.match(r"gitdir:\s*(.+)", text.strip())
            if not match:
                return
            git_dir = os.path.realpath(os.path.join(worktree, match.group(1).strip()))
            self.protect_path(git_dir, GIT_DIR_WHY)
        git_dir = os.path.realpath(git_dir)
        if git_dir in self.git_seen or not os.path.isdir(git_dir):
            return
        self.git_seen.add(git_dir)
        common = git_dir
        named = _read(os.path.join(git_dir, "commondir"))
        if named and named.strip():
            common = os.path.realpath(os.path.join(git_dir, named.strip()))
            self.protect_path(common, GIT_DIR_WHY)
        configs = [os.path.join(common, "config"), os.path.join(git_dir, "config.worktree")]
        self.git_configs(configs, worktree, 0)

    def git_configs(self, paths: list[str], worktree: str, depth: int) -> None:
        for config in dict.fromkeys(paths):
            text = _read(config)
            if text is None:
                continue
            hooks, includes = git_config_paths(text)
            for value in hooks:
                hooks_dir = os.path.realpath(_expand(value, worktree))
                self.protect_path(hooks_dir, HOOKS_PATH_WHY)
                if os.path.basename(hooks_dir) == "_":  # husky ≥ 9: its hooks run the scripts beside `_`
                    self.protect_path(os.path.dirname(hooks_dir), HOOKS_PATH_WHY)
            included = [os.path.realpath(_expand(value, os.path.dirname(config))) for value in includes]
            for path in included:
                self.protect_path(path, INCLUDE_WHY)
            if depth < MAX_INCLUDE_DEPTH:
                self.git_configs(included, worktree, depth + 1)

    def submodules(self) -> None:
        text = _read(os.path.join(self.folder, ".gitmodules"))
        if not text:
            return
        paths = re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, re.MULTILINE)
        for rel in paths[:MAX_SUBMODULES]:
            rel = _git_value(rel)
            parts = rel.split("/")
            if not rel or rel.startswith("/") or ".." in parts:
                continue
            dot_git = os.path.join(self.folder, rel, ".git")
            if os.path.lexists(dot_git):
                self.entry(f"{rel}/.git", VCS_WHY)
                self.git(dot_git)

    def ancestors(self) -> None:
        """Version-control metadata of the folders above: a repository the folder is part of."""
        here = self.folder
        for _ in range(MAX_ANCESTORS):
            parent = os.path.dirname(here)
            if parent == here:
                return
            here = parent
            # Above what the command may write, only what a .git there names can be writable.
            for name in VCS_NAMES if self.writable_path(here) else (".git",):
                path = os.path.join(here, name)
                if self.lstat(path) is not None:
                    self.read_only(path, VCS_WHY)
                    if name == ".git":
                        self.git(path)

    def pins(self) -> list[str]:
        """The directories between each protected path and a directory the command may write
        (the folder, /tmp): bound over themselves so that they cannot be renamed away."""
        protected = list(self.items) + [os.path.join(self.folder, name) for name in self.watched]
        pinned: set[str] = set()
        for path in protected:
            here = os.path.dirname(path)
            while here not in pinned:
                parent = os.path.dirname(here)
                if parent == here or not self.writable_path(parent):
                    break
                pinned.add(here)
                here = parent
        return sorted(p for p in pinned if not any(_under(p, ro) for ro in self.items))


def protect(folder: str, extra: Iterable[str], writable: Iterable[str], home: str | None = None) -> Protection:
    """What a sandboxed command in ``folder`` may not write, from what exists now (the module).
    ``extra``: the user's own paths (relative to the folder); ``writable``: every directory the
    command may write (the folder among them); ``home``: the user's home."""
    folder = os.path.realpath(folder)
    planner = _Planner(folder, [os.path.realpath(p) for p in dict.fromkeys([folder, *writable])])
    for rel, why in BUILT_IN:
        planner.entry(rel, why)
    for rel in extra:
        planner.entry(rel, USER_WHY)
    if home and os.path.isabs(home):
        home = os.path.realpath(home)
        if planner.writable_path(home):
            for rel in IN_HOME:
                planner.protect_path(os.path.join(home, rel), HOME_WHY)
    dot_git = os.path.join(folder, ".git")
    if planner.lstat(dot_git) is not None:
        planner.git(dot_git)
    planner.submodules()
    planner.ancestors()
    # A read-only path beneath another adds nothing.
    kept = [
        item for path, item in planner.items.items() if not any(_under(path, o) and path != o for o in planner.items)
    ]
    return Protection(folder, kept, planner.pins(), list(planner.watched.values()), list(planner.absent.values()))
