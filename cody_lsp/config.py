"""Settings read from the environment (names follow the Cody SDK).

Nothing here imports openai: the server must start fast and say clearly what is
missing or wrong when a run needs the model. A setting that does not parse is
never silently replaced by its default: runs fail with a message naming it.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse


class SettingError(ValueError):
    """A setting whose value cannot be used; the message names the variable."""


def setting_key(variable: str) -> str:
    """The editor's setting of an environment variable: CODY_MAX_STEPS → maxSteps."""
    first, *rest = variable.removeprefix("CODY_").lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


def _env_number(name: str, default: Any, *, positive: bool = False) -> Any:
    """`name` as a number of the type of `default` (int or float), or `default` when unset;
    ≥ 0, or > 0 when `positive`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    kind = type(default)
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise SettingError(
            f"{name}={raw!r} is not {what}; fix it or unset it to use the default ({default:g})"
        ) from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else "≥ 0"
        raise SettingError(f"{name}={raw!r} must be a finite number {bound}; fix it or unset it (default {default:g})")
    return value


def _env_flag(name: str, default: bool = False) -> bool:
    """`name` as on (1, true, yes, on) or off (0, false, no, off); `default` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    raise SettingError(f"{name}={raw!r} is not 1 or 0; fix it or unset it")


def state_dir() -> Path:
    """`$XDG_STATE_HOME/cody-lsp` (default ~/.local/state/cody-lsp): the server's files, made 0700."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "cody-lsp"


def private_dir(path: Path) -> None:
    """Make the directory `path` (and its parents) if it is missing, `path` itself with mode 0700;
    the state directory, ours, is made 0700 even when it already exists (an older cody-lsp made
    it 0755). A directory the user chose (CODY_DB's) keeps the mode it has."""
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)  # whatever the umask
    elif path == state_dir():
        _tighten(path, 0o700)


def private_file(path: Path, *companions: str) -> None:
    """Make the file `path` with mode 0600 if it is missing, and take the group's and others'
    access away from it (and from `path` + each suffix in `companions`, such as SQLite's -wal
    and -shm, which take the database's mode when SQLite makes them) if it exists."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        pass
    for name in (str(path), *(str(path) + suffix for suffix in companions)):
        if os.path.exists(name):
            _tighten(Path(name), 0o600)


def _tighten(path: Path, mode: int) -> None:
    try:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, mode)
    except OSError as exc:  # not the owner: say so, go on
        logging.getLogger(__name__).warning("cannot make %s private (mode %o): %s", path, mode, exc.strerror)


def token_path(port: int) -> Path:
    """Where `cody-lsp --tcp` writes the connection token it made for `port` (mode 0600):
    `$XDG_RUNTIME_DIR/cody-lsp/tcp-PORT.token`, else in the state directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "cody-lsp" if runtime and os.path.isabs(runtime) else state_dir()
    return folder / f"tcp-{port}.token"


def db_path() -> Path:
    """`CODY_DB`, else `sessions.db` in the state directory."""
    explicit = os.environ.get("CODY_DB")
    if explicit:
        return Path(explicit).expanduser()
    return state_dir() / "sessions.db"


def missing_message(missing: list[str]) -> str:
    """The one text that says which model settings are missing and how to set them."""
    verb = "is" if len(missing) == 1 else "are"
    return (
        f"{' and '.join(missing)} {verb} not set: set CODY_MODEL, CODY_MODEL_BASE_URL and CODY_MODEL_API_KEY "
        "to point cody-lsp at an OpenAI-compatible endpoint, or model, base_url and api_key_file (or "
        "api_key_command) in ~/.config/cody-lsp/config.toml (or try `cody-lsp demo`)"
    )


