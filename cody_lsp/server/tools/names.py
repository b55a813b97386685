"""Path names as the model sees them, and which names are version-control metadata.

File names are bytes on Linux; Python hands them over as ``str`` with
``surrogateescape`` (a byte that is not valid UTF-8 becomes U+DC80..U+DCFF).
The model sees every name *shown*: valid Unicode on one line, where

* a byte that is not valid UTF-8, or an ASCII control character, is ``\\xHH``;
* C1 controls and the Unicode line/paragraph separators are ``\\uHHHH``;
* a backslash that would otherwise read as one of these escapes is ``\\x5c``.

Every path argument a tool receives is read back with :func:`unescape`, so the
name shown is the name that works (``read_file`` of ``bad\\xff.txt`` opens the
file whose name has the byte 0xFF). A path written with a literal ``\\xHH`` is
read as that escape, too.
"""

from __future__ import annotations

import posixpath
import re

from .workspace import OutsideWorkspace, ToolError

__all__ = ["show", "show_parts", "unescape", "relative_parts", "vcs_component", "VCS_DIRS"]

_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))")
_NEEDS_ESCAPE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff]|\\(?=x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")

# Directories (and, for git worktrees and submodules, files) that belong to a version-control system.
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".jj"})
# Code points some filesystems ignore in names (HFS+), so `.g\u200cit` can be `.git` there.
_IGNORABLE = re.compile("[\u00ad\u034f\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")


def _escape_one(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def show(name: str) -> str:
    """The shown form of a name or path (see the module docstring); the identity for ordinary names."""
    return _NEEDS_ESCAPE.sub(_escape_one, name)


def show_parts(parts: list[str] | tuple[str, ...]) -> str:
    """The shown form of a path given as names from the folder ("." for the folder itself)."""
    return show("/".join(parts)) or "."


def _unescape_one(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        byte = int(m.group(1), 16)
        return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)
    return chr(int(m.group(2), 16))


def unescape(text: str) -> str:
    """The real name behind a shown one: ``unescape(show(n)) == n`` for every name."""
    return _ESCAPE.sub(_unescape_one, text) if "\\" in text else text


def relative_parts(root: str, path: str, *, shown: bool = True) -> list[str]:
    """The names leading from ``root`` to ``path``, as written.

    ``path`` is relative to ``root`` or absolute and lexically under it; when
    ``shown`` it is read back with :func:`unescape` first (a symlink's target is
    not). ``..`` is applied to the path as written, before any symlink is looked
    at; a path that climbs above the root is refused. ``[]`` is the root itself.
    """
    text = unescape(path) if shown else path
    if "\0" in text:
        raise ToolError(f"path '{show(path)}' contains a NUL character")
    if text.startswith("/"):
        norm = posixpath.normpath(text)
        if root == "/":
            text = norm.lstrip("/")
        elif norm == root or norm.startswith(root + "/"):
            text = norm[len(root) + 1 :]
        else:
            raise outside(path)
    norm = posixpath.normpath(text or ".")
    if norm == ".." or norm.startswith("../"):
        raise outside(path)
    return [] if norm == "." else norm.split("/")


def outside(path: str, link: str | None = None) -> OutsideWorkspace:
    """The refusal of a path outside the folder; it never names the outside target."""
    how = f" through the symlink '{show(link)}'" if link is not None else ""
    return OutsideWorkspace(
        f"path '{show(path)}' leads outside the workspace folder{how}; only files inside the workspace can be used"
    )


def _canonical(name: str) -> str:
    """A name as a case-insensitive, Unicode-ignoring or Windows filesystem may compare it."""
    return _IGNORABLE.sub("", name).casefold().rstrip(". ")


def vcs_component(parts: list[str] | tuple[str, ...]) -> str | None:
    """The first name in ``parts`` that is version-control metadata (``.git``, ``.GIT``, ``git~1``…), or None."""
    for name in parts:
        canon = _canonical(name)
        if canon in VCS_DIRS or canon == "git~1":
            return name
    return None
