"""Shared tool primitives: results, limits (with their settings) and errors.

Confinement to the workspace folder lives in :mod:`.fsaccess`, how names are
shown in :mod:`.names`; the limits a user sets, in :mod:`cody_lsp.config` (``ToolLimits``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import TOOL_LIMIT_SOURCES, ToolLimits
from .sandbox import SandboxSettings

if TYPE_CHECKING:
    from .editor_view import EditorSession, ReadLog

__all__ = [
    "FileDiff",
    "ToolResult",
    "ToolConfig",
    "ToolError",
    "OutsideWorkspace",
    "limit_source",
    "cap_text",
]


@dataclass(frozen=True, slots=True)
class FileDiff:
    """What a write or an edit changed in one file: its whole text before (None: it did not
    exist, or could not be read as text within the limits) and after."""

    path: str  # the file's real path
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one tool call; ``content`` is what the model sees."""

    ok: bool
    content: str
    # write_file/edit_file, when the run's ToolConfig asks for diffs: what changed.
    diff: FileDiff | None = None
    # write_file/edit_file: the real path of the file the call changed.
    changed: str | None = None


_LIMITS = ToolLimits()
# A run's skills: the `skill` tool's work (a skill's name → what the model reads).
SkillLoader = Callable[[str], Awaitable["ToolResult"]]


@dataclass(frozen=True)
class ToolConfig:
    """Limits applied to tool calls, and the run's editor. The bounds a user may set
    (:class:`~cody_lsp.config.ToolLimits`, from the environment or the editor's settings) are
    applied to a run's config with :meth:`with_limits`."""

    max_result_chars: int = 30_000
    command_timeout: float = _LIMITS.command_timeout
    max_output_bytes: int = 200_000
    grep_max_matches: int = 200
    # File tools: each call's blocking work runs on a thread with these bounds.
    deadline: float = _LIMITS.deadline
    max_scan_bytes: int = _LIMITS.max_scan_bytes
    max_scan_entries: int = _LIMITS.max_scan_entries
    max_file_bytes: int = _LIMITS.max_file_bytes
    max_write_bytes: int = _LIMITS.max_write_bytes
    mcp_call_timeout: float = _LIMITS.mcp_call_timeout  # seconds an MCP tool call may take
    allow_vcs_writes: bool = False  # let write_file/edit_file write under .git/, .hg/, .svn/, .jj/
    # The run's editor (open documents, edits through it) and the session's record of what the
    # model read (conflict checks); see :mod:`.editor`. None: the disk only, no checks.
    editor: EditorSession | None = None
    reads: ReadLog | None = None
    # write_file/edit_file report what they changed (`ToolResult.diff`): the ACP face shows it.
    diffs: bool = False
    # …and the run sends it on their tool_result, as an EditDiff (a cody/* client that declared
    # `editDiffs`), instead of as a FileEdited payload.
    edit_diffs: bool = False
    # The run tells when each tool call starts to run, after its approval (`ToolStarted`,
    # agent/output.py): the ACP face shows it as the call's `in_progress`.
    announce_starts: bool = False
    # run_command of a call that runs outside the sandbox runs here instead, when set: an ACP
    # client's terminal (server/acp/terminals.py). A sandboxed call always runs in the agent.
    terminal: ToolHandler | None = None
    # run_command: the run's sandbox (sandbox.py), and whether this call runs in it (what the
    # permission check answered for the policy `sandboxed`).
    sandbox: SandboxSettings = SandboxSettings()
    sandboxed: bool = False
    # What the run core gives the run's tools (a kit.ToolKit: the session's plan, its background
    # commands, live output, the web's settings); None: none of it (a tool says so). Not typed
    # here: kit.py imports the tools that import this module.
    kit: Any = None
    # The tool call being run (its live output is told under its id).
    call_id: str | None = None
    # The run's skills (agent/skills.py): the `skill` tool loads one by name; read_file may also
    # read these folders (the user's skills, outside the workspace), read-only.
    skills: SkillLoader | None = None
    read_roots: tuple[str, ...] = ()
    # code_nav: the run's sources (code_nav.Navigator: the editor, language servers); None: not offered.
    navigator: Any = None

    def with_limits(
        self, limits: ToolLimits, *, allow_vcs_writes: bool, sandbox: SandboxSettings | None = None
    ) -> ToolConfig:
        """This config with a run's settings."""
        return dataclasses.replace(
            self, **dataclasses.asdict(limits), allow_vcs_writes=allow_vcs_writes, sandbox=sandbox or self.sandbox
        )


def limit_source(variable: str) -> str:
    """Where a tool limit is set, for the model's messages: `CODY_X, or the editor's cody.x`."""
    return TOOL_LIMIT_SOURCES[variable]


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


# A tool's implementation: (the workspace folder, the validated arguments, the run's tool
# settings) → its result.
ToolHandler = Callable[[Path, dict[str, Any], ToolConfig], Awaitable[ToolResult]]