@dataclass(frozen=True)
class ModelConfig:
    model: str | None
    base_url: str | None
    api_key: str | None

    @classmethod
    def from_env(cls) -> ModelConfig:
        return cls(
            model=os.environ.get("CODY_MODEL") or None,
            base_url=os.environ.get("CODY_MODEL_BASE_URL") or None,
            api_key=os.environ.get("CODY_MODEL_API_KEY") or None,
        )

    def missing(self, *, model: str | None = None) -> list[str]:
        """Names of the variables a run needs and that are not set (`model`: the session's, if any)."""
        names = []
        if not (model or self.model):
            names.append("CODY_MODEL")
        if not self.base_url:
            names.append("CODY_MODEL_BASE_URL")
        if not self.api_key:
            names.append("CODY_MODEL_API_KEY")
        return names

    def problem(self, *, model: str | None = None) -> str | None:
        """Why a run cannot reach the model with these settings (one message to show), or None."""
        missing = self.missing(model=model)
        if missing:
            return missing_message(missing)
        url = urlparse(self.base_url or "")
        if url.scheme not in ("http", "https") or not url.netloc:
            return (
                f"CODY_MODEL_BASE_URL={self.base_url!r} is not an http(s) URL: give the endpoint's full base URL, "
                "e.g. https://api.openai.com/v1 or http://localhost:11434/v1"
            )
        return None


@dataclass(frozen=True)
class Limits:
    """Per-run circuit-breaker limits and retry policy (all configurable by env)."""

    max_steps: int = 50
    max_total_tokens: int = 2_000_000
    max_repeated_tool_calls: int = 3
    max_consecutive_tool_failures: int = 8
    retry_attempts: int = 4
    retry_base_delay: float = 0.5
    retry_max_delay: float = 30.0
    stall_timeout: float = 60.0
    connect_timeout: float = 30.0
    # Subagents (`task` calls) of one model step that run at once; 0: no `task` tool.
    max_parallel_tasks: int = 4

    @classmethod
    def from_env(cls) -> Limits:
        """The limits the environment sets; raises SettingError naming a variable that does not parse."""
        defaults = cls()
        return cls(**{name: _env_number(var, getattr(defaults, name)) for var, name in LIMIT_VARIABLES})


# Environment variable → Limits field.
LIMIT_VARIABLES = (
    ("CODY_MAX_STEPS", "max_steps"),
    ("CODY_MAX_TOTAL_TOKENS", "max_total_tokens"),
    ("CODY_MAX_REPEATED_TOOL_CALLS", "max_repeated_tool_calls"),
    ("CODY_MAX_CONSECUTIVE_TOOL_FAILURES", "max_consecutive_tool_failures"),
    ("CODY_RETRY_ATTEMPTS", "retry_attempts"),
    ("CODY_RETRY_BASE_DELAY", "retry_base_delay"),
    ("CODY_RETRY_MAX_DELAY", "retry_max_delay"),
    ("CODY_STALL_TIMEOUT", "stall_timeout"),
    ("CODY_CONNECT_TIMEOUT", "connect_timeout"),
    ("CODY_MAX_PARALLEL_TASKS", "max_parallel_tasks"),
)

MIB = 1 << 20


@dataclass(frozen=True)
class ToolLimits:
    """Bounds of each tool call (SECURITY.md): set by the environment or the editor's settings
    (server/lsp/configuration.py), each > 0."""

    command_timeout: float = 120.0  # seconds a run_command may take (the model may ask for less)
    deadline: float = 30.0  # seconds of work per file-tool call, then it stops and says so
    max_scan_bytes: int = 256 * MIB  # bytes read per call (read_file counting lines, grep)
    max_scan_entries: int = 100_000  # directory entries visited per call (list_dir, glob, grep)
    max_file_bytes: int = 10 * MIB  # larger files are skipped by grep and refused by edit_file
    max_write_bytes: int = 1 * MIB  # write_file content, edit_file old_string/new_string
    mcp_call_timeout: float = 120.0  # seconds an MCP tool call may take, then it is cancelled

    @classmethod
    def from_env(cls) -> ToolLimits:
        """The limits the environment sets; raises SettingError naming a variable that does not parse."""
        defaults = cls()
        return cls(
            **{name: _env_number(var, getattr(defaults, name), positive=True) for var, name in TOOL_LIMIT_VARIABLES}
        )


