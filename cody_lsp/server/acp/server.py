"""The ACP face: `cody-lsp acp`, the Agent Client Protocol v1 on stdio, over the same run core.

`ROUTES` maps each ACP method to its handler. A request's params are checked against the
pinned schema (validate.py: -32602 naming the field) and its effect is taken in the order the
requests were read (core/order.py); what is then waited for (a prompt's turn) happens outside
that order, so a `session/cancel` behind a `session/prompt` finds the turn. acp.md says what
each message does in the core's terms. The bytes and the JSON-RPC envelope are the shared
endpoint's (cody_lsp/jsonrpc/, with ACP's framing and dialect: connection.py); the lifecycle (store, signals, closing) the `Application`'s; the run core
reaches the client through `AcpClient` (client_port.py).

Errors: an unknown method is -32601; bad params -32602 naming the field; an unknown or deleted
`sessionId` -32002 (the spec's resource-not-found); a model that is not configured -32000
(auth required, saying how); a provider failure answers the prompt with -32603 whose message
says what to fix (the turn is recorded as in the LSP face). The end of the input ends the
agent: every run is cancelled and committed, exit code 0.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...config import ServerConfig
from ...jsonrpc.codec import WireLimits
from ...protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from ...protocol.wire import (
    CancelParams,
    CommandCall,
    CreateSessionParams,
    DeleteSessionParams,
    InvalidParams,
    PermissionParams,
    RunParams,
)
from ..app import Application, warm_model_client
from ..core.api import Later, RequestError, RequestOrder, SessionBusy, StoreUnavailable, Ticket, UnknownSession, in_turn
from ..store.errors import StoreError
from ..store.records import SessionRecord
from ..streams import ClientWriter, open_stdin, open_stdout
from . import initialize, projection
from .client_port import AcpClient
from .connection import AUTH_REQUIRED, RESOURCE_NOT_FOUND, RpcError, Then, connect
from .messages import AGENT_REQUESTS, CLIENT_RESPONSES
from .models import ModelChoices
from .modes import checked_mode, mode_update
from .prompt import prompt_input, stop_reason
from .v2 import lenient, negotiated
from .validate import Invalid, check

if TYPE_CHECKING:
    from ...jsonrpc.endpoint import Endpoint
    from ..core.api import RunManager
    from .messages import ToolCallContent

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0
LIST_PAGE = 50
COMMANDS = [
    {"name": "compact", "description": "Summarize the conversation so far, to free the model's context"},
    {"name": "go", "description": "Carry out the plan: switch the session to code mode and run it"},
]


Route = Callable[["AcpAgent", dict[str, Any]], Awaitable[Any]]


class AcpAgent:
    def __init__(self, config: ServerConfig, limits: WireLimits | None = None):
        self.config = config
        self.limits = limits or WireLimits()
        self.client = AcpClient(self)
        self.app = Application(config, self.client)
        self.requests = RequestOrder()
        self.conn: Endpoint | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.models = ModelChoices(config, self.app.models)
        self.initialized = False
        self.version = 1  # the ACP version `initialize` negotiated (v2.py: 2 for a client asking 2 or more)

    # ---------------------------------------------------------------- the connection's handler

    def request(self, method: str, params: Any) -> Awaitable[Any]:
        routes = ROUTES
        if self.version == 2:
            from .v2_routes import ROUTES as routes
        route = routes.get(method)
        if route is None:
            known = ", ".join(sorted(routes))
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}; this agent serves {known}")
        ticket = self.requests.ticket()  # before any await: the order the request was read in
        return self._handle(method, route, ticket, params)

    def notification(self, method: str, params: Any) -> None:
        if method != "session/cancel":
            log.info("ignored the notification %s", method)
            return
        ticket = self.requests.ticket()
        asyncio.ensure_future(self._cancel(ticket, params))

    async def _handle(self, method: str, route: Route, ticket: Ticket, raw: Any) -> Any:
        try:
            try:
                version = self.version
                if method == "initialize":  # checked as the version it asks for
                    version = negotiated(raw.get("protocolVersion") if isinstance(raw, dict) else None)
                    raw = lenient(raw) if version == 2 else raw
                params = check(requests_of(version)[method], {} if raw is None else raw, version=version)
                if not self.initialized and method != "initialize":
                    raise RpcError(INVALID_REQUEST, f"{method} before initialize: call initialize first")
            except BaseException:
                ticket.release()
                raise
            # Cancelled ($/cancel_request) before its effect was taken: it is taken anyway, in
            # its turn, then undone where it can be (core/order.py).
            return await in_turn(ticket, lambda: route(self, params))
        except Invalid as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        except InvalidParams as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        except UnknownSession as exc:
            raise RpcError(RESOURCE_NOT_FOUND, exc.message) from None
        except SessionBusy as exc:
            raise RpcError(INVALID_REQUEST, exc.message) from None
        except StoreUnavailable as exc:
            raise RpcError(INTERNAL_ERROR, exc.message) from None
        except RequestError as exc:
            raise RpcError(INTERNAL_ERROR, exc.message) from None
        except StoreError as exc:  # the database refused, saying why (a full disk, a read past its deadline)
            raise RpcError(INTERNAL_ERROR, exc.message) from None

    async def _cancel(self, ticket: Ticket, raw: Any) -> None:
        try:
            params = check(
                "CancelSessionNotification" if self.version == 2 else "CancelNotification", raw, version=self.version
            )
        except Invalid as exc:
            ticket.release()
            log.warning("session/cancel ignored: %s", exc)
            return
        async with ticket:
            manager = self.app.running
            if manager is not None:
                manager.cancel(CancelParams(session_id=params["sessionId"]))

    # ---------------------------------------------------------------- talking to the client

    def notify(self, method: str, params: Any) -> None:
        if self.conn is not None:
            self.conn.notify(method, params)

    async def ask(self, method: str, params: Any, result: str | None = None) -> Any:
        """A request to the client; its result checked against the schema (`result`: the
        definition's name, else the method's). Cancel-safe: the request is withdrawn."""
        if self.conn is None:
            raise RpcError(INTERNAL_ERROR, "no client")
        answer = await self.conn.ask(method, params)
        try:
            definition = result or responses_of(self.version)[method]
            return check(definition, {} if answer is None else answer, "result", version=self.version)
        except Invalid as exc:
            raise RpcError(INVALID_PARAMS, f"the client's answer to {method} does not fit: {exc}") from None

    def can(self, *path: str) -> bool:
        """Whether the client advertised a capability (e.g. can("fs", "readTextFile"))."""
        node: Any = self.client_capabilities
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node is True

    def editor_for(self, session_id: str) -> Any:
        """The session's editor for the file tools: fs/* through the client, when it offers them."""
        reads, writes = self.can("fs", "readTextFile"), self.can("fs", "writeTextFile")
        folder = self.client.folder_of(session_id)
        if not (reads or writes) or folder is None:
            return None
        from .editor import AcpEditor

        async def ask(method: str, params: dict[str, Any]) -> Any:
            return await self.ask(method, params)

        limit = self.config.tool_limits.max_file_bytes
        return AcpEditor(session_id, folder, ask, reads=reads, writes=writes, max_bytes=limit)

    def terminal_for(self, session_id: str) -> Any:
        """The session's run_command outside the sandbox, through the client's terminal when it
        offers `terminal` (terminals.py); else None (the agent runs every command)."""
        if not self.can("terminal"):
            return None
        from ..tools.shell import run_command
        from .terminals import ClientTerminal

        async def ask(method: str, params: dict[str, Any]) -> Any:
            return await self.ask(method, params)

        return ClientTerminal(session_id, ask, lambda tid: self.client.embed_terminal(session_id, tid), run_command)

    async def preview(self, request: PermissionParams) -> list[ToolCallContent]:
        """The diff a permission request shows (editor.py)."""
        from .editor import preview

        return await preview(request, self.client.tools(request.session_id))

    # ---------------------------------------------------------------- serving

    def serve(self, early: initialize.EarlyStart | None = None) -> int:
        """Serve on stdin/stdout until the input ends or a signal; the exit code."""
        if early is not None and early.answered:
            self.negotiate(initialize.params(early))
            self.initialized = True

        async def main() -> None:
            writer = await open_stdout(sys.stdout.buffer, self.limits.max_unread_bytes, self._client_stuck)
            self.conn = connect(writer, self, self.limits)
            source = await open_stdin(sys.stdin.buffer, early.consumed if early is not None else b"")
            await self.conn.serve(source)
            if self.conn.hung_up is not None:
                self.app.exit_code = 1
            else:
                log.info("the input ended; cancelling the runs and shutting down")

        self.app.serve(main, close=self.close)
        return self.app.exit_code

    def v1_route(self, method: str) -> Route:
        """The v1 route of a method (the v2 face's routes adapt them: v2_routes.py)."""
        return ROUTES[method]

    def negotiate(self, params: dict[str, Any]) -> None:
        """The version and the client's capabilities, from its `initialize` params (v2.py)."""
        self.version = negotiated(params.get("protocolVersion"))
        if self.version == 2:
            from .v2_routes import V2Face

            self.client_capabilities = dict(params.get("capabilities") or {})  # no fs, no terminal in v2
            self.client.v2 = V2Face(self)
        else:
            self.client_capabilities = dict(params.get("clientCapabilities") or {})
            self.client.v2 = None

    def _client_stuck(self, reason: str) -> None:
        if self.conn is not None:
            self.conn.closed = True
        if not self.app.closing:
            log.error("%s: it is treated as gone; cancelling the runs and shutting down", reason)
        self.app.stop("a stuck client", exit_code=1)

    async def close(self) -> None:
        """Every run cancelled and committed (each answers its prompt `cancelled`), the requests
        still open answered, the store closed; bounded in time."""
        await self.models.close()
        await self.app.stop_runs()
        if self.conn is not None:
            self.conn.fail_waiting("the agent is shutting down")
            await self.conn.finish(CLOSE_TIMEOUT)
        await self.app.close_store()
        writer = self.conn.writer if self.conn is not None else None
        if isinstance(writer, ClientWriter):
            await writer.drain(timeout=CLOSE_TIMEOUT)

    # ---------------------------------------------------------------- sessions

    async def manager(self) -> RunManager:
        return await self.app.manager()

    def mode_told(self, session_id: str, mode: str) -> Callable[[], None]:
        return lambda: self.client.update(session_id, mode_update(mode))

    def commands_after(self, session_id: str, custom: list[dict[str, Any]] | None = None) -> Callable[[], None]:
        """What follows the answer of session/new, load and resume: the commands (the built-in
        ones, then the folder's `custom` ones), and (once per process) the endpoint's models asked for."""
        from . import checkpoints

        manager = self.app.running
        commands = COMMANDS + (checkpoints.COMMANDS if manager and checkpoints.available(manager) else [])
        commands = commands + (custom or [])

        def send() -> None:
            warm_model_client()  # a prompt is coming: the model client loads in the background
            self.client.update(
                session_id, {"sessionUpdate": "available_commands_update", "availableCommands": commands}
            )
            self.models.list_once(self._models_listed)

        return send

    async def _models_listed(self) -> None:
        """The endpoint listed more models: each session this client opened is told its options.
        In the requests' order (a place taken now): a set_mode or set_config_option read before
        has taken effect, so the mode told with the models is never an older one."""
        manager = self.app.running
        if manager is None:
            return
        async with self.requests.ticket():
            for session_id in self.client.opened():
                try:
                    session = await manager.session(session_id)
                except RequestError:
                    continue  # deleted meanwhile
                self.client.options_told(session)


