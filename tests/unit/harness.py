"""The run manager in-process: a real store, a scripted model step and tool runner.

Every chunk, commit and result lands in one `events` list, so a test can check the
order a client would see — commit, then the terminal chunk, then the response —
without a server process or an HTTP provider.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cody_lsp.config import ContextSettings, Limits, ModelConfig, ServerConfig
from cody_lsp.protocol.wire import TERMINAL_TYPES, PermissionParams, RunParams, RunResult, Usage
from cody_lsp.server.agent.assembly import AssembledCall, StepResult
from cody_lsp.server.agent.model import ModelError
from cody_lsp.server.core.live import LiveRun
from cody_lsp.server.core.port import ClientFeatures, ClientPort
from cody_lsp.server.core.runs import RunManager
from cody_lsp.server.lsp.notifications import QUEUE_CHANGED, chunk_params, queue_changed_params
from cody_lsp.server.store.database import Store
from cody_lsp.server.tools import ToolConfig, ToolResult

OPEN_STORES: list[Store] = []

MODEL = ModelConfig("test-model", "http://127.0.0.1:9/v1", "sk-test-7Rq2Xv9LmK4pW8zN3bT6")


def answer(text: str, usage: Usage | None = None) -> StepResult:
    return StepResult(text, [], "stop", usage or Usage(10, 5, 15))


def calls(*calls: tuple[str, str], text: str = "") -> StepResult:
    """A step that calls tools: (name, JSON arguments) pairs."""
    assembled = [AssembledCall(f"call_{i}", name, [args]) for i, (name, args) in enumerate(calls)]
    return StepResult(text, assembled, "tool_calls", Usage(10, 5, 15))


# A scripted step: a StepResult, a ModelError to raise, or an async callable (for waits).
Scripted = StepResult | BaseException | Callable[[], Awaitable[StepResult]]


@dataclass
class Harness:
    manager: RunManager
    store: Store
    folder: Path
    events: list[tuple[str, Any]] = field(default_factory=list)
    steps: list[Scripted] = field(default_factory=list)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    tool_behaviour: Callable[[str, dict[str, Any]], Awaitable[ToolResult]] | None = None
    # Answers the model requests when `steps` is used up: (messages, tools) → the step.
    responder: Callable[[list[dict[str, Any]], list[dict[str, Any]]], StepResult] | None = None
    request_tools: list[list[dict[str, Any]]] = field(default_factory=list)  # the tools of each request

    def chunks(self, run_id: str | None = None) -> list[dict[str, Any]]:
        return [e for kind, e in self.events if kind == "chunk" and (run_id is None or e["runId"] == run_id)]

    def types(self, run_id: str | None = None) -> list[str]:
        return [c["type"] for c in self.chunks(run_id)]

    def queues(self) -> list[list[str]]:
        """The prompts listed by each cody/queueChanged sent, in order."""
        notes = [e for kind, e in self.events if kind == "notify" and e[0] == "cody/queueChanged"]
        return [[q["prompt"] for q in params["queued"]] for _method, params in notes]

    def order(self, run_id: str) -> list[str]:
        """What happened to the run, in order: commit, terminal chunk, result."""
        out = []
        for kind, e in self.events:
            if kind == "commit" and e == run_id:
                out.append("commit")
            elif kind == "chunk" and e["runId"] == run_id and e["type"] in TERMINAL_TYPES:
                out.append(e["type"])
            elif kind == "result" and e.run_id == run_id:
                out.append("result")
        return out

    def start(self, prompt: str = "hi", **params: Any) -> tuple[LiveRun, asyncio.Task[RunResult]]:
        run_params = RunParams(prompt=prompt, **params)
        live = self.manager.register(run_params)
        return live, asyncio.ensure_future(self._run(live, run_params))

    async def _run(self, live: LiveRun, params: RunParams) -> RunResult:
        result = await self.manager.run(live, params)
        self.events.append(("result", result))
        return result

    async def run(self, prompt: str = "hi", **params: Any) -> RunResult:
        return await self.start(prompt, **params)[1]

    async def history(self, session_id: str) -> list[tuple[str, str]]:
        messages, _ = await self.store.messages.page(session_id, 1000, None)
        return [(m.role, m.kind) for m in messages]


async def make_harness(
    tmp_path: Path,
    *,
    limits: Limits | None = None,
    model: ModelConfig = MODEL,
    ask: Callable[..., Awaitable[Any]] | None = None,
    steering: bool = False,
    tool_policy: dict[str, str] | None = None,
    context: ContextSettings | None = None,
    context_chunks: frozenset[str] = frozenset(),
    subagents: bool = False,
) -> Harness:
    """A run manager on a fresh store. `ask(run, PermissionParams)` answers permission requests
    (an outcome or a PermissionResult); `steering`: the client asked for user_message chunks and
    cody/queueChanged (recorded as ("notify", (method, params)) events)."""
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    store = await Store.open(tmp_path / "sessions.db")
    OPEN_STORES.append(store)
    config = ServerConfig(
        model=model,
        limits=limits or Limits(retry_base_delay=0.001, retry_max_delay=0.002),
        db=tmp_path / "sessions.db",
        text_flush_interval=0.0,
        # Without `ask` the client cannot answer: tools run only because the environment says never
        # to ask (CODY_APPROVALS=never), as they would not otherwise (permissions.NoApprover).
        approvals="auto" if ask is not None else "never",
        tool_policy=tool_policy or {},
        context=context or ContextSettings(),
        settings_problem=None,
    )
    holder: dict[str, Harness] = {}

    async def step(_config, _limits, _model, messages, tools, on_text, _on_thinking) -> StepResult:
        h = holder["h"]
        h.requests.append([dict(m) for m in messages])
        h.request_tools.append(tools)
        if not h.steps and h.responder is not None:
            h.steps.append(h.responder(messages, tools))
        if not h.steps:
            raise AssertionError("the model was asked for more steps than the test scripted")
        scripted = h.steps.pop(0)
        if isinstance(scripted, BaseException):
            raise scripted
        result = await scripted() if callable(scripted) else scripted
        if result.text:
            on_text(result.text)
        return result

    async def run_tool(name: str, args: dict[str, Any], root: Path, _config: Any = None) -> ToolResult:
        h = holder["h"]
        h.tool_calls.append((name, args))
        if h.tool_behaviour is not None:
            return await h.tool_behaviour(name, args)
        return ToolResult(True, f"{name} ran")

    events: list[tuple[str, Any]] = []
    finish_run = store.runs.finish

    async def recording_finish_run(session_id: str, run_id: str, *args: Any, **kwargs: Any) -> int:
        count = await finish_run(session_id, run_id, *args, **kwargs)
        events.append(("commit", run_id))
        return count

    store.runs.finish = recording_finish_run  # type: ignore[method-assign]
    features = ClientFeatures(
        approvals=ask is not None,
        steering=steering,
        usage="usage" in context_chunks,
        compaction="compaction" in context_chunks,
        subagents=subagents,
    )
    port = TestClient(features, events, str(folder), config, ask)
    manager = RunManager(store, config, port, step=step, tool_runner=run_tool)
    port.manager = manager
    harness = Harness(manager, store, folder, events)
    holder["h"] = harness
    return harness


class TestClient(ClientPort):
    """The test's ClientPort: events recorded as the LSP face would send them (its cody/chunk and
    cody/queueChanged params), permission questions answered by `ask(run, params)`."""

    def __init__(
        self,
        features: ClientFeatures,
        events: list[tuple[str, Any]],
        folder: str,
        config: ServerConfig,
        ask: Callable[..., Awaitable[Any]] | None,
    ):
        self.features = features
        self._events = events
        self._folder = folder
        self._config = config
        self._ask = ask
        self.manager: RunManager | None = None

    def send(self, event: Any) -> None:
        self._events.append(("chunk", chunk_params(event)))

    def queue_changed(self, change: Any) -> None:
        self._events.append(("notify", (QUEUE_CHANGED, queue_changed_params(change))))

    async def ask_permission(self, request: PermissionParams) -> Any:
        assert self._ask is not None and self.manager is not None
        run = next(r for r in self.manager.runs_of(request.session_id) if r.run_id == request.run_id)
        return await self._ask(run, request)

    async def settings(self, folder: str) -> ServerConfig:
        return self._config

    def tools(self, session_id: str) -> ToolConfig:
        return ToolConfig()

    def default_folder(self, document: str | None) -> str:
        return self._folder


async def close_stores() -> None:
    while OPEN_STORES:
        await OPEN_STORES.pop().close()


def model_error(code: str, *, retryable: bool) -> ModelError:
    return ModelError(code, f"scripted {code}", retryable=retryable)