# Environment variable → ToolLimits field.
TOOL_LIMIT_VARIABLES = (
    ("CODY_COMMAND_TIMEOUT", "command_timeout"),
    ("CODY_TOOL_DEADLINE", "deadline"),
    ("CODY_TOOL_MAX_SCAN_BYTES", "max_scan_bytes"),
    ("CODY_TOOL_MAX_SCAN_ENTRIES", "max_scan_entries"),
    ("CODY_TOOL_MAX_FILE_BYTES", "max_file_bytes"),
    ("CODY_MAX_WRITE_BYTES", "max_write_bytes"),
    ("CODY_MCP_CALL_TIMEOUT", "mcp_call_timeout"),
)
# Where the model is told a tool limit comes from: variable → "CODY_X, or the editor's cody.x".
TOOL_LIMIT_SOURCES = {var: f"{var}, or the editor's cody.{setting_key(var)}" for var, _name in TOOL_LIMIT_VARIABLES}


@dataclass(frozen=True)
class CheckpointSettings:
    """Checkpoints (server/checkpoints/): set by the environment or the editor's settings, each > 0."""

    max_file_bytes: int = 10 * MIB  # larger files are left out of a checkpoint (and said so)
    store_max_bytes: int = 2048 * MIB  # the whole store: beyond it the oldest checkpoints are pruned

    @classmethod
    def from_env(cls) -> CheckpointSettings:
        """The settings the environment sets; raises SettingError naming a variable that does not parse."""
        defaults = cls()
        return cls(
            **{name: _env_number(var, getattr(defaults, name), positive=True) for var, name in CHECKPOINT_VARIABLES}
        )


# Environment variable → CheckpointSettings field.
CHECKPOINT_VARIABLES = (
    ("CODY_CHECKPOINT_MAX_FILE_BYTES", "max_file_bytes"),
    ("CODY_CHECKPOINT_STORE_MAX_BYTES", "store_max_bytes"),
)


@dataclass(frozen=True)
class CodeNavSettings:
    """The code_nav tool (server/tools/code_nav.py) and the language servers the backend starts itself
    (server/langservers/): set by the environment or the configuration file, each > 0."""

    max_results: int = 100  # locations (symbols, calls) listed in one result; the rest are counted
    timeout: float = 10.0  # seconds the editor, or a language server, has to answer one request
    idle_seconds: float = 600.0  # a language server unused this long is stopped

    @classmethod
    def from_env(cls) -> CodeNavSettings:
        """The settings the environment sets; raises SettingError naming a variable that does not parse."""
        defaults = cls()
        return cls(
            **{name: _env_number(var, getattr(defaults, name), positive=True) for var, name in CODE_NAV_VARIABLES}
        )


# Environment variable → CodeNavSettings field (the configuration file's key: the name without CODY_).
CODE_NAV_VARIABLES = (
    ("CODY_CODE_NAV_MAX_RESULTS", "max_results"),
    ("CODY_CODE_NAV_TIMEOUT", "timeout"),
    ("CODY_LANGUAGE_SERVER_IDLE_SECONDS", "idle_seconds"),
)


def _code_nav_from_env() -> CodeNavSettings:
    try:
        return CodeNavSettings.from_env()
    except SettingError:
        return CodeNavSettings()  # the problem is reported by ServerConfig.problem() on every run


APPROVAL_MODES = ("auto", "ask", "never")


def _approvals_mode() -> str:
    raw = os.environ.get("CODY_APPROVALS", "auto").strip().lower()
    if raw not in APPROVAL_MODES:
        logging.getLogger(__name__).warning(
            "CODY_APPROVALS=%r is not one of %s; using 'auto'", raw, ", ".join(APPROVAL_MODES)
        )
        return "auto"
    return raw


# A tool's policy, from the loosest to the strictest: `allow` runs it without asking,
# `sandboxed` (run_command only) runs it without asking in the sandbox (server/tools/sandbox.py),
# `ask` asks the client first, `deny` never runs it.
TOOL_POLICY_VALUES = ("allow", "sandboxed", "ask", "deny")
SANDBOXED_TOOLS = ("run_command",)  # the tools the policy `sandboxed` applies to
# Where two sources set a tool's policy, the stricter applies (a less trusted source never
# loosens a more trusted one's; configuration.resolve).
POLICY_STRICTNESS = {value: rank for rank, value in enumerate(TOOL_POLICY_VALUES)}