def requests_of(version: int) -> dict[str, str]:
    """Method → the definition of its params, in ACP `version`."""
    if version == 2:
        from .messages_v2 import AGENT_REQUESTS as V2_REQUESTS

        return V2_REQUESTS
    return AGENT_REQUESTS


def responses_of(version: int) -> dict[str, str]:
    """Client method → the definition of its result, in ACP `version`."""
    if version == 2:
        from .messages_v2 import CLIENT_RESPONSES as V2_RESPONSES

        return V2_RESPONSES
    return CLIENT_RESPONSES


def _normalize(raw: str) -> str:
    from ..core.api import normalize_folder

    return normalize_folder(raw, field="cwd")


def _mcp_servers(manager: RunManager, session: Any, params: dict[str, Any]) -> None:
    """The session's MCP servers (`mcpServers` of session/new, load or resume): its runs' tools
    include theirs (server/mcp/hub.py, source "acp")."""
    servers = params.get("mcpServers") or []
    manager.set_session_mcp_servers(session.id, servers if isinstance(servers, list) else [], session.workspace_folder)


# ------------------------------------------------------------------------ the routes


async def _initialize(agent: AcpAgent, params: dict[str, Any]) -> Any:
    agent.negotiate(params)
    agent.initialized = True
    return initialize.answer(agent.config, params)


