"""What a write_file or edit_file call changes, as a unified diff a client can show (wire `EditDiff`).

Before such a call is asked about (core/permissions.py, when a person is to be asked: the
turn's `Proposal` of the call, in its task), `check_change` works it out as the tool would, against the
file's text now (files.py's `planned_change`: the open document in the editor, else the disk),
writing nothing: a call that cannot apply (`old_string` not found exactly once, the file changed
since the model read it, a limit) is answered with the tool's own error without asking anyone,
a write that leaves the text as it is is answered as such, and any other change goes with the
question as a diff. After the call, the tool's own report of what it changed (`ToolResult.diff`)
is turned into the same shape for the client (`edit_diff`).

A diff is bounded: texts larger than `MAX_DIFF_INPUT` characters are not compared (the counts
say 0 and the diff says why), and a diff is cut at `MAX_DIFF_CHARS` (`truncated`).
"""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...protocol.wire import EditDiff
from ...secrets import env_secrets, redact_all
from .files import planned_change
from .registry import TOOLS, validate_args
from .workspace import FileDiff, ToolConfig, ToolError

EDIT_TOOLS = ("write_file", "edit_file")
CONTEXT_LINES = 3
MAX_DIFF_CHARS = 200_000  # of a diff sent to a client
MAX_DIFF_INPUT = 4_000_000  # characters of a text compared (difflib is quadratic at worst)

UNCHANGED = "{path} already holds exactly this content: nothing was written (there was nothing to approve)."


def diff_lines(path: str, before: str | None, after: str) -> tuple[str, int, int, bool]:
    """(the unified diff, lines added, lines removed, truncated) of `before` → `after`."""
    if len(before or "") > MAX_DIFF_INPUT or len(after) > MAX_DIFF_INPUT:
        return f"(not compared: more than {MAX_DIFF_INPUT:,} characters)\n", 0, 0, True
    old = [] if before is None else before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    lines = list(
        difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{path}", f"b/{path}", n=CONTEXT_LINES)
    )
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    out: list[str] = []
    size = 0
    truncated = False
    for line in lines:
        if not line.endswith("\n"):  # the file's last line has no newline
            line += "\n\\ No newline at end of file\n"
        if size + len(line) > MAX_DIFF_CHARS:
            truncated = True
            break
        out.append(line)
        size += len(line)
    return "".join(out), added, removed, truncated


def make_diff(path: str, before: str | None, after: str, created: bool) -> EditDiff:
    text, added, removed, truncated = diff_lines(path, before, after)
    return EditDiff(path, text, created, added, removed, True if truncated else None)


async def edit_diff(diff: FileDiff, folder: Path) -> EditDiff:
    """The change a tool made (its `ToolResult.diff`), as a client is shown it (off the event loop)."""
    path = os.path.relpath(diff.path, os.path.realpath(folder)) if os.path.isabs(diff.path) else diff.path
    return await asyncio.to_thread(make_diff, path, diff.old_text, diff.new_text, diff.old_text is None)


@dataclass(frozen=True)
class Checked:
    """What a write_file/edit_file call would do, worked out before it is asked about."""

    refusal: str | None = None  # it cannot apply: the tool's error, told to the model
    unchanged: str | None = None  # it would change nothing: told to the model, nothing runs
    diff: EditDiff | None = None  # what it would change


NOTHING_TO_CHECK = Checked()


async def check_change(name: str, args: dict[str, Any], folder: Path, config: ToolConfig) -> Checked:
    """A write_file or edit_file call worked out against the file now (nothing for other tools):
    what the tool would refuse (its arguments, the file) is refused now, in the tool's words."""
    if name not in EDIT_TOOLS:
        return NOTHING_TO_CHECK
    try:
        clean = validate_args(TOOLS[name], args)
        planned = await planned_change(name, Path(os.path.realpath(folder)), clean, config)
    except ToolError as exc:
        return Checked(refusal=redact_all(str(exc), env_secrets(os.environ)))
    except Exception:  # whatever else the tool would meet, it meets when it runs
        return NOTHING_TO_CHECK
    if planned.existed and planned.before == planned.after:
        return Checked(unchanged=UNCHANGED.format(path=planned.path))
    diff = await asyncio.to_thread(make_diff, planned.path, planned.before, planned.after, not planned.existed)
    return Checked(diff=diff)


@dataclass
class Proposal:
    """A tool call whose permission is being checked (set by the turn around the check, in its
    task): worked out once, when a person is about to be asked (`check`)."""

    name: str
    args: dict[str, Any]
    folder: Path
    config: ToolConfig
    checked: Checked | None = None

    async def check(self) -> Checked:
        if self.checked is None:
            self.checked = await check_change(self.name, self.args, self.folder, self.config)
        return self.checked

    def answered(self) -> tuple[bool, str] | None:
        """(ok, what the model is told) when the check answered the call without asking, else None."""
        checked = self.checked
        if checked is None or (checked.refusal is None and checked.unchanged is None):
            return None
        return checked.refusal is None, checked.refusal or checked.unchanged or ""


_proposal: ContextVar[Proposal | None] = ContextVar("proposal", default=None)


@contextmanager
def proposing(proposal: Proposal) -> Iterator[None]:
    token = _proposal.set(proposal)
    try:
        yield
    finally:
        _proposal.reset(token)


def proposal() -> Proposal | None:
    """The call whose permission is being checked in this task (None: none)."""
    return _proposal.get()
