"""A run's hooks (agent/hooks.py): when each event fires, what its outcome does, what the client sees.

`Hooks` is the run manager's (administration.py; one per process): it reads the hook files
before each run (`for_run`) and remembers which sessions had their `SessionStart` in this
process. `RunHooks` is one run's:

- `start(prompt)` — before the prompt goes to the model: `SessionStart` (a session's first run in
  this process, new or resumed; `source` "startup" or "resume"), then `UserPromptSubmit`. Their
  context is given to the model with the prompt (kept in the history with it; the history shows
  what the user typed). A `UserPromptSubmit` block ends the run `error`, `error.code`
  "hook_blocked", the hook's reason as the message, and nothing is committed (`blocked_ending`).
- `gate(call, check)` — before a tool call's permission check: `PreToolUse`. A deny (exit 2,
  `permissionDecision: "deny"`, `decision: "block"`, or a hook that fails or times out) refuses the
  call and the model is told the reason; `"ask"` makes the check ask even where a rule or the
  policy would allow; `"allow"` skips the question in code mode only — never against a `deny`
  policy or rule, the sandbox, or a command asking to leave it (core/permissions.py) — and the
  ask and plan modes never reach a hook with a tool they do not offer.
- `after_tool(...)` — after a call that ran: `PostToolUse`, which sees the tool's response
  (`{"ok", "content"}`); its feedback (a block's reason) and context follow the result the model reads.
- `stop(answer)` — the model answered: `Stop`. A block makes the agent go on with the reason as
  its next instruction, at most `MAX_CONTINUATIONS` times a run; the run's output is its last answer.
  `subagent_stop(answer, agent=…)` is the same for a subagent's answer (`SubagentStop`).
- `pre_compact(trigger)` — before the history is compacted ("manual" or "auto"): `PreCompact`,
  which cannot stop it.

A workspace's hook runs only once approved (hook_approvals.py); the user's run without asking.
Whenever a hook changes something or fails, the client is told with a `hook` event (to clients
that declare `hooks`), and the server logs it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from ...config import ServerConfig
from ...protocol.wire import Error, ErrorInfo, Hook, Usage
from ..agent import hooks
from ..agent.history import Prompt, UserInput, prompt_text
from ..agent.hooks import HookDef, HookFiles, Note, Outcome
from ..agent.turn import Ending
from ..store.database import Store
from ..store.records import SessionRecord
from ..tools import ToolResult
from ..tools.sandbox import SANDBOXED
from .hook_approvals import HookApprovals
from .port import ClientPort

log = logging.getLogger(__name__)

MAX_CONTINUATIONS = 3  # Stop (and SubagentStop) blocks that make the agent go on, per run
HOOK_BLOCKED = "hook_blocked"  # the error code of a run whose prompt a UserPromptSubmit hook refused

Permission = Literal["allow", "ask"] | None
Check = Callable[[Permission], Awaitable[Any]]  # the permission check, given the hook's word


def blocked_ending(info: ErrorInfo) -> Ending:
    """A run whose prompt a hook refused: it ends `error` and commits nothing."""
    return Ending("error", Error(info.code, info.message), [], Usage(), error=info)


def with_context(prompt: Prompt, blocks: list[tuple[str, str]]) -> Prompt:
    """The prompt with the hooks' context before it, for the model (the user's text is kept as shown)."""
    if not blocks:
        return prompt
    text = "\n\n".join(
        f"[Context from the {event} hook:]\n{context}\n[End of that context]" for event, context in blocks
    )
    if isinstance(prompt, UserInput):
        content = prompt.content
        given: str | list[dict[str, Any]] = (
            f"{text}\n\n{content}" if isinstance(content, str) else [{"type": "text", "text": text}, *content]
        )
        return UserInput(prompt.text, given, prompt.attachments)
    return UserInput(prompt, f"{text}\n\n{prompt}", [])


class Hooks:
    """The hooks of every run of a run manager."""

    def __init__(self, store: Store, client: ClientPort, can_ask: Callable[[], bool]):
        self.client = client
        self.approvals = HookApprovals(store, client.ask_permission, can_ask)
        self.started: set[str] = set()  # sessions whose SessionStart fired in this process

    async def for_run(self, run: Any, config: ServerConfig) -> RunHooks:
        """The hooks of `run` (a live.LiveRun whose session and folder are known), read now."""
        files = await hooks.read(run.folder, config.hooks)
        events = run.events
        emit = events.emit if self.client.features.hooks and events is not None else None
        found = RunHooks(self, files, run.folder, run.session_id or "", run.mode, run=run, emit=emit)
        found.tell_problems()
        return found

    async def for_compaction(self, session: SessionRecord, config: ServerConfig) -> RunHooks:
        """The hooks of a cody/compact (no run: a workspace's hook runs only if approved for the folder)."""
        files = await hooks.read(session.workspace_folder, config.hooks)
        return RunHooks(self, files, session.workspace_folder, session.id, session.mode or "code")


class RunHooks:
    def __init__(
        self,
        owner: Hooks,
        files: HookFiles,
        folder: str,
        session_id: str,
        mode: str,
        *,
        run: Any = None,
        emit: Callable[[Any], None] | None = None,
    ):
        self.owner = owner
        self.files = files
        self.folder = folder
        self.session_id = session_id
        self.mode = mode
        self.run = run
        self._emit = emit
        self._once: set[str] = set()  # workspace hooks approved for this run only
        self._not_run: set[str] = set()  # workspace hooks that do not run in this run
        self._ran: set[str] = set()  # tool calls the gate let through (PostToolUse follows them)
        self._continued: dict[tuple[str, str | None], int] = {}  # Stop/SubagentStop continuations

    @property
    def active(self) -> bool:
        return bool(self.files.hooks)

    # ------------------------------------------------------------------ telling

    def _note(self, note: Note) -> None:
        log.info("hook %s %s: %s", note.event, note.outcome, note.message)
        if self._emit is not None and note.event in hooks.EVENTS:
            self._emit(Hook(note.event, note.outcome, note.message))  # type: ignore[arg-type]

    def tell_problems(self) -> None:
        """The definitions left out (a bad matcher, an unknown type …), told once a run."""
        for problem in self.files.problems:
            if problem.event in hooks.EVENTS:
                self._note(Note(problem.event, "error", f"a hook of {problem.file} is not used: {problem.reason}"))

    # ------------------------------------------------------------------ running

    async def _approved(self, found: list[HookDef]) -> list[HookDef]:
        out = []
        for hook in found:
            if hook.source == "user":
                out.append(hook)
                continue
            fingerprint = hook.fingerprint()
            if fingerprint in self._once:
                out.append(hook)
                continue
            if fingerprint in self._not_run:
                continue
            if self.run is None:  # no run to ask for: only what the folder approved
                answer = "always" if await self.owner.approvals.decided(self.folder, hook) == "allowed" else "no"
            else:
                answer = await self.owner.approvals.approve(self.run, hook)
            if answer == "no":
                self._not_run.add(fingerprint)
                log.info("the workspace's %s hook %r does not run: not approved", hook.event, hook.command[:80])
                continue
            if answer == "once":
                self._once.add(fingerprint)
            out.append(hook)
        return out

    async def fire(self, event: str, payload: dict[str, Any], tool_name: str | None = None) -> Outcome:
        """Run `event`'s hooks that apply (approved), and tell what they did."""
        found = self.files.for_event(event, tool_name)
        if not found:
            return Outcome()
        approved = await self._approved(found)
        if not approved:
            return Outcome()
        stdin = {
            "session_id": self.session_id,
            "cwd": self.folder,
            "hook_event_name": event,
            "permission_mode": "plan" if self.mode == "plan" else "default",
            "cody_mode": self.mode,
            **payload,
        }
        env = {"CODY_PROJECT_DIR": self.folder, "CLAUDE_PROJECT_DIR": self.folder, "CODY_SESSION_ID": self.session_id}
        outcome = hooks.judge(event, await hooks.run_all(approved, stdin, self.folder, env))
        for note in outcome.notes:
            self._note(note)
        return outcome

    def _tool_input(self, args: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments, and `file_path` (absolute) beside a `path` (Claude Code's name)."""
        path = args.get("path")
        if isinstance(path, str) and "\0" not in path:
            return {**args, "file_path": os.path.normpath(os.path.join(self.folder, path))}
        return dict(args)

    # ------------------------------------------------------------------ events

    async def start(self, prompt: Prompt, resumed: bool) -> Prompt | ErrorInfo:
        """SessionStart (once a session in this process) and UserPromptSubmit: the prompt the model
        gets (with their context), or why a hook refused it."""
        blocks: list[tuple[str, str]] = []
        first = self.session_id not in self.owner.started
        if first and self.files.for_event("SessionStart"):
            outcome = await self.fire("SessionStart", {"source": "resume" if resumed else "startup"})
            blocks += [("SessionStart", text) for text in outcome.context]
        outcome = await self.fire("UserPromptSubmit", {"prompt": prompt_text(prompt)})
        if outcome.blocked:
            return ErrorInfo(HOOK_BLOCKED, outcome.reason)
        self.owner.started.add(self.session_id)
        blocks += [("UserPromptSubmit", text) for text in outcome.context]
        return with_context(prompt, blocks)

    async def gate(self, call_id: str, name: str, args: dict[str, Any], check: Check) -> Any:
        """PreToolUse, then the permission check with what the hooks said; the check's verdict
        (None: run it; SANDBOXED; or the refusal the model is told)."""
        payload = {"tool_name": name, "tool_input": self._tool_input(args), "tool_use_id": call_id}
        outcome = await self.fire("PreToolUse", payload, tool_name=name)
        if outcome.decision == "deny":
            return (
                f"{name} did not run: a PreToolUse hook refused it:\n{outcome.reason}\n"
                "Do not retry the same call; do what the hook's message says, or another way."
            )
        word: Permission = outcome.decision if outcome.decision in ("allow", "ask") else None
        verdict = await check(word)
        if verdict is None or verdict is SANDBOXED:
            self._ran.add(call_id)
        return verdict

    async def after_tool(self, call_id: str, name: str, args: dict[str, Any], result: ToolResult) -> ToolResult:
        """PostToolUse, for a call that ran: its feedback and context follow the result."""
        if call_id not in self._ran:
            return result
        self._ran.discard(call_id)
        payload = {
            "tool_name": name,
            "tool_input": self._tool_input(args),
            "tool_response": {"ok": result.ok, "content": result.content},
            "tool_use_id": call_id,
        }
        outcome = await self.fire("PostToolUse", payload, tool_name=name)
        extra = []
        if outcome.blocked:
            extra.append(f"[PostToolUse hook feedback:]\n{outcome.reason}")
        if outcome.context:
            extra.append("[PostToolUse hook context:]\n" + "\n\n".join(outcome.context))
        if not extra:
            return result
        return dataclasses.replace(result, content=result.content + "\n\n" + "\n\n".join(extra))

    async def stop(self, answer: str) -> str | None:
        """Stop: None to let the run end with `answer`, else the agent's next instruction."""
        return await self._stop("Stop", {"last_assistant_message": answer}, None)

    async def subagent_stop(self, answer: str, agent: str | None = None, child: str | None = None) -> str | None:
        """SubagentStop, at the end of a subagent's run (`agent`: its type; `child`: which one, for
        the count of continuations): None to let it end, else its next instruction."""
        payload: dict[str, Any] = {"last_assistant_message": answer}
        if agent is not None:
            payload["agent_type"] = agent
        return await self._stop("SubagentStop", payload, child)

    async def _stop(self, event: str, payload: dict[str, Any], child: str | None) -> str | None:
        count = self._continued.get((event, child), 0)
        outcome = await self.fire(event, {**payload, "stop_hook_active": count > 0})
        if not outcome.blocked:
            return None
        if count >= MAX_CONTINUATIONS:
            self._note(
                Note(
                    event,
                    "error",
                    f"the {event} hook asked to go on again; it did {MAX_CONTINUATIONS} times already: the run ends",
                )
            )
            return None
        self._continued[(event, child)] = count + 1
        return f"{event} hook feedback (go on with this before you finish):\n{outcome.reason}"

    async def pre_compact(self, trigger: str) -> None:
        await self.fire(
            "PreCompact", {"trigger": "manual" if trigger == "manual" else "auto", "custom_instructions": ""}
        )
