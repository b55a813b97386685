"""Shared tool primitives: results, config, errors and workspace path confinement.

Every path a tool touches goes through :func:`resolve_in_workspace`, which
resolves ``..`` and symlinks first and only then checks that the real path is
the workspace root or lies below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ToolResult",
    "ToolConfig",
    "ToolError",
    "OutsideWorkspace",
    "resolve_in_workspace",
    "is_inside",
    "display_path",
    "cap_text",
]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one tool call; ``content`` is what the model sees."""

    ok: bool
    content: str


@dataclass(frozen=True)
class ToolConfig:
    """Limits applied to tool calls."""

    max_result_chars: int = 30_000
    command_timeout: float = 120.0
    max_output_bytes: int = 200_000
    grep_max_matches: int = 200


class ToolError(Exception):
    """A tool-level problem; its message is shown to the model as-is."""


class OutsideWorkspace(ToolError):
    """A path resolves outside the workspace folder."""


def is_inside(root: Path | str, real_path: Path | str) -> bool:
    """True if ``real_path`` (already resolved) is ``root`` or below it."""
    root_s, path_s = os.fspath(root), os.fspath(real_path)
    try:
        return os.path.commonpath([root_s, path_s]) == root_s
    except ValueError:  # e.g. mixing absolute and relative paths
        return False


def resolve_in_workspace(root: Path, path: str) -> Path:
    """Resolve ``path`` (relative to ``root`` or absolute) to a real path inside ``root``.

    ``..`` components and symlinks (including dangling ones) are resolved
    before the check, so a link pointing outside the workspace is refused.
    Raises :class:`OutsideWorkspace` otherwise.
    """
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    root = Path(os.path.realpath(root))
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    real = Path(os.path.realpath(candidate))
    if not is_inside(root, real):
        raise OutsideWorkspace(
            f"path '{path}' resolves to {real}, which is outside the workspace "
            f"folder {root}; only files inside the workspace can be used"
        )
    return real


def display_path(root: Path, real_path: Path) -> str:
    """Workspace-relative POSIX form of a resolved path ("." for the root; ``root`` is a realpath)."""
    rel = os.path.relpath(real_path, root)
    return Path(rel).as_posix()


def cap_text(text: str, limit: int) -> str:
    """Cut ``text`` to about ``limit`` characters, ending with a clear marker."""
    if len(text) <= limit:
        return text

    def marker(omitted: int) -> str:
        return f"\n…[truncated: {omitted:,} more characters; narrow the request (line range, pattern) to see more]"

    keep = max(0, limit - len(marker(len(text))))
    return text[:keep] + marker(len(text) - keep)
