"""Settings from the environment: where the database lives, limits, approvals."""

from __future__ import annotations

from pathlib import Path

import pytest

from cody_lsp.config import Limits, ModelConfig, ServerConfig, SettingError, db_path


def test_database_path_follows_cody_db_then_xdg_state_home(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("CODY_DB", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert db_path() == tmp_path / ".local" / "state" / "cody-lsp" / "sessions.db"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert db_path() == tmp_path / "state" / "cody-lsp" / "sessions.db"
    monkeypatch.setenv("CODY_DB", str(tmp_path / "mine.db"))
    assert db_path() == tmp_path / "mine.db"


def test_limits_read_the_environment(monkeypatch):
    monkeypatch.setenv("CODY_MAX_STEPS", "7")
    monkeypatch.setenv("CODY_STALL_TIMEOUT", "2.5")
    limits = Limits.from_env()
    assert (limits.max_steps, limits.stall_timeout, limits.retry_attempts) == (7, 2.5, Limits().retry_attempts)
    assert ServerConfig().settings_problem is None


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("CODY_RETRY_ATTEMPTS", "many", "is not a whole number"),
        ("CODY_MAX_STEPS", "2.5", "is not a whole number"),
        ("CODY_STALL_TIMEOUT", "nan", "finite number"),
        ("CODY_STALL_TIMEOUT", "-1", "finite number"),
        ("CODY_TEXT_FLUSH_MS", "fast", "is not a number"),
    ],
)
def test_a_number_that_does_not_parse_is_an_error_naming_the_variable(monkeypatch, name, value, says):
    monkeypatch.setenv(name, value)
    config = ServerConfig()
    problem = config.problem(model="m")
    assert problem is not None and problem.startswith(f"{name}={value!r}") and says in problem
    if name != "CODY_TEXT_FLUSH_MS":
        with pytest.raises(SettingError, match=name):
            Limits.from_env()


def test_a_base_url_without_a_scheme_is_a_configuration_problem(monkeypatch):
    config = ModelConfig("m", "api.openai.com/v1", "k")
    assert "CODY_MODEL_BASE_URL='api.openai.com/v1' is not an http(s) URL" in (config.problem() or "")
    assert ModelConfig("m", "http://127.0.0.1:9/v1", "k").problem() is None
    assert ModelConfig(None, "http://127.0.0.1:9/v1", "k").problem(model="session-model") is None
    assert (ModelConfig(None, None, "k").problem() or "").startswith("CODY_MODEL and CODY_MODEL_BASE_URL are not set")


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