def stricter(a: str, b: str) -> str:
    """The stricter of two tool policy values (deny > ask > sandboxed > allow; an unknown one counts as ask)."""
    return a if POLICY_STRICTNESS.get(a, 2) >= POLICY_STRICTNESS.get(b, 2) else b


def policy_problem(tool: str, value: str) -> str | None:
    """Why `value` cannot be `tool`'s policy (None: it can)."""
    if value not in TOOL_POLICY_VALUES:
        return f"is not {', '.join(TOOL_POLICY_VALUES[:-1])} or {TOOL_POLICY_VALUES[-1]}"
    if value == "sandboxed" and tool not in SANDBOXED_TOOLS:
        return f"is 'sandboxed', which only {', '.join(SANDBOXED_TOOLS)} can be"
    return None


def some_of(items: list[str], shown: int = 5) -> str:
    """The first `shown` items and how many more: a message names a few, however many there are."""
    text = ", ".join(items[:shown])
    return text if len(items) <= shown else f"{text} and {len(items) - shown:,} more"


def parse_tool_policy(raw: str) -> dict[str, str]:
    """`CODY_TOOL_POLICY`, e.g. `run_command=sandboxed,write_file=allow`, as {tool: value}.

    Raises SettingError naming the variable when an item does not parse (the tool names are
    checked by the server, which knows its tools)."""
    policy: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name or value.lower() not in TOOL_POLICY_VALUES:
            raise SettingError(
                f"CODY_TOOL_POLICY item {item.strip()!r} is not TOOL=allow, TOOL=sandboxed, TOOL=ask or TOOL=deny "
                "(e.g. CODY_TOOL_POLICY=run_command=sandboxed,write_file=allow); fix it or unset it"
            )
        problem = policy_problem(name, value.lower())
        if problem is not None:
            raise SettingError(f"CODY_TOOL_POLICY item {item.strip()!r} {problem}; fix it or unset it")
        policy[name] = value.lower()
    return policy


SANDBOX_NETWORK_VALUES = ("block", "allow")


def sandbox_network_setting() -> str | None:
    """`CODY_SANDBOX_NETWORK`: "allow" lets sandboxed commands use the network, "block" (the
    default) keeps it off and cannot be loosened by a client's setting; None when unset."""
    raw = (os.environ.get("CODY_SANDBOX_NETWORK") or "").strip().lower()
    if not raw:
        return None
    if raw not in SANDBOX_NETWORK_VALUES:
        raise SettingError(
            f"CODY_SANDBOX_NETWORK={raw!r} is not allow or block (the network of sandboxed commands); "
            "fix it or unset it"
        )
    return raw


def _sandbox_network() -> str | None:
    try:
        return sandbox_network_setting()
    except SettingError:
        return "block"  # the problem is reported by ServerConfig.problem() on every run


MAX_SANDBOX_PROTECT = 256


def sandbox_protect_setting() -> tuple[str, ...]:
    """`CODY_SANDBOX_PROTECT`: comma-separated paths, relative to the workspace folder, that a
    sandboxed command may read but not write, beside the built-in ones (version-control metadata,
    `.envrc`, `.vscode/tasks.json`, …: server/tools/protect.py). It only adds: nothing removes
    a built-in path. Comes from the environment or the user's configuration file only."""
    raw = os.environ.get("CODY_SANDBOX_PROTECT") or ""
    paths = []
    for item in raw.split(","):
        path = item.strip().strip("/")
        if not path:
            continue
        parts = path.split("/")
        if item.strip().startswith(("/", "~")) or ".." in parts or "\0" in path:
            raise SettingError(
                f"CODY_SANDBOX_PROTECT item {item.strip()!r} is not a path inside the folder (relative, "
                "without '..'), e.g. CODY_SANDBOX_PROTECT=.husky,scripts/deploy.sh; fix it or unset it"
            )
        paths.append("/".join(p for p in parts if p not in ("", ".")))
    if len(paths) > MAX_SANDBOX_PROTECT:
        raise SettingError(f"CODY_SANDBOX_PROTECT names {len(paths)} paths; at most {MAX_SANDBOX_PROTECT}")
    return tuple(dict.fromkeys(p for p in paths if p))


