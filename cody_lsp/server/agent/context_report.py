"""What a session's next model request would carry, part by part (cody/getContext): the system
prompt, each instruction file, the tools offered in the session's mode, and the history the model
reads — estimated as the context budget estimates a request (budget.py: characters, calibrated
with what the endpoint counted of the session's last request). Nothing is sent to the model."""

from __future__ import annotations

from pathlib import Path

from ...protocol.wire import ContextReport, InstructionSize, SessionMode
from ..tools import ToolSet
from .budget import TokenBudget, calibrated, raw_tokens
from .compaction import History
from .instructions import NO_INSTRUCTIONS, Instructions
from .modes import offered
from .turn import system_message


def context_report(
    model: str,
    budget: TokenBudget,
    folder: Path,
    mode: SessionMode,
    instructions: Instructions,
    tools: ToolSet,
    history: History,
    context_tokens: int | None,
) -> ContextReport:
    calibration = history.calibration

    def tokens(*parts: object) -> int:
        return calibrated(raw_tokens(*parts), calibration)

    system = system_message(folder, mode, instructions)
    schemas = offered(tools, mode).schemas()
    view = history.messages
    sizes = [InstructionSize(f.path, tokens(f"## {f.path}\n{f.text}")) for f in instructions.files]
    summarized = bool(history.state is not None and history.state.summary)
    return ContextReport(
        model,
        budget.window,
        budget.reserve,
        tokens(system_message(folder, mode, NO_INSTRUCTIONS)),
        sizes,
        len(schemas),
        tokens(schemas) if schemas else 0,
        len(view),
        tokens(view) if view else 0,
        summarized,
        tokens([system, *view], schemas),
        context_tokens,
    )
