"""update_plan: the agent's short task list, which the user sees (Codex's shape).

`{explanation?, plan: [{step, status}]}` — the whole plan each time, at most one step
`in_progress`. It changes nothing on disk and is never asked about; it is offered in every mode
(in plan mode the model is asked to record its plan with it). The run core keeps the plan with
the session and tells the client (tools/kit.py, `ToolKit.plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...protocol.wire import Plan, PlanEntry
from .workspace import ToolConfig, ToolError, ToolResult

MAX_STEPS = 50
MAX_STEP_CHARS = 500
MAX_EXPLANATION_CHARS = 1000
STATUSES = ("pending", "in_progress", "completed")

DESCRIPTION = (
    "Keep a short plan the user sees as a checklist, for a task of several steps: every step, then the "
    "whole plan again as steps start and finish (at most one in_progress)."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {
            "type": "string",
            "maxLength": MAX_EXPLANATION_CHARS,
            "description": "Why it changed.",
        },
        "plan": {
            "type": "array",
            "maxItems": MAX_STEPS,
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string", "maxLength": MAX_STEP_CHARS},
                    "status": {"type": "string", "enum": list(STATUSES)},
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["plan"],
    "additionalProperties": False,
}


def plan_of(args: dict[str, Any]) -> Plan:
    """The plan the (schema-checked) arguments give; ToolError saying what is wrong."""
    entries = []
    for i, item in enumerate(args["plan"]):
        step = " ".join(item["step"].split())
        if not step:
            raise ToolError(f"step {i + 1} of the plan is empty: give each step a few words")
        entries.append(PlanEntry(step, item["status"]))
    doing = [i + 1 for i, e in enumerate(entries) if e.status == "in_progress"]
    if len(doing) > 1:
        raise ToolError(
            f"steps {', '.join(map(str, doing))} are all in_progress: at most one step is in_progress at a time "
            "(mark the others pending or completed) — the plan was not changed"
        )
    explanation = " ".join((args.get("explanation") or "").split()) or None
    return Plan(entries, explanation)


def summary(plan: Plan) -> str:
    if not plan.entries:
        return "Plan cleared."
    counts = {status: sum(e.status == status for e in plan.entries) for status in STATUSES}
    shown = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n)
    return f"Plan updated: {len(plan.entries)} step{'s' if len(plan.entries) != 1 else ''} ({shown})."


async def update_plan(root: Path, args: dict[str, Any], config: ToolConfig) -> ToolResult:
    plan = plan_of(args)
    if config.kit is not None:
        await config.kit.plan(plan)
    return ToolResult(True, summary(plan))