def _sandbox_protect() -> tuple[str, ...]:
    try:
        return sandbox_protect_setting()
    except SettingError:
        return ()  # the problem is reported by ServerConfig.problem() on every run (no run goes on)


def _tool_policy() -> dict[str, str]:
    try:
        return parse_tool_policy(os.environ.get("CODY_TOOL_POLICY") or "")
    except SettingError:
        return {}  # the problem is reported by ServerConfig.problem() on every run


@dataclass(frozen=True)
class ContextSettings:
    """The context budget set by the environment; 0: the model's own (server/agent/budget.py's table)."""

    window: int = 0  # CODY_CONTEXT_WINDOW: tokens the model reads and writes in one request
    output_reserve: int = 0  # CODY_OUTPUT_RESERVE: of those, kept free for the answer

    @classmethod
    def from_env(cls) -> ContextSettings:
        window = _env_number("CODY_CONTEXT_WINDOW", 0)
        reserve = _env_number("CODY_OUTPUT_RESERVE", 0)
        if window and reserve >= window:
            raise SettingError(
                f"CODY_OUTPUT_RESERVE={reserve} must be smaller than CODY_CONTEXT_WINDOW={window}; fix one of them"
            )
        return cls(window, reserve)


IMAGE_MODES = ("auto", "on", "off")


def parse_images(name: str, raw: str) -> str:
    """`CODY_MODEL_IMAGES`: auto (by the model's name), on (1, true, yes) or off (0, false, no)."""
    value = raw.strip().lower()
    if value in ("", "auto"):
        return "auto"
    if value in ("1", "true", "yes", "on"):
        return "on"
    if value in ("0", "false", "no", "off"):
        return "off"
    raise SettingError(f"{name}={raw!r} is not auto, 1 or 0; fix it or unset it (default auto)")


@dataclass(frozen=True)
class EditorContext:
    """What the editor gives the model besides the prompt (protocol.md, "Attachments" and "Problems
    after an edit"): the bounds of a message's attachments, whether the model takes images, and how
    long the server waits for an edited file's problems. Set by the environment or the editor."""

    attachment_max_chars: int = 50_000  # characters of one attachment the model gets
    attachments_max_chars: int = 150_000  # of all the attachments of one message (at most half the context)
    image_max_bytes: int = 5 * (1 << 20)  # bytes of one image
    model_images: str = "auto"  # auto | on | off: whether the model takes images
    diagnostics_wait: float = 2.0  # seconds to wait for an edited file's problems to settle (0: never ask)

    @classmethod
    def from_env(cls) -> EditorContext:
        d = cls()
        return cls(
            attachment_max_chars=_env_number("CODY_ATTACHMENT_MAX_CHARS", d.attachment_max_chars, positive=True),
            attachments_max_chars=_env_number("CODY_ATTACHMENTS_MAX_CHARS", d.attachments_max_chars, positive=True),
            image_max_bytes=_env_number("CODY_IMAGE_MAX_BYTES", d.image_max_bytes, positive=True),
            model_images=parse_images("CODY_MODEL_IMAGES", os.environ.get("CODY_MODEL_IMAGES", "auto")),
            diagnostics_wait=_env_number("CODY_DIAGNOSTICS_WAIT", d.diagnostics_wait),
        )


# Environment variable → EditorContext field (the editor's setting is its camelCase name).
EDITOR_CONTEXT_VARIABLES = (
    ("CODY_ATTACHMENT_MAX_CHARS", "attachment_max_chars"),
    ("CODY_ATTACHMENTS_MAX_CHARS", "attachments_max_chars"),
    ("CODY_IMAGE_MAX_BYTES", "image_max_bytes"),
    ("CODY_MODEL_IMAGES", "model_images"),
    ("CODY_DIAGNOSTICS_WAIT", "diagnostics_wait"),
)


def _editor_context_from_env() -> EditorContext:
    try:
        return EditorContext.from_env()
    except SettingError:
        return EditorContext()  # the problem is reported by ServerConfig.problem() on every run


