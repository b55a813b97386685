"""The configuration file through the commands: `run` and the server take the model, the
endpoint and the key from it (the environment wins), a key file others can read is refused,
a wrong file fails every run saying what to fix, and `cody-lsp config` says where each
setting came from without ever showing the key."""

from __future__ import annotations

import os
from pathlib import Path

from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .cli_support import cli_env, cody

KEY = "sk-from-the-key-command-0123456789"
KEY_COMMAND = "printf 'sk-%s' from-the-key-command-0123456789"  # (the key itself is not in the command)


def config_env(provider, db_path: Path, text: str, **extra: str) -> dict[str, str]:
    """The CLI's environment without the model's variables, and a config file saying `text`."""
    env = {k: v for k, v in cli_env(provider, db_path, **extra).items() if not k.startswith("CODY_MODEL")}
    path = Path(env["XDG_CONFIG_HOME"]) / "cody-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return env


async def test_run_takes_the_model_endpoint_and_key_from_the_file(provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="Configured by the file."), Reply(text="The environment's model."))
    text = f'model = "file-model"\nbase_url = "{provider.base_url}"\napi_key_command = "{KEY_COMMAND}"\n'
    env = config_env(provider, db_path, text, CODY_LOG_LEVEL="DEBUG")
    code, out, err = await cody(["run", "hello"], env, workspace)
    assert code == 0, err
    assert "Configured by the file." in out
    assert provider.requests[0]["model"] == "file-model"
    assert provider.request_headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in out + err  # a key command's output is a secret: never logged
    # The environment wins over the file.
    code, out, err = await cody(["run", "hello"], {**env, "CODY_MODEL": "env-model"}, workspace)
    assert code == 0, err
    assert provider.requests[1]["model"] == "env-model"


async def test_a_key_file_others_can_read_is_refused_with_what_to_do(provider, db_path: Path, workspace: Path):
    key = db_path.parent / "key"
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(KEY + "\n")
    key.chmod(0o644)
    text = f'model = "m"\nbase_url = "{provider.base_url}"\napi_key_file = "{key}"\n'
    env = config_env(provider, db_path, text)
    for command in (["run", "hello"], ["chat"]):
        code, out, err = await cody(command, env, workspace, stdin=b"")
        assert code == 2
        assert (
            f"can be read by other users (mode 0644): it is not used; make it yours only with `chmod 600 {key}`" in err
        )
        assert KEY not in out + err
    assert provider.requests == []
    key.chmod(0o600)
    provider.add(Reply(text="Now it is used."))
    code, out, err = await cody(["run", "hello"], env, workspace)
    assert code == 0, err
    assert provider.request_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_a_wrong_file_fails_the_servers_runs_naming_it(wire_factory, provider, db_path: Path, workspace: Path):
    env = server_env(provider, db_path)
    path = Path(env["XDG_CONFIG_HOME"]) / "cody-lsp" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("max_stpes = 3\n")
    wire = await wire_factory(env=env)
    result, chunks = await wire.run("hello")
    assert result["status"] == "error" and result["error"]["code"] == "config"
    assert result["error"]["message"].startswith(f"{path}: unknown setting 'max_stpes'")
    assert provider.requests == []
    code, _, err = await cody(["sessions"], env, workspace)
    assert code == 2 and "unknown setting 'max_stpes'" in err


async def test_the_server_an_editor_starts_takes_the_file_too(wire_factory, provider, db_path: Path):
    text = f'model = "file-model"\nbase_url = "{provider.base_url}"\napi_key_command = "{KEY_COMMAND}"\nmax_steps = 1\n'
    env = config_env(provider, db_path, text)
    provider.add(Reply(text="Served."))
    wire = await wire_factory(env=env)
    result, _ = await wire.run("hello")
    assert result["status"] == "done", result
    assert provider.requests[0]["model"] == "file-model"
    assert provider.request_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_config_shows_each_setting_and_where_it_came_from_never_the_key(provider, db_path: Path, workspace):
    text = f'model = "file-model"\nbase_url = "{provider.base_url}"\napi_key_command = "{KEY_COMMAND}"\nmax_steps = 7\n'
    env = config_env(provider, db_path, text, CODY_APPROVALS="ask")
    code, out, err = await cody(["config"], env, workspace)
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
    assert "file-model" in rows["model"] and rows["model"].endswith("config file")
    assert rows["max_steps"].split()[1] == "7" and rows["max_steps"].endswith("config file")
    assert rows["approvals"].split()[1] == "ask" and rows["approvals"].endswith("environment (CODY_APPROVALS)")
    assert rows["retry_attempts"].split()[1] == "4" and rows["retry_attempts"].endswith("default")
    assert f"(hidden, {len(KEY)} characters)" in out and "api_key_command" in out
    assert KEY not in out + err
    assert (
        out.splitlines()[0]
        == f"configuration file: {Path(env['XDG_CONFIG_HOME']) / 'cody-lsp' / 'config.toml'} (found)"
    )
    # The key from the environment: said so, still hidden.
    code, out, _ = await cody(["config"], {**env, "CODY_MODEL_API_KEY": KEY}, workspace)
    assert code == 0 and "environment (CODY_MODEL_API_KEY)" in out and KEY not in out
    # A broken key command: the problem, exit 1.
    config_env(provider, db_path, 'api_key_command = "exit 5"\n')
    code, out, _ = await cody(["config"], env, workspace)
    assert code == 1 and "api_key_command `exit 5` failed (exit code 5)" in out
    assert os.environ.get("CODY_MODEL_API_KEY") != KEY


async def test_config_lists_the_language_servers_and_says_what_is_wrong(provider, db_path: Path, workspace: Path):
    text = (
        'model = "m"\nlanguage_server_idle_seconds = 60\n'
        '[language_servers.pylsp]\ncommand = ["pylsp"]\nextensions = [".py"]\n'
        '[language_servers.broken]\ncommand = []\nextensions = [".rs"]\n'
    )
    env = config_env(provider, db_path, text)
    (workspace / ".cody").mkdir()
    (workspace / ".cody" / "config.toml").write_text(
        '[language_servers.repo]\ncommand = ["repo-ls"]\nextensions = [".ts"]\n'
    )
    code, out, err = await cody(["config"], env, workspace)
    assert code == 0, err
    assert "language_server_idle_seconds" in out and "60" in out
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "pylsp pylsp .py config file" in rows
    assert any(row.startswith("repo repo-ls .ts workspace") and "approval" in row for row in rows)
    assert "[language_servers.broken] 'command' must be a non-empty list" in out


async def test_config_with_a_broken_file_says_what_to_fix_first(provider, db_path: Path, workspace: Path):
    env = config_env(provider, db_path, 'baseurl = "http://example.test/v1"\nmodel = "m"\n')
    code, out, _ = await cody(["config"], env, workspace)
    lines = out.splitlines()
    path = Path(env["XDG_CONFIG_HOME"]) / "cody-lsp" / "config.toml"
    assert code == 1 and lines[0] == f"configuration file: {path} (found)"
    assert lines[1] == f"✗ {path}: unknown setting 'baseurl': did you mean base_url?"  # before the table
    assert "the file is not used until it is fixed" in lines[2] and lines[3].split() == ["setting", "value", "from"]
    assert "the settings are" not in out  # not all of their names
