"""Hooks: commands run at points of a run, in Claude Code's shape (so a user's hooks carry over).

Files (:func:`read`, before each run — an edit counts at the next run): the user's
`$XDG_CONFIG_HOME/cody-lsp/hooks.json`, the folder's `.cody/hooks.json`, and the files that
`CODY_HOOKS_FILES` (the configuration file's `hooks_files`) names — an absolute (or `~/…`) path is
the user's, a relative one the folder's (a `.claude/settings.json` is read for its `hooks` key).
Each is `{"hooks": {EVENT: [{"matcher": REGEX, "hooks": [{"type": "command", "command": "…",
"timeout": SECONDS}]}]}}`. A definition that cannot be used is kept as a :class:`BadHook` with why.

Events (`EVENTS`): SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop,
PreCompact. `matcher` — an RE2 expression, matched against the whole tool name (and against the
name Claude Code gives the same tool: `Bash` for run_command, `Write`, `Edit`, `Read`, `Glob`,
`Grep`, `LS`); empty, absent or `*` matches every tool — applies to the tool events only.

Running (:func:`run_hook`): `sh -c COMMAND` in the session's folder, the JSON payload on stdin,
`CODY_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` (the folder) and `CODY_SESSION_ID` in the scrubbed
environment commands get (tools/shell.py: no `CODY_*` of the server, nothing secret-looking),
in a process group of its own under the command discipline (killed with the server, its
escaped descendants swept); at most its `timeout` (default 60 s, at most 600 s), then its
group is killed; stdout and stderr read to `MAX_OUTPUT` bytes each. A cancelled run kills its
hooks' groups at once.

Outcomes (:func:`judge`): exit 0 goes on — its stdout is read as Claude Code's JSON when it is a
JSON object (`decision`/`reason`, `continue`/`stopReason`, `hookSpecificOutput` with
`permissionDecision`/`permissionDecisionReason` or `additionalContext`), else, for SessionStart
and UserPromptSubmit, it is context for the model; exit 2 blocks, stderr being the reason (what a
block does depends on the event: :class:`Outcome`); any other exit is a warning, and the run
goes on — except for PreToolUse, which fails closed: a hook that fails, cannot start or times out
refuses the call, saying why.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import re2  # type: ignore[import-untyped]

from ...config import HookSettings
from ...config_file import config_path
from ..tools import procs
from ..tools.shell import end_process, spawn_process
from .userfiles import home, shown

log = logging.getLogger(__name__)

HookSource = Literal["user", "workspace"]
HookEvent = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop", "PreCompact"
]
NoteOutcome = Literal["blocked", "context", "error", "timeout"]
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
)
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})  # whose plain stdout is context
WORKSPACE_FILE = ".cody/hooks.json"
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
MAX_FILE_BYTES = 1 << 20
MAX_HOOKS = 100  # per file
MAX_COMMAND = 16_384  # characters of one command
MAX_OUTPUT = 64 * 1024  # bytes of a hook's stdout (and of its stderr) read
MAX_CONTEXT = 10_000  # characters of context one hook adds
MAX_MESSAGE = 2_000  # characters of a reason or warning told
EOF_GRACE = 1.0  # after the hook exits, how long its pipes may stay open (a background child)
# The names Claude Code gives our tools, which a matcher may use (a user's hooks carry over).
CLAUDE_NAMES = {
    "run_command": "Bash",
    "write_file": "Write",
    "edit_file": "Edit",
    "read_file": "Read",
    "glob": "Glob",
    "grep": "Grep",
    "list_dir": "LS",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


# ------------------------------------------------------------------------------ definitions


@dataclass(frozen=True)
class HookDef:
    """One hook command, as configured."""

    event: str
    matcher: str | None  # None: every tool (or an event without tools)
    command: str
    timeout: float
    file: str  # the file it was read from, as shown (`~/…` for the user's)
    source: HookSource

    def shown(self) -> dict[str, Any]:
        """What the user approves (a workspace's hook): the event, matcher, command and file."""
        return {"event": self.event, "matcher": self.matcher, "command": self.command, "file": self.file}

    def fingerprint(self) -> str:
        """A digest of :meth:`shown`: an approval covers exactly this definition."""
        return hashlib.sha256(json.dumps(self.shown(), sort_keys=True).encode()).hexdigest()

    def matches(self, tool_name: str | None) -> bool:
        if self.matcher is None or tool_name is None:
            return True
        pattern = _compiled(self.matcher)  # checked when it was read
        names = [tool_name] + ([CLAUDE_NAMES[tool_name]] if tool_name in CLAUDE_NAMES else [])
        return any(pattern.fullmatch(name) for name in names)


@dataclass(frozen=True)
class BadHook:
    """A definition (or a file) that cannot be used, and why."""

    file: str
    event: str | None
    reason: str


@dataclass(frozen=True)
class HookFiles:
    """The hooks in effect for a folder, and the definitions left out."""

    hooks: tuple[HookDef, ...] = ()
    problems: tuple[BadHook, ...] = ()

    def for_event(self, event: str, tool_name: str | None = None) -> list[HookDef]:
        """The hooks of `event` that apply (to `tool_name`), each command once."""
        seen: set[tuple[str, str]] = set()
        out = []
        for hook in self.hooks:
            key = (hook.source, hook.command)
            if hook.event == event and hook.matches(tool_name) and key not in seen:
                seen.add(key)
                out.append(hook)
        return out


NO_HOOKS = HookFiles()


def user_file() -> Path:
    return config_path().parent / "hooks.json"


def _timeout(value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise ValueError(f"'timeout' must be a number of seconds greater than 0, got {value!r}")
    return float(min(value, MAX_TIMEOUT))


def _matcher(value: Any, event: str) -> str | None:
    if value is None or value in ("", "*"):
        return None
    if not isinstance(value, str):
        raise ValueError(f"'matcher' must be a string (a regular expression), got {type(value).__name__}")
    if event not in TOOL_EVENTS:
        return None  # Claude Code ignores a matcher where there is no tool
    if len(value) > 1000:
        raise ValueError("'matcher' is longer than 1,000 characters")
    try:
        re2.compile(value, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"'matcher' {value[:80]!r} is not an RE2 regular expression ({exc})") from None
    return value


def parse(raw: Any, file: str, source: HookSource) -> tuple[list[HookDef], list[BadHook]]:
    """The hooks of one file's JSON (its `hooks` key)."""
    hooks: list[HookDef] = []
    bad: list[BadHook] = []
    if not isinstance(raw, dict):
        return [], [BadHook(file, None, 'the file must hold a JSON object: {"hooks": {EVENT: [...]}}')]
    table = raw.get("hooks")
    if table is None:
        return [], []  # a settings file without hooks
    if not isinstance(table, dict):
        return [], [BadHook(file, None, "'hooks' must be an object of events")]
    for event, groups in table.items():
        if event not in EVENTS:
            bad.append(BadHook(file, str(event)[:60], f"unknown event; the events are {', '.join(EVENTS)}"))
            continue
        if not isinstance(groups, list):
            bad.append(BadHook(file, event, "the event's value must be a list of {matcher, hooks}"))
            continue
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                bad.append(BadHook(file, event, 'each entry must be {"matcher": …, "hooks": [...]}'))
                continue
            try:
                matcher = _matcher(group.get("matcher"), event)
            except ValueError as exc:
                bad.append(BadHook(file, event, str(exc)))
                continue
            for item in group["hooks"]:
                if len(hooks) >= MAX_HOOKS:
                    bad.append(BadHook(file, event, f"only the first {MAX_HOOKS} hooks of a file are used"))
                    return hooks, bad
                if not isinstance(item, dict):
                    bad.append(BadHook(file, event, 'a hook must be {"type": "command", "command": …}'))
                    continue
                kind = item.get("type", "command")
                command = item.get("command")
                if kind != "command":
                    bad.append(BadHook(file, event, f"hooks of type {str(kind)[:30]!r} are not run (only 'command')"))
                    continue
                if not isinstance(command, str) or not command.strip() or "\0" in command:
                    bad.append(BadHook(file, event, "'command' must be a non-empty string"))
                    continue
                if len(command) > MAX_COMMAND:
                    bad.append(BadHook(file, event, f"'command' is longer than {MAX_COMMAND:,} characters"))
                    continue
                try:
                    timeout = _timeout(item.get("timeout"))
                except ValueError as exc:
                    bad.append(BadHook(file, event, str(exc)))
                    continue
                hooks.append(HookDef(event, matcher, command, timeout, file, source))
    return hooks, bad


def _load(path: Path, inside: str | None) -> Any:
    """The JSON of a hooks file (ValueError saying why not); `inside`: the folder it must be in."""
    if inside is not None:
        real, root = os.path.realpath(path), os.path.realpath(inside)
        if os.path.commonpath([real, root]) != root:
            raise ValueError(f"it leads outside the folder (to {real}); it is not read")
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"it is larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"it is not valid JSON ({exc})") from None


def _files(folder: str, settings: HookSettings) -> list[tuple[Path, str, HookSource]]:
    """(path, shown, source) of every hooks file to read, in order."""
    found: list[tuple[Path, str, HookSource]] = [(user_file(), shown(str(user_file())), "user")]
    found.append((Path(folder) / WORKSPACE_FILE, WORKSPACE_FILE, "workspace"))
    for name in settings.files:
        if name.startswith("~/") or name == "~":
            path = home() / name[2:]
            found.append((path, shown(str(path)), "user"))
        elif os.path.isabs(name):
            found.append((Path(name), shown(name), "user"))
        else:
            found.append((Path(folder) / name, os.path.normpath(name), "workspace"))
    return found


def read_blocking(folder: str, settings: HookSettings) -> HookFiles:
    hooks: list[HookDef] = []
    bad: list[BadHook] = []
    for path, name, source in _files(folder, settings):
        if not os.path.lexists(path):
            continue
        try:
            raw = _load(path, folder if source == "workspace" else None)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            bad.append(BadHook(name, None, f"the file cannot be read: {reason}"))
            continue
        more, problems = parse(raw, name, source)
        hooks += more
        bad += problems
    return HookFiles(tuple(hooks), tuple(bad))


async def read(folder: str, settings: HookSettings) -> HookFiles:
    """The hooks in effect for a run in `folder` (none when they are off), read off the event loop."""
    if not settings.enabled:
        return NO_HOOKS
    try:
        found = await asyncio.to_thread(read_blocking, folder, settings)
    except OSError as exc:
        log.warning("the hooks of %s are not read (%s)", folder, exc)
        return NO_HOOKS
    for problem in found.problems:
        log.warning("hooks: %s (%s): %s", problem.file, problem.event or "the file", problem.reason)
    return found


# ------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class HookRun:
    """What one hook did."""

    hook: HookDef
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None  # it could not be started
    seconds: float = 0.0


class _Bounded:
    """A stream's first `limit` bytes; the rest is read and counted, not kept."""

    def __init__(self, limit: int = MAX_OUTPUT):
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]

    def text(self) -> str:
        text = self.data.decode("utf-8", "replace")
        if self.total > len(self.data):
            text += f"\n…[cut: {self.total - len(self.data):,} more bytes]"
        return text


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the payload to the hook's stdin and close it (a hook that does not read it is fine)."""
    stdin = proc.stdin
    if stdin is None:
        return
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        try:
            stdin.close()
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            pass


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait for the shell itself to exit (not for its pipes); False if `timeout` passed first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            left = min(0.05, deadline - loop.time())
            if left <= 0:
                return False
            await asyncio.wait({waiter}, timeout=left)
        return True
    finally:
        waiter.cancel()


_ending: set[asyncio.Future[Any]] = set()  # hooks given up on (a cancelled run), being ended


def _abandon(proc: asyncio.subprocess.Process, marker: bytes, tasks: Iterable[asyncio.Future[Any]]) -> None:
    """A hook whose run was cancelled: its group is killed now; the sweep of what escaped it goes on
    in the background."""
    procs.killpg(proc.pid)
    for task in tasks:
        task.cancel()

    async def end() -> None:
        try:
            await end_process(proc, marker)
        except Exception:
            log.warning("a cancelled hook's processes could not all be ended", exc_info=True)

    task = asyncio.ensure_future(end())
    _ending.add(task)
    task.add_done_callback(_ending.discard)


async def run_hook(hook: HookDef, payload: dict[str, Any], cwd: str, env: dict[str, str]) -> HookRun:
    """Run one hook to its end (or its timeout); a cancel kills its process group and goes on."""
    started = time.monotonic()
    try:
        proc, marker = await spawn_process(
            ["/bin/sh", "-c", hook.command],
            cwd,
            env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return HookRun(hook, error=f"it could not be started: {exc.strerror or exc}")
    out, err = _Bounded(), _Bounded()
    tasks = [
        asyncio.ensure_future(_feed(proc, json.dumps(payload).encode())),
        asyncio.ensure_future(out.drain(proc.stdout)),
        asyncio.ensure_future(err.drain(proc.stderr)),
    ]
    try:
        finished = await _exited(proc, hook.timeout)
        if not finished:
            procs.killpg(proc.pid)
        await asyncio.wait(tasks[1:], timeout=EOF_GRACE)  # a background child may hold the pipes
        for task in tasks:
            task.cancel()
        await end_process(proc, marker)
    except BaseException:
        _abandon(proc, marker, tasks)
        raise
    return HookRun(
        hook,
        proc.returncode if finished else None,
        out.text(),
        err.text(),
        timed_out=not finished,
        seconds=time.monotonic() - started,
    )


async def run_all(hooks: list[HookDef], payload: dict[str, Any], cwd: str, env: dict[str, str]) -> list[HookRun]:
    """Run `hooks` side by side (as Claude Code does); their results in their order."""
    if not hooks:
        return []
    return list(await asyncio.gather(*(run_hook(h, payload, cwd, env) for h in hooks)))


# ------------------------------------------------------------------------------ outcomes


@dataclass(frozen=True)
class Note:
    """What the client is told a hook did (a `hook` chunk): it changed something, or failed."""

    event: str
    outcome: NoteOutcome
    message: str


@dataclass
class Outcome:
    """What the hooks of one event decided, together.

    - `blocked`: the reasons to block (exit 2, `decision: "block"`, `continue: false`, a failed
      PreToolUse hook): PreToolUse refuses the call, UserPromptSubmit the prompt, Stop and
      SubagentStop make the agent go on with them as its next instruction, PostToolUse gives them
      to the model with the tool's result; SessionStart and PreCompact cannot block (a warning).
    - `decision`: PreToolUse's `permissionDecision` (deny > ask > allow), or None.
    - `context`: text for the model (SessionStart, UserPromptSubmit, PostToolUse).
    - `notes`: what the client is told.
    """

    blocked: list[str] = field(default_factory=list)
    decision: Literal["allow", "ask", "deny"] | None = None
    context: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "\n".join(self.blocked)


def cut(text: str, limit: int = MAX_MESSAGE) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _label(hook: HookDef) -> str:
    command = " ".join(hook.command.split())
    return f"`{command[:80]}{'…' if len(command) > 80 else ''}`"


def _json(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


_RANK = {"allow": 0, "ask": 1, "deny": 2}


def _decide(outcome: Outcome, decision: Any) -> None:
    if decision in _RANK and (outcome.decision is None or _RANK[decision] > _RANK[outcome.decision]):
        outcome.decision = decision


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def judge(event: str, runs: list[HookRun]) -> Outcome:
    """The outcome of `event`'s hooks (see :class:`Outcome` and the module's docstring)."""
    outcome = Outcome()
    for done in runs:
        hook, label = done.hook, _label(done.hook)
        failure: tuple[NoteOutcome, str] | None = None
        if done.error is not None:
            failure = ("error", f"the {event} hook {label} did not run: {done.error}")
        elif done.timed_out:
            failure = ("timeout", f"the {event} hook {label} did not finish in {hook.timeout:g} s and was killed")
        elif done.exit_code not in (0, 2):
            said = cut(done.stderr or done.stdout, 500)
            failure = (
                "error",
                f"the {event} hook {label} failed (exit code {done.exit_code})" + (f": {said}" if said else ""),
            )
        if failure is not None:
            kind, message = failure
            if event == "PreToolUse":  # fails closed
                outcome.blocked.append(f"{message}; the call is refused (a failing PreToolUse hook refuses its calls)")
                _decide(outcome, "deny")
            outcome.notes.append(Note(event, kind, message))
            continue
        if done.exit_code == 2:
            reason = cut(done.stderr) or f"the {event} hook {label} blocked it (exit code 2) without saying why"
            _block(outcome, event, reason, label)
            continue
        data = _json(done.stdout)
        if data is None:
            if event in CONTEXT_EVENTS and done.stdout.strip():
                _add_context(outcome, event, done.stdout)
            continue
        _from_json(outcome, event, data, label)
    return outcome


def _block(outcome: Outcome, event: str, reason: str, label: str) -> None:
    if event in ("SessionStart", "PreCompact"):  # cannot block: said to the user
        outcome.notes.append(
            Note(event, "error", f"the {event} hook {label} exited with 2 (it cannot block): {reason}")
        )
        return
    outcome.blocked.append(reason)
    if event == "PreToolUse":
        _decide(outcome, "deny")
    outcome.notes.append(Note(event, "blocked", reason))


def _add_context(outcome: Outcome, event: str, text: str) -> None:
    context = cut(text, MAX_CONTEXT)
    if context:
        outcome.context.append(context)
        outcome.notes.append(Note(event, "context", cut(context, 500)))


def _from_json(outcome: Outcome, event: str, data: dict[str, Any], label: str) -> None:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = _text(data.get("reason"))
    if data.get("continue") is False and event in ("UserPromptSubmit", "PreToolUse"):
        _block(outcome, event, cut(_text(data.get("stopReason")) or reason or f"the hook {label} said stop"), label)
        return
    if event == "PreToolUse":
        decision = specific.get("permissionDecision")
        legacy = {"approve": "allow", "block": "deny"}.get(str(data.get("decision")))
        decision = decision if decision in _RANK else legacy
        why = _text(specific.get("permissionDecisionReason")) or reason
        if decision == "deny":
            _block(outcome, event, cut(why or f"the PreToolUse hook {label} denied the call"), label)
        elif decision in ("allow", "ask"):
            _decide(outcome, decision)
        return
    if data.get("decision") == "block" and event in ("UserPromptSubmit", "PostToolUse", "Stop", "SubagentStop"):
        _block(outcome, event, cut(reason or f"the {event} hook {label} blocked it"), label)
    extra = _text(specific.get("additionalContext"))
    if extra is not None and event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
        _add_context(outcome, event, extra)
