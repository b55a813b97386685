"""The configuration file (config_file.py): what it may say, what it refuses, and that the
environment wins over it; the API key from a file only its owner reads, or from a command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cody_lsp import config, config_file
from cody_lsp.config_file import ConfigFileError

from .protocol.test_protocol_doc import load_doc


def write(home: Path, text: str) -> Path:
    path = home / "cody-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "config"


def test_the_file_gives_settings_by_their_variables_names(home: Path):
    write(
        home,
        'model = "gpt-x"\nbase_url = "http://h/v1"\nmax_steps = 7\nallow_vcs_writes = true\n'
        'stall_timeout = 2.5\ntool_policy = { run_command = "ask", write_file = "allow" }\n',
    )
    settings = config_file.read({"XDG_CONFIG_HOME": str(home)})
    assert settings.values == {
        "CODY_MODEL": "gpt-x",
        "CODY_MODEL_BASE_URL": "http://h/v1",
        "CODY_MAX_STEPS": "7",
        "CODY_ALLOW_VCS_WRITES": "1",
        "CODY_STALL_TIMEOUT": "2.5",
        "CODY_TOOL_POLICY": "run_command=ask,write_file=allow",
    }


def test_the_path_follows_xdg_config_home_then_home(tmp_path: Path):
    assert config_file.config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/cody-lsp/config.toml")
    assert config_file.config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "cody-lsp" / "config.toml"


def test_no_file_is_no_settings(home: Path):
    settings = config_file.read({"XDG_CONFIG_HOME": str(home)})
    assert not settings.exists and settings.values == {} and settings.key_command is None


@pytest.mark.parametrize(
    "text, says",
    [
        ("modle = 'x'", "unknown setting 'modle': did you mean model?"),
        ("baseurl = 'x'", "unknown setting 'baseurl': did you mean base_url?"),
        ("base-url = 'x'", "unknown setting 'base-url': did you mean base_url?"),
        ("colour = 'x'", "unknown setting 'colour' (`cody-lsp config` lists the settings)"),
        ("api_key = 'sk-1'", "the API key is not kept in the configuration file: give api_key_file"),
        ("model = ", "not valid TOML: "),
        ("model = ['a']", "'model' must be a string, a number or true/false, not list"),
        ("api_key_file = 'k'\napi_key_command = 'echo k'", "give api_key_command or api_key_file, not both"),
        ("api_key_command = ''", "'api_key_command' must be a non-empty string"),
    ],
)
def test_a_wrong_file_is_an_error_naming_the_file_and_what_to_fix(home: Path, text: str, says: str):
    path = write(home, text)
    with pytest.raises(ConfigFileError) as caught:
        config_file.read({"XDG_CONFIG_HOME": str(home)})
    assert str(caught.value).startswith(f"{path}: ") and says in str(caught.value)


def test_a_toml_error_says_the_line(home: Path):
    write(home, 'model = "a"\nbase_url = \n')
    with pytest.raises(ConfigFileError, match=r"line 2"):
        config_file.read({"XDG_CONFIG_HOME": str(home)})


def test_the_environment_wins_over_the_file(home: Path):
    write(home, 'model = "from-file"\nmax_steps = 9\napprovals = "ask"\n')
    environ = {"XDG_CONFIG_HOME": str(home), "CODY_MODEL": "from-env", "CODY_APPROVALS": ""}
    applied = config_file.apply(environ)
    assert environ["CODY_MODEL"] == "from-env" and environ["CODY_MAX_STEPS"] == "9"
    assert environ["CODY_APPROVALS"] == "ask"  # set but empty counts as not set
    assert sorted(applied.set_from_file) == ["CODY_APPROVALS", "CODY_MAX_STEPS"]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_file_others_can_read_is_refused_saying_how_to_fix_it(tmp_path: Path, mode: int):
    key = tmp_path / "key"
    key.write_text("sk-file-key\n")
    key.chmod(mode)
    with pytest.raises(ConfigFileError) as caught:
        config_file.read_key_file(key)
    assert f"can be read by other users (mode {mode:04o})" in str(caught.value)
    assert f"chmod 600 {key}" in str(caught.value) and "sk-file-key" not in str(caught.value)


def test_a_key_file_of_its_owner_only_gives_the_key(tmp_path: Path, home: Path):
    key = tmp_path / "key"
    key.write_text("sk-file-key\n")
    key.chmod(0o600)
    assert config_file.read_key_file(key) == "sk-file-key"
    write(home, f"api_key_file = '{key}'")
    environ = {"XDG_CONFIG_HOME": str(home)}
    config_file.apply(environ)
    applied = config_file.apply_key(environ)
    assert environ["CODY_MODEL_API_KEY"] == "sk-file-key" and applied.key_source == "api_key_file"


def test_a_key_file_path_is_relative_to_the_config_folder(home: Path):
    path = write(home, "api_key_file = 'secret/key'")
    assert config_file.read({"XDG_CONFIG_HOME": str(home)}).key_file == path.parent / "secret" / "key"


def test_a_key_command_gives_the_key_and_its_failures_never_show_its_output(tmp_path: Path):
    assert config_file.run_key_command("printf 'sk-cmd-key\\n'") == "sk-cmd-key"
    with pytest.raises(ConfigFileError) as caught:
        config_file.run_key_command("printf 'sk-%s\\n' leaked; printf 'sk-%s\\n' leaked >&2; exit 3")
    assert "failed (exit code 3)" in str(caught.value) and "sk-leaked" not in str(caught.value)
    with pytest.raises(ConfigFileError, match="more than one line"):
        config_file.run_key_command("printf 'a\\nb\\n'")
    with pytest.raises(ConfigFileError, match="gives nothing"):
        config_file.run_key_command("true")


def test_the_key_in_the_environment_wins_and_no_command_runs(home: Path, tmp_path: Path):
    marker = tmp_path / "ran"
    write(home, f"api_key_command = 'touch {marker}; echo sk-cmd'")
    environ = {"XDG_CONFIG_HOME": str(home), "CODY_MODEL_API_KEY": "sk-env"}
    config_file.apply(environ)
    config_file.apply_key(environ)
    assert environ["CODY_MODEL_API_KEY"] == "sk-env" and not marker.exists()


def test_what_is_wrong_with_the_file_or_its_key_fails_every_run_until_it_is_fixed(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    """apply and apply_key record their problem in config.py, where the server's settings read it."""
    monkeypatch.setattr(config_file, "applied", None)
    monkeypatch.setattr(config, "_file_problem", None)
    environ = {"XDG_CONFIG_HOME": str(home)}
    write(home, "max_steps = [1]\n")
    problem = config_file.apply(environ).problem
    assert problem is not None and config.file_problem() == problem
    assert config.ServerConfig().settings_problem == problem
    write(home, "api_key_command = 'exit 3'\n")
    config_file.apply(environ)
    assert config.file_problem() is None
    key_problem = config_file.apply_key(environ).problem
    assert key_problem is not None and "exit code 3" in key_problem and config.file_problem() == key_problem


