"""cody/getContext: what a session's next model request would carry, part by part
(agent/context_report.py) — the session's history, instructions and tools in its mode, or a
folder's when there is no session yet. Nothing is sent to the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...protocol.wire import ContextReport, SessionMode
from ..agent.budget import budget_for
from ..agent.compaction import History
from ..tools import builtin_tools
from .history_cache import HistoryCache
from .sessions import Sessions


async def get_context(sessions: Sessions, history_cache: HistoryCache, params: Any) -> ContextReport:
    from ..agent.context_report import context_report

    history, model, context_tokens = History(0), "", None
    mode: SessionMode = "code"
    if params.session_id is not None:
        session = await sessions.get(params.session_id)
        folder = session.workspace_folder
        history = await history_cache.load(session.id)
        mode, model, context_tokens = session.mode or "code", session.model, session.context_tokens
    else:
        folder = sessions.resolve_folder(params.workspace_folder)
    config = await sessions.config_for(folder)
    model = model or config.model.model or ""
    instructions = await sessions.instructions(folder, config)
    return context_report(
        model,
        budget_for(model, config.context),
        Path(folder),
        mode,
        instructions,
        builtin_tools(config.web.enabled),
        history,
        context_tokens,
    )