@dataclass(frozen=True)
class InstructionSettings:
    """Project instructions (AGENTS.md, …; server/agent/instructions.py): read before each run
    unless `CODY_INSTRUCTIONS=off`; the files given up front take at most `max_bytes` in all."""

    enabled: bool = True  # CODY_INSTRUCTIONS (on/off), or the editor's cody.instructions
    max_bytes: int = 32_768  # CODY_INSTRUCTIONS_MAX_BYTES, or the editor's cody.instructionsMaxBytes

    @classmethod
    def from_env(cls) -> InstructionSettings:
        enabled = _env_flag("CODY_INSTRUCTIONS", default=True)
        return cls(enabled, _env_number("CODY_INSTRUCTIONS_MAX_BYTES", cls.max_bytes, positive=True))


@dataclass(frozen=True)
class HookSettings:
    """Hooks (server/agent/hooks.py): commands the user (or, once approved, the workspace) runs at
    points of a run. `CODY_HOOKS=off` turns them all off; `CODY_HOOKS_FILES` (paths separated by
    `:`; the configuration file's `hooks_files` list) names more files to read besides the user's
    `hooks.json` and the folder's `.cody/hooks.json`. The environment and the configuration file
    only: a folder's (editor's) settings cannot add hooks."""

    enabled: bool = True  # CODY_HOOKS (on/off)
    files: tuple[str, ...] = ()  # CODY_HOOKS_FILES: relative paths are the folder's (a workspace file)

    @classmethod
    def from_env(cls) -> HookSettings:
        enabled = _env_flag("CODY_HOOKS", default=True)
        raw = os.environ.get("CODY_HOOKS_FILES") or ""
        return cls(enabled, tuple(part.strip() for part in raw.split(":") if part.strip()))


def _hooks_from_env() -> HookSettings:
    try:
        return HookSettings.from_env()
    except SettingError:
        return HookSettings(enabled=False)  # the problem is reported by ServerConfig.problem() on every run


@dataclass(frozen=True)
class SkillSettings:
    """Agent Skills (server/agent/skills.py): their names and descriptions in the system message
    (at most `max_bytes` in all) and the `skill` tool, unless `CODY_SKILLS=off`."""

    enabled: bool = True  # CODY_SKILLS (on/off)
    max_bytes: int = 16_384  # CODY_SKILLS_MAX_BYTES: the skills' list in the system message

    @classmethod
    def from_env(cls) -> SkillSettings:
        enabled = _env_flag("CODY_SKILLS", default=True)
        return cls(enabled, _env_number("CODY_SKILLS_MAX_BYTES", cls.max_bytes, positive=True))


def _skills_from_env() -> SkillSettings:
    try:
        return SkillSettings.from_env()
    except SettingError:
        return SkillSettings()  # the problem is reported by ServerConfig.problem() on every run


def _instructions_from_env() -> InstructionSettings:
    try:
        return InstructionSettings.from_env()
    except SettingError:
        return InstructionSettings()  # the problem is reported by ServerConfig.problem() on every run


def _context_from_env() -> ContextSettings:
    try:
        return ContextSettings.from_env()
    except SettingError:
        return ContextSettings()  # the problem is reported by ServerConfig.problem() on every run


def _tool_limits_from_env() -> ToolLimits:
    try:
        return ToolLimits.from_env()
    except SettingError:
        return ToolLimits()  # the problem is reported by ServerConfig.problem() on every run


def _checkpoints_from_env() -> CheckpointSettings:
    try:
        return CheckpointSettings.from_env()
    except SettingError:
        return CheckpointSettings()  # the problem is reported by ServerConfig.problem() on every run


def _allow_vcs_writes() -> bool:
    try:
        return _env_flag("CODY_ALLOW_VCS_WRITES")
    except SettingError:
        return False  # the problem is reported by ServerConfig.problem() on every run


def _limits_from_env() -> Limits:
    try:
        return Limits.from_env()
    except SettingError:
        return Limits()  # the problem is reported by ServerConfig.problem() on every run


