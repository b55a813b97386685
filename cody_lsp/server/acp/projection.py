"""The store's records, as the ACP face's wire has them: a session as `session/list` lists it,
and its configuration options and modes (the answers of session/new, load and resume,
set_config_option, and `config_option_update`), its stored plan, and a folder's custom
commands. The one place the ACP face maps records onto its wire (a run's events are
updates.py's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.wire import PlanEntry
from ..store.records import PlanRecord, SessionRecord, SessionsPage
from .models import ModelChoices
from .modes import mode_option, mode_state
from .updates import plan_update

if TYPE_CHECKING:
    from ..agent.commands import Command
    from .messages import SessionUpdatePlan


def session_info(session: SessionRecord) -> dict[str, Any]:
    """A session of `session/list` (the spec's SessionInfo)."""
    return {
        "sessionId": session.id,
        "cwd": session.workspace_folder,
        "title": session.title,
        "updatedAt": session.updated_at,
    }


def session_list(page: SessionsPage) -> dict[str, Any]:
    """The answer of `session/list`."""
    result: dict[str, Any] = {"sessions": [session_info(s) for s in page.sessions]}
    if page.next_cursor is not None:
        result["nextCursor"] = page.next_cursor
    return result


def config_options(models: ModelChoices, session: SessionRecord) -> list[dict[str, Any]]:
    """The session's configuration options: its model (category `model`), among the session's own,
    the environment's (`CODY_MODEL`) and the endpoint's (models.py); its mode (category `mode`,
    modes.py)."""
    return [*models.options(session.model), mode_option(session.mode or "code")]


def session_state(models: ModelChoices, session: SessionRecord) -> dict[str, Any]:
    """What the answers of session/new, load and resume say of the session: its configuration
    options and its modes."""
    return {"configOptions": config_options(models, session), "modes": mode_state(session.mode or "code")}


def plan(record: PlanRecord) -> SessionUpdatePlan:
    """A session's stored plan as ACP's plan update (what session/load shows after the history)."""
    return plan_update([PlanEntry(e.content, e.status) for e in record.entries])


def available_command(command: Command) -> dict[str, Any]:
    """A folder's custom slash command as an entry of `available_commands_update` (with its
    argument hint)."""
    entry: dict[str, Any] = {"name": command.name, "description": command.description}
    if command.argument_hint:
        entry["input"] = {"hint": command.argument_hint}
    return entry
