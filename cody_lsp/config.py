"""Settings read from the environment (names follow the Cody SDK).

Nothing here imports openai: the server must start fast and say clearly what is
missing when a run needs the model.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def db_path() -> Path:
    """`CODY_DB`, else `$XDG_STATE_HOME/cody-lsp/sessions.db` (default ~/.local/state)."""
    explicit = os.environ.get("CODY_DB")
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "cody-lsp" / "sessions.db"


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

    def missing(self) -> list[str]:
        """Names of the variables a run needs and that are not set."""
        names = []
        if not self.model:
            names.append("CODY_MODEL")
        if not self.base_url:
            names.append("CODY_MODEL_BASE_URL")
        if not self.api_key:
            names.append("CODY_MODEL_API_KEY")
        return names


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

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(
            max_steps=_env_int("CODY_MAX_STEPS", d.max_steps),
            max_total_tokens=_env_int("CODY_MAX_TOTAL_TOKENS", d.max_total_tokens),
            max_repeated_tool_calls=_env_int("CODY_MAX_REPEATED_TOOL_CALLS", d.max_repeated_tool_calls),
            max_consecutive_tool_failures=_env_int(
                "CODY_MAX_CONSECUTIVE_TOOL_FAILURES", d.max_consecutive_tool_failures
            ),
            retry_attempts=_env_int("CODY_RETRY_ATTEMPTS", d.retry_attempts),
            retry_base_delay=_env_float("CODY_RETRY_BASE_DELAY", d.retry_base_delay),
            retry_max_delay=_env_float("CODY_RETRY_MAX_DELAY", d.retry_max_delay),
            stall_timeout=_env_float("CODY_STALL_TIMEOUT", d.stall_timeout),
            connect_timeout=_env_float("CODY_CONNECT_TIMEOUT", d.connect_timeout),
        )


APPROVAL_MODES = ("auto", "ask", "never")


def _approvals_mode() -> str:
    raw = os.environ.get("CODY_APPROVALS", "auto").strip().lower()
    if raw not in APPROVAL_MODES:
        logging.getLogger(__name__).warning(
            "CODY_APPROVALS=%r is not one of %s; using 'auto'", raw, ", ".join(APPROVAL_MODES)
        )
        return "auto"
    return raw


@dataclass(frozen=True)
class ServerConfig:
    model: ModelConfig = field(default_factory=ModelConfig.from_env)
    limits: Limits = field(default_factory=Limits.from_env)
    db: Path = field(default_factory=db_path)
    # Text deltas are coalesced into at most one notification per window.
    text_flush_interval: float = field(default_factory=lambda: _env_float("CODY_TEXT_FLUSH_MS", 18.0) / 1000)
    # "auto": ask the client before mutating tools when it says it can answer
    # (initialize capabilities.experimental.cody.permissions); "ask": always; "never": never.
    approvals: str = field(default_factory=lambda: _approvals_mode())
