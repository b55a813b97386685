"""Shared tool primitives: results, limits (with their settings) and errors.

Confinement to the workspace folder lives in :mod:`.fsaccess`, how names are
shown in :mod:`.names`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .editor import EditorSession, ReadLog

__all__ = [
    "ToolResult",
    "ToolConfig",
    "ToolError",
    "OutsideWorkspace",
    "TOOL_VARIABLES",
    "cap_text",
]

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one tool call; ``content`` is what the model sees."""

    ok: bool
    content: str


@dataclass(frozen=True)
class ToolConfig:
    """Limits applied to tool calls; file tools apply the environment's settings on top (:meth:`with_env`)."""

    max_result_chars: int = 30_000
    command_timeout: float = 120.0
    max_output_bytes: int = 200_000
    grep_max_matches: int = 200
    # File tools: each call's blocking work runs on a thread with these bounds.
    deadline: float = 30.0  # seconds of work per call, then it stops and says so
    max_scan_bytes: int = 256 * MIB  # bytes read per call (read_file counting lines, grep)
    max_scan_entries: int = 100_000  # directory entries visited per call (list_dir, glob, grep)
    max_file_bytes: int = 10 * MIB  # larger files are skipped by grep and refused by edit_file
    max_write_bytes: int = 1 * MIB  # write_file content, edit_file old_string/new_string
    allow_vcs_writes: bool = False  # let write_file/edit_file write under .git/, .hg/, .svn/, .jj/
    # The run's editor (open documents, edits through it) and the session's record of what the
    # model read (conflict checks); see :mod:`.editor`. None: the disk only, no checks.
    editor: EditorSession | None = None
    reads: ReadLog | None = None

    def with_env(self) -> ToolConfig:
        """This config with the settings of ``TOOL_VARIABLES`` that are set; a bad value is a ToolError naming it."""
        overrides = _env_overrides(tuple((var, os.environ.get(var, "").strip()) for var, _ in TOOL_VARIABLES))
        return dataclasses.replace(self, **overrides) if overrides else self


# Environment variable → ToolConfig field (documented in SECURITY.md).
TOOL_VARIABLES = (
    ("CODY_TOOL_DEADLINE", "deadline"),
    ("CODY_TOOL_MAX_SCAN_BYTES", "max_scan_bytes"),
    ("CODY_TOOL_MAX_SCAN_ENTRIES", "max_scan_entries"),
    ("CODY_TOOL_MAX_FILE_BYTES", "max_file_bytes"),
    ("CODY_MAX_WRITE_BYTES", "max_write_bytes"),
    ("CODY_ALLOW_VCS_WRITES", "allow_vcs_writes"),
)


def _parse(var: str, raw: str, default: object) -> object:
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ToolError(f"the setting {var}={raw!r} is not 1 or 0; fix it or unset it")
    kind = int if isinstance(default, int) else float
    try:
        value = kind(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ToolError(f"the setting {var}={raw!r} is not a positive {kind.__name__}; fix it or unset it")
    return value


@functools.cache
def _env_overrides(settings: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The ToolConfig fields the given ``(variable, value)`` pairs set (cached; a bad value is not)."""
    names = dict(TOOL_VARIABLES)
    return {names[var]: _parse(var, raw, getattr(ToolConfig, names[var])) for var, raw in settings if raw}


class ToolError(Exception):
    """A tool-level problem; its message is shown to the model as-is."""


class OutsideWorkspace(ToolError):
    """A path leads outside the workspace folder."""


def cap_text(text: str, limit: int) -> str:
    """Cut ``text`` to about ``limit`` characters, ending with a clear marker."""
    if len(text) <= limit:
        return text

    def marker(omitted: int) -> str:
        return f"\n…[truncated: {omitted:,} more characters; narrow the request (line range, pattern) to see more]"

    keep = max(0, limit - len(marker(len(text))))
    return text[:keep] + marker(len(text) - keep)
