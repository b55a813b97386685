"""Settings from the environment: where the database lives, limits, approvals."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.config import Limits, ModelConfig, ServerConfig, db_path


def test_database_path_follows_cody_db_then_xdg_state_home(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("CODY_DB", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert db_path() == tmp_path / ".local" / "state" / "cody-lsp" / "sessions.db"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert db_path() == tmp_path / "state" / "cody-lsp" / "sessions.db"
    monkeypatch.setenv("CODY_DB", str(tmp_path / "mine.db"))
    assert db_path() == tmp_path / "mine.db"


def test_limits_read_the_environment_and_ignore_garbage(monkeypatch):
    monkeypatch.setenv("CODY_MAX_STEPS", "7")
    monkeypatch.setenv("CODY_STALL_TIMEOUT", "2.5")
    monkeypatch.setenv("CODY_RETRY_ATTEMPTS", "many")
    limits = Limits.from_env()
    assert (limits.max_steps, limits.stall_timeout, limits.retry_attempts) == (7, 2.5, Limits().retry_attempts)


def test_model_config_names_what_is_missing(monkeypatch):
    for name in ("CODY_MODEL", "CODY_MODEL_BASE_URL", "CODY_MODEL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODY_MODEL", "m")
    assert ModelConfig.from_env().missing() == ["CODY_MODEL_BASE_URL", "CODY_MODEL_API_KEY"]


def test_an_unknown_approval_mode_falls_back_to_auto(monkeypatch, caplog):
    monkeypatch.setenv("CODY_APPROVALS", "Ask")
    assert ServerConfig().approvals == "ask"
    monkeypatch.setenv("CODY_APPROVALS", "sometimes")
    assert ServerConfig().approvals == "auto"
    assert "CODY_APPROVALS" in caplog.text
