"""The session's mode in ACP terms (acp.md, "Session modes"): the core's modes (agent/modes.py) as
ACP session modes — `modes` in the answers of session/new, load and resume, `session/set_mode`,
the `current_mode_update` notification — and as the `mode` configuration option (category `mode`),
the spec's newer form of the same choice. Both say the same: a change through one is told through
the other too."""

from __future__ import annotations

from typing import Any

from ...protocol.wire import InvalidParams, SessionMode
from ..agent.modes import MODES

CHOICES: dict[SessionMode, tuple[str, str]] = {
    "code": ("Code", "Every tool, under the tool policy and your approvals"),
    "ask": ("Ask", "Read-only: the agent reads the workspace and answers; it cannot change files or run commands"),
    "plan": (
        "Plan",
        "Read-only, and the answer is a step-by-step plan; /go carries it out in code mode",
    ),
}


def mode_state(mode: str) -> dict[str, Any]:
    """`modes` of session/new, load and resume (SessionModeState)."""
    available = [{"id": m, "name": CHOICES[m][0], "description": CHOICES[m][1]} for m in MODES]
    return {"currentModeId": mode, "availableModes": available}


def mode_option(mode: str) -> dict[str, Any]:
    """The `mode` configuration option (a select of category `mode`)."""
    return {
        "id": "mode",
        "name": "Mode",
        "description": "What the agent may do in the session's next turns",
        "category": "mode",
        "type": "select",
        "currentValue": mode,
        "options": [{"value": m, "name": CHOICES[m][0], "description": CHOICES[m][1]} for m in MODES],
    }


def checked_mode(value: Any, field: str) -> SessionMode:
    """`value` as a mode; -32602 naming `field` and the modes otherwise."""
    for mode in MODES:
        if value == mode:
            return mode
    raise InvalidParams(f"{field!r} must be one of {', '.join(map(repr, MODES))}, got {value!r}")


def mode_update(mode: str) -> dict[str, Any]:
    return {"sessionUpdate": "current_mode_update", "currentModeId": mode}
