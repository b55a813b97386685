"""The editor's problems in a file the agent changed, given to the model with the tool's result.

After `write_file` or `edit_file` changes a file, a client that reports diagnostics (its port's
`diagnostics`, core/port.py) is asked for the file's problems — right before the change (at once)
and after it (once they settled, at most `CODY_DIAGNOSTICS_WAIT` seconds) — and the errors and
warnings that were not there before are appended to the result::

    edited app.py: replaced 1 occurrence starting at line 12

    New problems in app.py (reported by the editor):
    - line 12:5: error: "nme" is not defined (Pylance reportUndefinedVariable)

A problem is the same as one before when its severity, message, source and code are (lines move
with an edit). No answer, an error answer or one that is late changes nothing; neither does a
client that does not report diagnostics.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...protocol.wire import Diagnostic

log = logging.getLogger(__name__)

EDIT_TOOLS = frozenset({"write_file", "edit_file"})
MAX_SHOWN = 20  # problems listed in one result (the rest are counted)
MAX_MESSAGE_CHARS = 500  # of one problem's message
ANSWER_SLACK = 2.0  # seconds the client may take past the wait it was given
SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}

# (a file's real path, seconds to wait for its problems to settle; 0: at once) → the editor's
# problems of the file, or None when it has no answer.
AskDiagnostics = Callable[[str, float], Awaitable[list[Diagnostic] | None]]


def problem_text(diagnostic: Diagnostic) -> str:
    """`error: message (source code)`, on one line."""
    severity = SEVERITIES.get(diagnostic.severity or 1, "error")
    message = " ".join(diagnostic.message.split())
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "…"
    origin = " ".join(str(part) for part in (diagnostic.source, diagnostic.code) if part not in (None, ""))
    return f"{severity}: {message}{f' ({origin})' if origin else ''}"


def where(diagnostic: Diagnostic) -> str:
    """`12:5`: the problem's line and character, from 1."""
    start = diagnostic.range.start
    return f"{start.line + 1}:{start.character + 1}"


def _serious(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Errors and warnings (a problem without a severity counts as an error)."""
    return [d for d in diagnostics if (d.severity or 1) <= 2]


def _key(diagnostic: Diagnostic) -> tuple[object, ...]:
    return (diagnostic.severity or 1, diagnostic.message, diagnostic.source, diagnostic.code)


def new_problems(before: list[Diagnostic] | None, after: list[Diagnostic]) -> list[Diagnostic]:
    """The errors and warnings of `after` that `before` did not have (all of them without `before`)."""
    seen = Counter(_key(d) for d in _serious(before or []))
    fresh = []
    for diagnostic in _serious(after):
        key = _key(diagnostic)
        if seen[key]:
            seen[key] -= 1
        else:
            fresh.append(diagnostic)
    return sorted(fresh, key=lambda d: (d.severity or 1, d.range.start.line, d.range.start.character))


def problems_note(shown: str, problems: list[Diagnostic]) -> str:
    """What the model is told of a changed file's new problems ("" when there are none)."""
    if not problems:
        return ""
    rows = [f"- line {where(d)}: {problem_text(d)}" for d in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        rows.append(f"…and {len(problems) - MAX_SHOWN} more")
    return f"New problems in {shown} (reported by the editor):\n" + "\n".join(rows)


@dataclass(frozen=True)
class EditorProblems:
    """A run's view of the editor's problems: asked around each change a tool makes."""

    ask: AskDiagnostics
    wait: float  # seconds to let them settle after a change

    async def _report(self, path: str, wait: float) -> list[Diagnostic] | None:
        try:
            async with asyncio.timeout(wait + ANSWER_SLACK):
                return await self.ask(path, wait)
        except TimeoutError:
            log.info("the editor did not report the problems of a changed file in time")
        except Exception:
            log.warning("asking the editor for a changed file's problems failed", exc_info=True)
        return None

    async def before(self, folder: str, path: str) -> tuple[str, list[Diagnostic] | None]:
        """The problems of the file a tool is about to change (`path` as the model gave it): its
        path as the folder spells it, and what the editor reports of it now."""
        target = os.path.normpath(os.path.join(os.path.realpath(folder), path))
        return target, await self._report(target, 0.0)

    async def after(self, path: str, before: list[Diagnostic] | None, shown: str) -> str:
        """The note of the changed file's new problems, once they settled ("" for none)."""
        after = await self._report(path, self.wait)
        return problems_note(shown, new_problems(before, after)) if after is not None else ""