def parse_private_hosts(name: str, raw: str) -> tuple[str, ...]:
    """`CODY_WEB_ALLOW_PRIVATE_HOSTS`: comma-separated `host` or `host:port` (an IPv6 address in
    brackets when it has a port: `[::1]:8080`), lower-cased, each checked."""
    hosts: list[str] = []
    for item in raw.split(","):
        entry = item.strip().lower().rstrip(".")
        if not entry:
            continue
        host, port = entry, ""
        if entry.startswith("["):
            host, _, rest = entry[1:].partition("]")
            if rest and not rest.startswith(":"):
                host = ""
            port = rest[1:]
        elif entry.count(":") == 1:
            host, port = entry.split(":")
        if not host or any(c.isspace() or c in "/@?#" for c in host) or (port and not _port(port)):
            raise SettingError(
                f"{name} item {item.strip()!r} is not host or host:port (e.g. localhost:8000, 10.0.0.5, "
                "[::1]:3000); fix it or unset it"
            )
        hosts.append(f"{host}:{int(port)}" if port else host)
    return tuple(hosts)


def _port(raw: str) -> bool:
    return raw.isdigit() and 0 < int(raw) < 65536


@dataclass(frozen=True)
class WebSettings:
    """web_fetch (server/tools/web.py): set by the environment or the configuration file only (a
    folder's settings could otherwise open the user's local services to a fetch)."""

    enabled: bool = True  # CODY_WEB: off (0) removes the tool
    max_bytes: int = 100_000  # CODY_WEB_FETCH_MAX_BYTES: text of a page given to the model
    max_download_bytes: int = 10 * MIB  # CODY_WEB_FETCH_MAX_DOWNLOAD_BYTES: the download stops there
    timeout: float = 30.0  # CODY_WEB_FETCH_TIMEOUT_SECONDS: a whole fetch, redirects included
    # CODY_WEB_ALLOW_PRIVATE_HOSTS: hosts (host or host:port) a fetch may reach at a loopback,
    # private, link-local or metadata address.
    allow_private_hosts: tuple[str, ...] = ()

    @classmethod
    def from_env(cls) -> WebSettings:
        d = cls()
        return cls(
            enabled=_env_flag("CODY_WEB", default=True),
            max_bytes=_env_number("CODY_WEB_FETCH_MAX_BYTES", d.max_bytes, positive=True),
            max_download_bytes=_env_number("CODY_WEB_FETCH_MAX_DOWNLOAD_BYTES", d.max_download_bytes, positive=True),
            timeout=_env_number("CODY_WEB_FETCH_TIMEOUT_SECONDS", d.timeout, positive=True),
            allow_private_hosts=parse_private_hosts(
                "CODY_WEB_ALLOW_PRIVATE_HOSTS", os.environ.get("CODY_WEB_ALLOW_PRIVATE_HOSTS") or ""
            ),
        )


def _web_from_env() -> WebSettings:
    try:
        return WebSettings.from_env()
    except SettingError:
        return WebSettings(enabled=False)  # the problem is reported by ServerConfig.problem() on every run


def _max_background_commands() -> int:
    try:
        return int(_env_number("CODY_MAX_BACKGROUND_COMMANDS", 8))
    except SettingError:
        return 8  # the problem is reported by ServerConfig.problem() on every run


# What is wrong with the configuration file (config_file.py) or the key it points to, in this
# process: config_file records it here each time it applies the file or its key, so that the
# settings below read it without going up to the file's reader, and every run fails saying so.
_file_problem: str | None = None


def file_problem() -> str | None:
    """What is wrong with the configuration file or its key in this process, if anything."""
    return _file_problem


def record_file_problem(problem: str | None) -> None:
    """What `file_problem` says from now on (config_file.apply and apply_key: their outcome's problem)."""
    global _file_problem
    _file_problem = problem


def _settings_problem() -> str | None:
    if file_problem() is not None:
        return file_problem()
    try:
        Limits.from_env()
        ToolLimits.from_env()
        CheckpointSettings.from_env()
        CodeNavSettings.from_env()
        _env_flag("CODY_ALLOW_VCS_WRITES")
        ContextSettings.from_env()
        EditorContext.from_env()
        InstructionSettings.from_env()
        HookSettings.from_env()
        SkillSettings.from_env()
        _env_number("CODY_TEXT_FLUSH_MS", 18.0)
        _env_number("CODY_MAX_QUEUED", 100)
        parse_tool_policy(os.environ.get("CODY_TOOL_POLICY") or "")
        sandbox_network_setting()
        sandbox_protect_setting()
        WebSettings.from_env()
        _env_number("CODY_MAX_BACKGROUND_COMMANDS", 8)
    except SettingError as exc:
        return str(exc)
    return None


