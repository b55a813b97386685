"""The ACP v2 face: v1's routes (server.py) adapted to the v2 draft's shapes and prompt lifecycle.

A v2 client gets the same core as a v1 client, through the same routes; `V2Face` changes what
differs (v2.py says how each message's shape changes):

- `session/prompt` is answered `{messageId}` once its message is in the conversation — at once,
  or, for a prompt sent while a turn runs, when its own turn takes it in (a held prompt that is
  cancelled first, by `session/cancel` or `session/close`, is answered -32800). The turn is told
  with `session/update`s: `user_message` (the prompt, with that `messageId`), `state_update`
  `running`, the turn's updates, `requires_action` while a permission is asked (then `running`
  again), and `state_update` `idle` with the `stopReason` after the turn's last update — `error`
  with the error for a turn that failed (v1 answers those with a JSON-RPC error). `/compact`,
  `/rewind`, `/fork` and `/go` are turns the same way.
- `session/resume` with `replayFrom: {type: "start"}` is v1's `session/load` (the conversation
  replayed first), without it v1's `session/resume`; either sends the session's state
  (`state_update`: `running` while a turn of it runs, else `idle`) before its answer. The answers of
  `session/new` and `session/resume` carry no `modes` (the `mode` config option is there).
- `session/set_config_option` takes `{configId, type: "id", value}`; `auth/login` and `auth/logout`
  are v1's `authenticate` and `{}`. `session/list`, `session/close`, `session/delete` and
  `session/cancel` are v1's.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ...protocol.errors import INTERNAL_ERROR, REQUEST_CANCELLED
from ...protocol.wire import Cancelled as CancelledPayload
from ...protocol.wire import CancelParams, CircuitBreaker, Done, Error, InvalidParams, UserMessage
from ..core.api import Later
from . import v2
from .connection import AUTH_REQUIRED, RpcError, Then

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..core.api import LiveRun, RunEvent

# The agent (server.py's AcpAgent, which imports this module): its v1 routes by method
# (`agent.v1_route`), its client port, its application, `notify`.
AcpAgent = Any

log = logging.getLogger(__name__)

TERMINAL = (Done, CancelledPayload, CircuitBreaker, Error)
BLOCKS = ("text", "image", "audio", "resource_link", "resource")


class V2Face:
    """The v2 client's sessions: their message ids, their foreground turns, the prompts held."""

    def __init__(self, agent: AcpAgent):
        self._agent = agent
        self._streams: dict[str, v2.V2Stream] = {}
        self._foreground: dict[str, str] = {}  # session → the turn told `running` (a run id, or a command's)
        self._held: dict[str, tuple[str, list[dict[str, Any]], asyncio.Future[str]]] = {}  # message id → …
        self._admitted: dict[str, tuple[LiveRun, bool]] = {}  # session → the run its prompt just admitted
        self._tasks: set[asyncio.Task[Any]] = set()

    def stream(self, session_id: str) -> v2.V2Stream:
        return self._streams.setdefault(session_id, v2.V2Stream())

    def translate(self, session_id: str, update: dict[str, Any]) -> list[dict[str, Any]]:
        return self.stream(session_id).translate(update)

    def _send(self, session_id: str, update: dict[str, Any]) -> None:
        self._agent.notify("session/update", {"sessionId": session_id, "update": update})

    # ------------------------------------------------------------------ the turn's lifecycle

    def admitted(self, session_id: str, live: LiveRun, busy: bool) -> None:
        """server.py's prompt admitted a run (`busy`: it waits behind another turn of the session)."""
        self._admitted[session_id] = (live, busy)

    def take_admitted(self, session_id: str) -> tuple[LiveRun, bool] | None:
        """The run the session's prompt just admitted (and whether it waits), taken: None if none."""
        return self._admitted.pop(session_id, None)

    def announce(self, session_id: str, blocks: list[dict[str, Any]], message_id: str, turn: str) -> None:
        """The prompt is in the conversation: `user_message`, then `running`."""
        self._send(session_id, self.stream(session_id).user_message(blocks, message_id))
        self._foreground[session_id] = turn
        self._send(session_id, v2.state("running"))

    def idle(self, session_id: str, turn: str, ending: dict[str, Any]) -> None:
        """The turn `turn` ended: `idle` with its stop reason (once)."""
        if self._foreground.get(session_id) != turn:
            return
        del self._foreground[session_id]
        self._send(session_id, v2.state("idle", **ending))

    def before(self, event: RunEvent) -> bool:
        """A run's event, before v1 turns it into updates; True when it is told here instead."""
        payload = event.payload
        if isinstance(payload, UserMessage) and payload.message_id in self._held:
            session_id, blocks, future = self._held.pop(payload.message_id)
            self.announce(session_id, blocks, payload.message_id, event.run_id)
            if not future.done():
                future.set_result(payload.message_id)
            return True
        return False

    def after(self, event: RunEvent) -> None:
        """A run's event, after v1's updates of it: its end is the foreground's `idle`."""
        if isinstance(event.payload, TERMINAL):
            self.idle(event.session_id, event.run_id, self._ending(event))

    def _ending(self, event: RunEvent) -> dict[str, Any]:
        payload = event.payload
        if isinstance(payload, Done):
            manager = self._agent.app.running
            live = manager.live_run(event.run_id) if manager is not None else None
            finish = live.finish_reason if live is not None else None
            return {"stopReason": {"length": "max_tokens", "content_filter": "refusal"}.get(finish or "", "end_turn")}
        if isinstance(payload, CancelledPayload):
            return {"stopReason": "cancelled"}
        if isinstance(payload, CircuitBreaker):
            return {"stopReason": "max_turn_requests"}
        assert isinstance(payload, Error)
        if payload.code == "content_filter":
            return {"stopReason": "refusal"}
        code = AUTH_REQUIRED if payload.code == "config" else INTERNAL_ERROR
        error = {"code": code, "message": f"{payload.message} ({payload.code})", "data": {"code": payload.code}}
        return {"stopReason": "error", "error": error}

    def hold(self, session_id: str, message_id: str, blocks: list[dict[str, Any]]) -> asyncio.Future[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._held[message_id] = (session_id, blocks, future)
        return future

    def follow(self, session_id: str, turn: str, later: Later, held: str | None) -> None:
        """Wait for v1's end of the turn (its answer, its title) in the background; a turn that
        ended without telling its end is told `idle` then; a prompt still held is answered -32800."""

        async def finish() -> None:
            try:
                answer = await later.wait()
                ending = {"stopReason": answer["stopReason"]}
            except RpcError as exc:
                ending = {"stopReason": "error", "error": exc.to_wire()}
            except Exception as exc:
                log.exception("a v2 turn failed")
                ending = {"stopReason": "error", "error": {"code": INTERNAL_ERROR, "message": str(exc)}}
            if held is not None and held in self._held:
                _session, _blocks, future = self._held.pop(held)
                if not future.done():
                    future.set_exception(RpcError(REQUEST_CANCELLED, "the prompt was cancelled before its turn began"))
                return
            self.idle(session_id, turn, ending)

        task = asyncio.ensure_future(finish())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def snapshot(self, session_id: str) -> None:
        """The session's state now: `running` while a turn of it runs, else `idle`."""
        manager = self._agent.app.running
        runs = manager.runs_of(session_id) if manager is not None else []
        if runs and session_id in self._foreground:
            self._send(session_id, v2.state("running"))
        else:
            self._send(session_id, v2.state("idle"))

    def ask(self, params: dict[str, Any]) -> dict[str, Any]:
        """A permission request in v2's shape; the foreground is `requires_action` meanwhile."""
        self._send(params["sessionId"], v2.state("requires_action"))
        return v2.permission(params)

    def answered(self, session_id: str) -> None:
        if session_id in self._foreground:
            self._send(session_id, v2.state("running"))


# ------------------------------------------------------------------------ the routes


async def _v1(agent: AcpAgent, method: str, params: dict[str, Any]) -> Any:
    """The v1 route of `method` (server.py), with `params` in v1's shape."""
    return await agent.v1_route(method)(agent, params)


def _through(method: str) -> Callable[[AcpAgent, dict[str, Any]], Awaitable[Any]]:
    """A method v2 takes as v1 does."""

    async def route(agent: AcpAgent, params: dict[str, Any]) -> Any:
        return await _v1(agent, method, params)

    return route


def _face(agent: AcpAgent) -> V2Face:
    assert agent.client.v2 is not None
    return agent.client.v2


async def _new_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    given = {"cwd": params["cwd"], "mcpServers": v2.mcp_servers_v1(params.get("mcpServers"))}
    then = await _v1(agent, "session/new", given)
    return Then(_opened(then.result), then.after)


def _opened(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k != "modes"}
    out["configOptions"] = v2.config_options(result["configOptions"])
    return out


async def _resume_session(agent: AcpAgent, params: dict[str, Any]) -> Any:
    replay = params.get("replayFrom")
    if replay is not None and replay.get("type") != "start":
        raise InvalidParams(
            f"'replayFrom.type' {replay.get('type')!r} is not one this agent replays from: give 'start'"
        )
    given = {
        "sessionId": params["sessionId"],
        "cwd": params["cwd"],
        "mcpServers": v2.mcp_servers_v1(params.get("mcpServers")),
    }
    then = await _v1(agent, "session/load" if replay is not None else "session/resume", given)
    _face(agent).snapshot(params["sessionId"])
    return Then(_opened(then.result), then.after)


async def _set_config_option(agent: AcpAgent, params: dict[str, Any]) -> Any:
    if params.get("type") != "id":
        raise InvalidParams(f"'type' must be 'id' (this agent's options are selects), got {params.get('type')!r}")
    given = {"sessionId": params["sessionId"], "configId": params["configId"], "value": params.get("value")}
    answer = await _v1(agent, "session/set_config_option", given)
    if isinstance(answer, Then):
        return Then({"configOptions": v2.config_options(answer.result["configOptions"])}, answer.after)
    return {"configOptions": v2.config_options(answer["configOptions"])}


async def _logout(agent: AcpAgent, params: dict[str, Any]) -> Any:
    return {}  # the settings are the environment's and the configuration file's: nothing to forget


async def _prompt(agent: AcpAgent, params: dict[str, Any]) -> Any:
    blocks = params["prompt"]
    for index, block in enumerate(blocks):
        if block.get("type") not in BLOCKS:
            raise InvalidParams(
                f"'prompt[{index}].type' {block.get('type')!r} is not a content block this agent takes: "
                "text, resource_link, resource and image (where its capabilities say so)"
            )
    face, session_id = _face(agent), params["sessionId"]
    face.take_admitted(session_id)
    later = await _v1(agent, "session/prompt", {"sessionId": session_id, "prompt": blocks})
    admitted = face.take_admitted(session_id)
    if admitted is None:  # /compact, /rewind, /fork: the agent's own turn, no run
        message_id = v2.new_message_id()
        face.announce(session_id, blocks, message_id, message_id)
        face.follow(session_id, message_id, later, None)
        return {"messageId": message_id}
    live, busy = admitted
    if not busy:
        face.announce(session_id, blocks, live.message_id, live.run_id)
        face.follow(session_id, live.run_id, later, None)
        return {"messageId": live.message_id}
    inserted = face.hold(session_id, live.message_id, blocks)
    face.follow(session_id, live.run_id, later, live.message_id)

    async def wait() -> Any:
        return {"messageId": await inserted}

    async def cancelled() -> None:
        manager = agent.app.running
        if manager is not None:
            manager.cancel(CancelParams(run_id=live.run_id))

    return Later(wait, cancelled)


ROUTES: dict[str, Callable[[AcpAgent, dict[str, Any]], Awaitable[Any]]] = {
    "initialize": _through("initialize"),
    "auth/login": _through("authenticate"),
    "auth/logout": _logout,
    "session/new": _new_session,
    "session/resume": _resume_session,
    "session/list": _through("session/list"),
    "session/close": _through("session/close"),
    "session/delete": _through("session/delete"),
    "session/prompt": _prompt,
    "session/set_config_option": _set_config_option,
}
