"""A snapshot's few changed files written into the store without git: blobs, and the trees above them.

A snapshot where a few files changed needs, besides git's look at the folder (`git status`), only
the blobs of those files and new trees for the directories above them: the rest of the tree is the
tree the index holds. Two git commands (`update-index`, `write-tree`) would each read and rewrite
the whole index of a large folder for that; here the objects are written directly, as git writes
loose objects (zlib, the SHA-1 of `<kind> <size>\\0<content>`, a temporary file renamed into
place), and the trees above them are rebuilt from the base tree's entries (read with `git cat-file`).

Files are read from a descriptor of the folder without following a symlink out of it (the file
tools' `Workspace`): a symlink is recorded as one (its target, mode 120000), a regular file with its
executable bit (100755 or 100644), anything else is left out, as `git update-index` does. A file over
the size cap is left out and reported, also when it grew past the cap while being read.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import zlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..tools.fsaccess import Workspace

TREE = b"40000"
SYMLINK = b"120000"
EXECUTABLE = b"100755"
REGULAR = b"100644"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
COMPRESSION = 1  # the store's core.looseCompression
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Entry = tuple[bytes, bytes]  # (mode, 20-byte object id)
Entries = dict[bytes, Entry]  # a tree: name → entry


def write_object(objects: Path, kind: bytes, data: bytes) -> str:
    """Blocking: store `data` as a loose object of `kind` (b"blob", b"tree") unless it is there; its id."""
    body = kind + b" " + str(len(data)).encode() + b"\0" + data
    oid = hashlib.sha1(body, usedforsecurity=False).hexdigest()
    directory = objects / oid[:2]
    path = directory / oid[2:]
    if path.exists():
        return oid
    directory.mkdir(mode=0o755, exist_ok=True)
    tmp = directory / f"tmp_obj_{secrets.token_hex(6)}"  # the name git's prune clears when left behind
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(zlib.compress(body, COMPRESSION))
        os.replace(tmp, path)  # the same content under the same name: replacing one is harmless
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return oid


def parse_tree(data: bytes) -> Entries:
    """The entries of a tree object's content."""
    entries: Entries = {}
    pos, end = 0, len(data)
    while pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
        pos = nul + 21
    if pos != end:
        raise ValueError("a tree object ends inside an entry")
    return entries


def format_tree(entries: Entries) -> bytes:
    """A tree object's content: entries in git's order (a directory sorts as its name and '/')."""
    ordered = sorted(entries.items(), key=lambda item: item[0] + b"/" if item[1][0] == TREE else item[0])
    return b"".join(mode + b" " + name + b"\0" + oid for name, (mode, oid) in ordered)


@dataclass
class Read:
    """What :func:`read_files` found: each path's entry (None: not recorded — gone, not a regular file
    or symlink, or too big), and the files left out for their size."""

    entries: dict[bytes, Entry | None] = field(default_factory=dict)
    too_big: list[tuple[bytes, int]] = field(default_factory=list)


def read_files(folder: str, paths: Iterable[bytes], objects: Path, max_file_bytes: int) -> Read:
    """Blocking: store each path's content as a blob (paths from the folder, as git names them);
    what each path is now."""
    found = Read()
    root = os.fsencode(folder)
    real_dirs: dict[bytes, bool] = {b"": True}
    with Workspace(folder) as ws:
        for path in paths:
            entry = None
            try:
                if real_dir(root, os.path.dirname(path), real_dirs):
                    entry = _read_one(ws, root, path, objects, max_file_bytes)
            except _TooBig as big:
                found.too_big.append((path, big.size))
            except OSError:
                pass  # gone, or not reachable inside the folder any more
            found.entries[path] = entry
    return found


class _TooBig(Exception):
    def __init__(self, size: int):
        self.size = size


def _read_one(ws: Workspace, root: bytes, path: bytes, objects: Path, max_file_bytes: int) -> Entry | None:
    full = os.path.join(root, path)
    st = os.lstat(full)
    if stat.S_ISLNK(st.st_mode):
        return SYMLINK, bytes.fromhex(write_object(objects, b"blob", os.readlink(full)))
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > max_file_bytes:
        raise _TooBig(st.st_size)
    name = os.fsdecode(path)
    fd = ws.open(name.split("/"), _READ, path=name)  # inside the folder, whatever changed meanwhile
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > max_file_bytes:
                raise _TooBig(max(size, os.fstat(fd).st_size))
            chunks.append(chunk)
    finally:
        os.close(fd)
    mode = EXECUTABLE if st.st_mode & stat.S_IXUSR else REGULAR
    return mode, bytes.fromhex(write_object(objects, b"blob", b"".join(chunks)))


def real_dir(root: bytes, path: bytes, known: dict[bytes, bool]) -> bool:
    """Whether `path` (from the folder) is a directory reached through no symlink."""
    found = known.get(path)
    if found is None:
        try:
            found = real_dir(root, os.path.dirname(path), known) and stat.S_ISDIR(
                os.lstat(os.path.join(root, path)).st_mode
            )
        except OSError:
            found = False
        known[path] = found
    return found


async def load_trees(
    base: str, paths: Iterable[bytes], read: Callable[[str], Awaitable[bytes]]
) -> dict[bytes, Entries]:
    """The entries of every directory of the tree `base` above `paths` (directory path → entries;
    b"" is the root). A directory `base` does not have is not in the answer."""
    wanted = {b""}
    for path in paths:
        directory = os.path.dirname(path)
        while directory not in wanted:
            wanted.add(directory)
            directory = os.path.dirname(directory)
    trees = {b"": parse_tree(await read(base))}
    for directory in sorted(wanted - {b""}, key=lambda d: d.count(b"/")):
        parent = trees.get(os.path.dirname(directory))
        entry = parent.get(os.path.basename(directory)) if parent is not None else None
        if entry is not None and entry[0] == TREE:
            trees[directory] = parse_tree(await read(entry[1].hex()))
    return trees


def build_tree(trees: dict[bytes, Entries], changes: dict[bytes, Entry | None], objects: Path) -> str:
    """Blocking: the tree of `trees` (from :func:`load_trees`) with each changed path set to its entry
    or removed (None); writes the new trees. A directory left empty goes (git has no empty trees);
    a file where a directory was replaces it, and the other way round."""
    new = {directory: dict(entries) for directory, entries in trees.items()}
    files: dict[bytes, set[bytes]] = {}  # directory → names set to a file or symlink by a change
    for path, entry in changes.items():
        directory, name = os.path.dirname(path), os.path.basename(path)
        ancestor = directory
        while ancestor not in new:
            new[ancestor] = {}
            ancestor = os.path.dirname(ancestor)
        if entry is None:
            new[directory].pop(name, None)
        else:
            new[directory][name] = entry
            files.setdefault(directory, set()).add(name)
    for directory in sorted(new, key=lambda d: (d.count(b"/"), len(d)), reverse=True):
        if directory == b"":
            continue
        parent, name = os.path.dirname(directory), os.path.basename(directory)
        if name in files.get(parent, ()):
            continue  # a file took the directory's place
        entries = new[directory]
        if not entries:
            if new[parent].get(name, (b"",))[0] == TREE:
                del new[parent][name]
            continue
        unchanged = trees.get(directory) == entries and new[parent].get(name, (b"",))[0] == TREE
        if not unchanged:
            new[parent][name] = (TREE, bytes.fromhex(write_object(objects, b"tree", format_tree(entries))))
    if not new[b""]:
        return EMPTY_TREE
    return write_object(objects, b"tree", format_tree(new[b""]))