def _max_queued() -> int:
    try:
        return int(_env_number("CODY_MAX_QUEUED", 100))
    except SettingError:
        return 100  # the problem is reported by ServerConfig.problem() on every run


def _flush_interval() -> float:
    try:
        return float(_env_number("CODY_TEXT_FLUSH_MS", 18.0)) / 1000
    except SettingError:
        return 0.018


@dataclass(frozen=True)
class ServerConfig:
    model: ModelConfig = field(default_factory=ModelConfig.from_env)
    limits: Limits = field(default_factory=_limits_from_env)
    tool_limits: ToolLimits = field(default_factory=_tool_limits_from_env)
    checkpoints: CheckpointSettings = field(default_factory=_checkpoints_from_env)
    # The code_nav tool's bounds and the language servers' idle time.
    code_nav: CodeNavSettings = field(default_factory=_code_nav_from_env)
    # Let write_file/edit_file write under .git/, .hg/, .svn/, .jj/ (CODY_ALLOW_VCS_WRITES=1; the
    # environment only: a folder's settings cannot turn it on).
    allow_vcs_writes: bool = field(default_factory=_allow_vcs_writes)
    # The model's context window and output reserve, when the environment sets them.
    context: ContextSettings = field(default_factory=_context_from_env)
    # Attachments' bounds, images, and waiting for an edited file's problems.
    editor_context: EditorContext = field(default_factory=_editor_context_from_env)
    # Project instructions: on or off, and their cap.
    instructions: InstructionSettings = field(default_factory=_instructions_from_env)
    # Hooks (on or off, the extra files) and skills (on or off, their list's cap).
    hooks: HookSettings = field(default_factory=_hooks_from_env)
    skills: SkillSettings = field(default_factory=_skills_from_env)
    db: Path = field(default_factory=db_path)
    # Text deltas are coalesced into at most one notification per window.
    text_flush_interval: float = field(default_factory=_flush_interval)
    # "auto": ask the client before mutating tools when it says it can answer
    # (initialize capabilities.experimental.cody.permissions); "ask": always; "never": never.
    approvals: str = field(default_factory=_approvals_mode)
    # Per tool: "allow" (never ask), "sandboxed" (run_command: never ask, run in the sandbox), "ask"
    # (ask when approvals are on) or "deny" (never run);
    # tools not named keep their default (permissions.py).
    tool_policy: dict[str, str] = field(default_factory=_tool_policy)
    # Messages that may wait for a busy session (CODY_MAX_QUEUED; the environment only).
    max_queued: int = field(default_factory=_max_queued)
    # The network of sandboxed commands: "allow", "block", or None (unset: blocked, unless a
    # user-level setting of the client allows it; never a workspace's).
    sandbox_network: str | None = field(default_factory=_sandbox_network)
    # Paths (relative to the folder) a sandboxed command may not write, beside the built-in ones
    # (CODY_SANDBOX_PROTECT: the environment or the user's configuration file; it only adds).
    sandbox_protect: tuple[str, ...] = field(default_factory=_sandbox_protect)
    # web_fetch: on or off, its bounds, the hosts it may reach at private addresses.
    web: WebSettings = field(default_factory=_web_from_env)
    # Background commands running at once in a session (CODY_MAX_BACKGROUND_COMMANDS; 0: none).
    max_background_commands: int = field(default_factory=_max_background_commands)
    # A setting of the environment that does not parse: every run fails saying so.
    settings_problem: str | None = field(default_factory=_settings_problem)
    # The editor's `cody.mcpServers` (server/mcp/definitions.py reads it); the environment's
    # MCP servers are read from their files when a run starts.
    mcp_servers: dict[str, Any] | None = None

    def problem(self, *, model: str | None = None) -> str | None:
        """Why a run cannot start with these settings, or None."""
        return self.settings_problem or self.model.problem(model=model)
