"""The ACP face's `ClientPort` (core/port.py): the run core's view of an ACP client.

- Events become `session/update` notifications (updates.py), per session.
- A permission question becomes `session/request_permission`, with options mapped onto the
  core's rules (`permission_options`): allow_once = allow; allow_always = a rule of this
  session (and, where the core offers them, of every session of the folder, and for a command
  only those starting with its program and subcommand); reject_once = deny; reject_always =
  deny, and a rule of the session that refuses every later call of that tool without asking
  (`Permissions.refuse`: kept in the database, so it holds after a restart and in the LSP face,
  which lists it with `decision: "deny"` and can revoke it). Where the core offers it
  (`sandboxedRule`: a command, on a machine with the sandbox), allow_always_sandboxed = the
  folder rule that runs commands sandboxed without asking. A command asking to run outside the
  sandbox gets allow_once and reject_once only (its answer is for that call), its reason in the
  tool call's content. A run that is cancelled withdraws its pending
  question (`$/cancel_request`, connection.py) and goes on at once: a late answer changes nothing.
- Settings are the environment's (an ACP client sends none); a session's folder is its `cwd`.
- A run's file tools get the client's editor (fs/read_text_file and fs/write_text_file when the
  client offers them, editor.py) and ask for diffs, which become the tool calls' `diff` content.
- A session's configuration options (projection.py `config_options`: its model and its mode) are in the
  agent's answers (server.py), and told as `config_option_update` when they change by other
  means than set_config_option (`options_told`: set_mode, /go, another server process).

What the port needs of the agent that makes it (server.py's `AcpAgent`) is `Agent`, named here
so that this module, which the agent imports, does not import the agent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...config import ServerConfig
from ...protocol.wire import (
    InvalidParams,
    PermissionParams,
    PermissionResult,
    QueueChanged,
    RuleScope,
    SessionStart,
)
from ..core.api import ClientFeatures, ClientPort, RunEvent, SessionChange
from ..store.records import SessionRecord
from ..tools.editor_view import ReadLogs
from ..tools.workspace import ToolConfig
from .connection import RpcError
from .modes import mode_update
from .projection import config_options
from .updates import UpdateStream, child_call_id, permission_tool_call

if TYPE_CHECKING:
    from ..app import Application
    from .messages import PermissionOption, PermissionOptionKind, ToolCallContent
    from .models import ModelChoices

log = logging.getLogger(__name__)

SESSION_UPDATE = "session/update"
REQUEST_PERMISSION = "session/request_permission"


class Agent(Protocol):
    """What `AcpClient` needs of the agent (server.py's `AcpAgent`): to notify and ask the client,
    the diff a permission request shows, a session's editor for the file tools, the settings,
    the application (its run manager, for a refusal kept as a rule), and the models a session
    may choose from (its configuration options)."""

    config: ServerConfig
    app: Application
    models: ModelChoices

    def notify(self, method: str, params: Any) -> None: ...

    async def ask(self, method: str, params: Any, result: str | None = None) -> Any: ...

    async def preview(self, request: PermissionParams) -> list[ToolCallContent]: ...

    def editor_for(self, session_id: str) -> Any: ...

    def terminal_for(self, session_id: str) -> Any: ...


@dataclass(frozen=True)
class Choice:
    """One option of a permission request, and what choosing it means to the core."""

    option_id: str
    name: str
    kind: PermissionOptionKind
    result: PermissionResult
    refuse_always: bool = False


def permission_options(request: PermissionParams) -> list[Choice]:
    """The options of a session/request_permission, from what the core offers (`options`)."""
    tool = request.tool_name
    offered = request.options
    outcomes = offered.outcomes if offered is not None else ["allow", "deny"]
    scopes: list[RuleScope] = list(offered.scopes) if offered is not None else []
    prefix = offered.command_prefix if offered is not None else None
    choices = []
    if "allow" in outcomes:
        choices.append(Choice("allow_once", "Allow once", "allow_once", PermissionResult("allow")))
    domain = offered.domain if offered is not None else None
    if "allow_always" in outcomes:
        what = f"`{prefix}` commands" if prefix else ("any command" if tool == "run_command" else tool)
        if domain:
            what = f"fetches from {domain}"
        for scope in scopes or ["session"]:
            where = "in this session" if scope == "session" else "in this folder (every session)"
            result = PermissionResult("allow_always", scope, prefix, domain=domain)
            option = "allow_always" if scope == "session" else f"allow_always_{scope}"
            choices.append(Choice(option, f"Always allow {what} {where}", "allow_always", result))
        rule = offered.sandboxed_rule if offered is not None else None
        if rule is not None and rule.outcome == "allow_always":
            sandboxed = PermissionResult("allow_always", rule.scope, sandboxed=rule.sandboxed)
            choices.append(Choice("allow_always_sandboxed", rule.label, "allow_always", sandboxed))
    if "deny" in outcomes:
        choices.append(Choice("reject_once", "Reject", "reject_once", PermissionResult("deny")))
    if "deny" in outcomes and request.unsandboxed is None:  # leaving the sandbox: this call only
        choices.append(
            Choice(
                "reject_always",
                f"Always reject {tool} in this session",
                "reject_always",
                PermissionResult("deny"),
                refuse_always=True,
            )
        )
    return choices


class AcpClient(ClientPort):
    def __init__(self, agent: Agent):
        self._agent = agent
        # Approvals: the client answers session/request_permission. Steering: user_message
        # events (a prompt taken in from the queue). Usage: usage_update.
        # Session changes: a mode, model or title set by another server process (core/session_watch.py).
        # Plans: ACP's plan update; tool output: a running command's output as its tool call's content.
        # Subagents: a `task` call's content shows its child's steps (updates.py). Hooks: what a hook
        # did (blocked, added context, failed) as a line of the agent's thoughts.
        self.features = ClientFeatures(
            approvals=True,
            steering=True,
            usage=True,
            compaction=False,
            session_changes=True,
            subagents=True,
            plans=True,
            tool_output=True,
            hooks=True,
        )
        self._streams: dict[str, UpdateStream] = {}
        self._titles: dict[str, str] = {}  # the title each opened session's client was told (or saw)
        self._reads = ReadLogs()
        self.v2: Any = None  # a v2 client's face (v2_routes.V2Face): updates translated, its turns' states told

    # ------------------------------------------------------------------ events

    def stream(self, session_id: str, folder: str) -> UpdateStream:
        stream = self._streams.get(session_id)
        if stream is None or stream.folder != folder:
            stream = self._streams[session_id] = UpdateStream(folder)
        return stream

    def folder_of(self, session_id: str) -> str | None:
        stream = self._streams.get(session_id)
        return stream.folder if stream is not None else None

    def opened(self) -> list[str]:
        """The sessions this client opened (new, load, resume) and has not closed."""
        return list(self._streams)

    def forget(self, session_id: str) -> None:
        self._streams.pop(session_id, None)
        self._titles.pop(session_id, None)

    def title_seen(self, session: SessionRecord) -> None:
        """The client has the session's title as it is now (it opened the session or was told)."""
        self._titles[session.id] = session.title

    def title_told(self, session: SessionRecord) -> None:
        """`session_info_update` when the session's title is not the one the client has: after the
        turn that named a new session (its first prompt's first line), or a rename elsewhere."""
        if session.id in self._streams and self._titles.get(session.id) != session.title:
            self._titles[session.id] = session.title
            self.update(session.id, {"sessionUpdate": "session_info_update", "title": session.title})

    def send(self, event: RunEvent) -> None:
        payload = event.payload
        if isinstance(payload, SessionStart):
            self.stream(event.session_id, payload.workspace_folder)
            return
        stream = self._streams.get(event.session_id)
        if stream is None:  # a run of a session this client never opened: its folder is the run's
            return
        parent = event.parent_tool_call_id
        if self.v2 is not None and self.v2.before(event):
            return
        for update in stream.updates(payload) if parent is None else stream.child_updates(parent, payload):
            self.update(event.session_id, update)
        if self.v2 is not None:
            self.v2.after(event)

    def update(self, session_id: str, update: Any) -> None:
        if self.v2 is not None:  # v2's shapes (v2.py)
            for translated in self.v2.translate(session_id, update):
                self._agent.notify(SESSION_UPDATE, {"sessionId": session_id, "update": translated})
            return
        self._agent.notify(SESSION_UPDATE, {"sessionId": session_id, "update": update})

    def admitted(self, session_id: str, live: Any, busy: bool) -> None:
        """A prompt's run was admitted (`busy`: behind another turn of the session): a v2 client's
        prompt is answered when its message is in the conversation (v2_routes.py)."""
        if self.v2 is not None:
            self.v2.admitted(session_id, live, busy)

    def options_told(self, session: SessionRecord) -> None:
        """`config_option_update`: the session's options changed by other means than set_config_option."""
        options = config_options(self._agent.models, session)
        self.update(session.id, {"sessionUpdate": "config_option_update", "configOptions": options})

    def queue_changed(self, change: QueueChanged) -> None:
        pass  # ACP has no queue to show: a queued prompt's request is simply answered later

    def session_changed(self, change: SessionChange) -> None:
        """A session this client opened, changed by another server process (the editor's panel,
        the terminal chat): its mode as `current_mode_update`, its options (model and mode) as
        `config_option_update`, its title as `session_info_update`."""
        session = change.session
        if session.id not in self._streams:
            return  # a session this client does not have open
        if "mode" in change.changed:
            self.update(session.id, mode_update(session.mode or "code"))
        if "mode" in change.changed or "model" in change.changed:
            self.options_told(session)
        if "title" in change.changed:
            self.title_told(session)

    # ------------------------------------------------------------------ permissions

    async def ask_permission(self, request: PermissionParams) -> PermissionResult:
        choices = permission_options(request)
        options: list[PermissionOption] = [{"optionId": c.option_id, "name": c.name, "kind": c.kind} for c in choices]
        diffs: list[ToolCallContent] = await self._agent.preview(request)
        tool_call = permission_tool_call(request, diffs)
        parent = request.parent_tool_call_id
        stream = self._streams.get(request.session_id)
        if parent is not None:  # a subagent's call: its id in the session, and whose it is
            tool_call["toolCallId"] = child_call_id(parent, request.tool_call_id)
            tool_call["title"] = f"{tool_call.get('title', request.tool_name)} (subagent)"
            if stream is not None:
                stream.asked(parent, request.tool_call_id)
        params = {"sessionId": request.session_id, "toolCall": tool_call, "options": options}
        if self.v2 is not None:
            params = self.v2.ask(params)  # v2's shape; the turn `requires_action` meanwhile
        try:
            answer = await self._agent.ask(REQUEST_PERMISSION, params, "RequestPermissionResponse")
        except RpcError as exc:
            log.warning("session/request_permission failed (%s); denying", exc.message)
            answer = {"outcome": {"outcome": "failed"}}
        if self.v2 is not None:
            self.v2.answered(request.session_id)  # the turn goes on: `running` again
        outcome = answer.get("outcome", {})
        if outcome.get("outcome") == "cancelled":
            # The spec: the client answers `cancelled` because the prompt turn is being cancelled
            # (agent-shell's Reject does so, then sends session/cancel): the turn ends `cancelled`
            # now, and the model is not asked again.
            self._cancel_run(request)
            return PermissionResult("deny")
        if outcome.get("outcome") != "selected":
            return PermissionResult("deny")
        chosen = next((c for c in choices if c.option_id == outcome.get("optionId")), None)
        if chosen is None:
            log.warning("an answer names an option that was not offered (%r); denying", outcome.get("optionId"))
            return PermissionResult("deny")
        manager = self._agent.app.running
        if chosen.refuse_always and manager is not None:
            await manager.refuse_always(request)
        return chosen.result

    def _cancel_run(self, request: PermissionParams) -> None:
        from ...protocol.wire import CancelParams

        manager = self._agent.app.running
        if manager is not None:
            manager.cancel(CancelParams(run_id=request.run_id, session_id=request.session_id))

    # ------------------------------------------------------------------ settings and tools

    async def settings(self, folder: str) -> ServerConfig:
        return self._agent.config

    def tools(self, session_id: str) -> ToolConfig:
        return ToolConfig(
            editor=self._agent.editor_for(session_id),
            reads=self._reads.of(session_id),
            diffs=True,
            announce_starts=True,
            terminal=self._agent.terminal_for(session_id),
        )

    def embed_terminal(self, session_id: str, terminal_id: str) -> None:
        """The session's running tool call shows the client's terminal its command runs in."""
        stream = self._streams.get(session_id)
        if stream is None or stream.running is None:
            return
        content = [{"type": "terminal", "terminalId": terminal_id}]
        self.update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": stream.running, "content": content})

    def default_folder(self, document: str | None) -> str:
        raise InvalidParams("give 'cwd': the absolute path of the session's folder")