def test_every_documented_setting_can_be_given_by_the_file():
    """protocol.md's Configuration table: each variable is a file setting, or is not one for a reason."""
    not_in_the_file = {
        "CODY_MODEL_API_KEY": "a secret: api_key_file or api_key_command instead",
        "XDG_STATE_HOME": "not cody-lsp's",
        "XDG_CONFIG_HOME": "where the file is",
        "CODY_MAX_MESSAGE_BYTES": "read before the file, to answer initialize at once",
        "CODY_MAX_HEADER_BYTES": "read before the file, to answer initialize at once",
        "CODY_MAX_UNREAD_BYTES": "read before the file, to answer initialize at once",
        "CODY_LOG_WIRE": "a debugging switch for one process",
        "CODY_TCP_TOKEN": "a secret: --token-file instead",
        "XDG_RUNTIME_DIR": "not cody-lsp's",
    }
    documented = {re.sub(r"[`\s]", "", row[0]) for row in load_doc().table("Variable").rows}
    for variable in documented - set(not_in_the_file):
        assert variable in config_file.SETTINGS, f"{variable} is documented but the file cannot give it"
    assert set(config_file.SETTINGS) <= documented


def test_hooks_and_skills_settings_from_the_file(home: Path, monkeypatch: pytest.MonkeyPatch):
    write(home, 'hooks_files = ["~/.claude/settings.json", ".claude/settings.json"]\nskills = false\n')
    settings = config_file.read({"XDG_CONFIG_HOME": str(home)})
    assert settings.values == {"CODY_HOOKS_FILES": "~/.claude/settings.json:.claude/settings.json", "CODY_SKILLS": "0"}
    monkeypatch.setenv("CODY_HOOKS_FILES", settings.values["CODY_HOOKS_FILES"])
    monkeypatch.setenv("CODY_SKILLS", "0")
    monkeypatch.setenv("CODY_HOOKS", "off")
    loaded = config.ServerConfig()
    assert loaded.hooks == config.HookSettings(False, ("~/.claude/settings.json", ".claude/settings.json"))
    assert loaded.skills.enabled is False and loaded.settings_problem is None
    monkeypatch.setenv("CODY_HOOKS", "maybe")
    assert "CODY_HOOKS='maybe'" in (config.ServerConfig().settings_problem or "")
    write(home, 'hooks_files = ["a:b"]\n')
    with pytest.raises(ConfigFileError, match="'hooks_files' must be"):
        config_file.read({"XDG_CONFIG_HOME": str(home)})