async def _authenticate(agent: AcpAgent, params: dict[str, Any]) -> Any:
    problem = agent.config.problem()
    if problem is None:
        return {}
    raise RpcError(AUTH_REQUIRED, f"the model is not configured: {problem}")


def _configured(agent: AcpAgent) -> None:
    problem = agent.config.problem()
    if problem is not None:
        raise RpcError(AUTH_REQUIRED, f"the model is not configured: {problem}")


async def opened(agent: AcpAgent, session: SessionRecord, **answer: Any) -> Then:
    """The answer of session/new, load or resume: the session's configuration options and modes,
    then its commands (the folder's custom slash commands among them: core/workflow.py)."""
    agent.client.title_seen(session)
    manager = await agent.manager()
    custom = [projection.available_command(c) for c in await manager.custom_commands(session.workspace_folder)]
    return Then({**answer, **projection.session_state(agent.models, session)}, agent.commands_after(session.id, custom))


async def _new_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    _configured(agent)
    folder = _normalize(params["cwd"])
    manager = await agent.manager()
    session = await manager.create_session(CreateSessionParams(workspace_folder=folder))
    _mcp_servers(manager, session, params)
    agent.client.stream(session.id, session.workspace_folder)
    return await opened(agent, session, sessionId=session.id)


async def _set_config_option(agent: AcpAgent, params: dict[str, Any]) -> Any:
    from ...protocol.wire import UpdateSessionParams

    manager = await agent.manager()
    session = await manager.session(params["sessionId"])
    value = params.get("value")
    if params["configId"] == "mode":
        mode = checked_mode(value, "value")
        updated = await manager.update_session(UpdateSessionParams(session.id, mode=mode))
        told = agent.mode_told(session.id, mode)  # a client that follows session modes hears it too
        return Then({"configOptions": projection.config_options(agent.models, updated)}, told)
    if params["configId"] != "model":
        raise InvalidParams(
            f"'configId' {params['configId']!r} is not an option of this agent; it has 'model' and 'mode'"
        )
    allowed = agent.models.of(session.model)
    if value not in allowed:
        raise InvalidParams(f"'value' must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    updated = await manager.update_session(UpdateSessionParams(session.id, model=value))
    return {"configOptions": projection.config_options(agent.models, updated)}


async def _set_mode(agent: AcpAgent, params: dict[str, Any]) -> Any:
    """`session/set_mode`: the session's mode for its next turns (cody/updateSession {mode}); a
    turn already running keeps the mode it started in."""
    from ...protocol.wire import UpdateSessionParams

    manager = await agent.manager()
    session = await manager.session(params["sessionId"])
    mode = checked_mode(params["modeId"], "modeId")
    updated = await manager.update_session(UpdateSessionParams(session.id, mode=mode))

    return Then({}, lambda: agent.client.options_told(updated))  # for a client that follows the options


async def _open(agent: AcpAgent, params: dict[str, Any]) -> tuple[RunManager, Any]:
    manager = await agent.manager()
    session = await manager.session(params["sessionId"])
    folder = _normalize(params["cwd"]) if params.get("cwd") else session.workspace_folder
    if folder != session.workspace_folder:
        raise InvalidParams(
            f"'cwd' {folder} is not the folder of session '{session.id}' ({session.workspace_folder}); "
            "a session stays in the folder it was made in"
        )
    _mcp_servers(manager, session, params)
    return manager, session


async def _load_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    manager, _session = await _open(agent, params)
    session, payloads = await manager.history(params["sessionId"])
    stream = agent.client.stream(session.id, session.workspace_folder)
    for payload in payloads:
        for update in stream.updates(payload, replay=True):
            agent.client.update(session.id, update)
    plan = await manager.session_plan(session.id)
    if plan is not None:  # the session's plan as its last update left it
        agent.client.update(session.id, projection.plan(plan))
    return await opened(agent, session)


async def _resume_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    _manager, session = await _open(agent, params)
    agent.client.stream(session.id, session.workspace_folder)
    return await opened(agent, session)


async def _list_sessions(agent: AcpAgent, params: dict[str, Any]) -> Any:
    from ...protocol.wire import ListSessionsParams

    manager = await agent.manager()
    cwd = params.get("cwd")
    listed = await manager.list_sessions(
        ListSessionsParams(workspace_folder=cwd, limit=LIST_PAGE, cursor=params.get("cursor"))
    )
    return projection.session_list(listed)


async def _close_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    manager = await agent.manager()
    await manager.session(params["sessionId"])
    manager.cancel(CancelParams(session_id=params["sessionId"]))
    agent.client.forget(params["sessionId"])
    return {}


async def _delete_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    manager = await agent.manager()
    if not await manager.delete_session(DeleteSessionParams(params["sessionId"])):
        raise UnknownSession(f"unknown session '{params['sessionId']}': it does not exist or was deleted")
    agent.client.forget(params["sessionId"])
    return {}


async def _prompt(agent: AcpAgent, params: dict[str, Any]) -> Any:
    _configured(agent)
    given = prompt_input(params["prompt"], images=initialize.prompt_images(agent.config))
    text = given.text
    manager = await agent.manager()
    session_id = params["sessionId"]
    if text.strip() == "/compact":
        return await _compact(agent, manager, session_id)
    from . import checkpoints

    wanted = checkpoints.command(text)
    if wanted is not None:  # /rewind, /fork (acp/checkpoints.py)
        return Later(*await checkpoints.run_command(agent.client, manager, session_id, *wanted))
    if text.strip() == "/go":
        text = await _carry_out(agent, manager, session_id)
    run = RunParams(prompt=text, session_id=session_id, attachments=given.attachments or None)
    custom = await _custom_call(manager, session_id, text)
    if custom is not None:  # `/name ARGS` of a custom command: the server expands it (core/workflow.py)
        run = RunParams(session_id=session_id, attachments=given.attachments or None, command=custom)
    busy = bool(manager.runs_of(session_id))
    warm_model_client()  # its load overlaps what the turn does before its first model request
    try:
        live = await manager.admit(run)
    except InvalidParams as error:
        raise given.named(error) from None
    agent.client.admitted(session_id, live, busy)
    if busy:
        agent.client.stream(session_id, live.folder).queued.add(live.message_id)

    async def wait() -> Any:
        result = await manager.outcome(live)
        await _title_after(agent, manager, session_id)
        return {"stopReason": stop_reason(result, live)}

    async def cancelled() -> None:
        manager.cancel(CancelParams(run_id=live.run_id))
        await manager.outcome(live)

    return Later(wait, cancelled)


async def _title_after(agent: AcpAgent, manager: RunManager, session_id: str) -> None:
    """After a turn: `session_info_update` when its commit gave the session its title (the first
    turn names it after its prompt), before the prompt's answer."""
    try:
        session = await manager.session(session_id)
    except (RequestError, StoreError):
        return  # deleted meanwhile, or the database refused: the title is told another time
    agent.client.title_told(session)


async def _custom_call(manager: RunManager, session_id: str, text: str) -> CommandCall | None:
    """The custom command a prompt starting with `/name` runs, or None (then it is sent as it is)."""
    from ..agent.commands import parse_line

    parsed = parse_line(text)
    if parsed is None:
        return None
    session = await manager.session(session_id)
    if await manager.custom_command(session.workspace_folder, parsed[0]) is None:
        return None
    return CommandCall(parsed[0], parsed[1] or None)


async def _carry_out(agent: AcpAgent, manager: RunManager, session_id: str) -> str:
    """`/go`: the plan carried out — the session switched to code mode (told to the client as
    `current_mode_update` and `config_option_update`), and the turn's prompt is `Carry out the plan.`"""
    from ...protocol.wire import CARRY_OUT_PROMPT, UpdateSessionParams

    session = await manager.session(session_id)
    if session.mode != "code":
        updated = await manager.update_session(UpdateSessionParams(session_id, mode="code"))
        agent.mode_told(session_id, "code")()
        agent.client.options_told(updated)
    return CARRY_OUT_PROMPT


async def _compact(agent: AcpAgent, manager: RunManager, session_id: str) -> Later:
    """`/compact`: the session's history summarized now (cody/compact), told as the answer."""
    from ...protocol.wire import CompactParams
    from .updates import text_update

    work = await manager.begin_compact(CompactParams(session_id))

    async def wait() -> Any:
        done = await work.run()
        if done.compacted:
            told = (
                f"Compacted the conversation: {done.messages_before} messages became {done.messages_after} "
                f"({done.tokens_before:,} tokens → {done.tokens_after:,})."
            )
        elif done.error is not None:
            told = f"Could not compact: {done.error.message}"
        else:
            told = "Nothing to compact yet."
        agent.client.update(session_id, text_update("agent_message_chunk", told))
        return {"stopReason": "end_turn"}

    async def cancelled() -> None:
        work.abort()

    return Later(wait, cancelled)


ROUTES: dict[str, Route] = {
    "initialize": _initialize,
    "authenticate": _authenticate,
    "session/new": _new_session,
    "session/load": _load_session,
    "session/resume": _resume_session,
    "session/list": _list_sessions,
    "session/close": _close_session,
    "session/delete": _delete_session,
    "session/prompt": _prompt,
    "session/set_config_option": _set_config_option,
    "session/set_mode": _set_mode,
}
