"""Settings from the editor over the environment's, and which folder a run is for."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from cody_lsp.config import POLICY_STRICTNESS, TOOL_POLICY_VALUES, ContextSettings, Limits, ModelConfig, ServerConfig
from cody_lsp.protocol.wire import InvalidParams, Thinking, ToolCall, ToolResultChunk, UsageUpdate
from cody_lsp.server.core.events import RunEvent
from cody_lsp.server.lsp.configuration import KEYS, Settings, resolve
from cody_lsp.server.lsp.progress import activity
from cody_lsp.server.lsp.workspace_folders import WorkspaceFolders

from ..protocol.test_protocol_doc import _plain, load_doc

BASE = ServerConfig(
    model=ModelConfig("env-model", "https://env.example/v1", "sk-env-key"),
    limits=Limits(max_steps=20),
    context=ContextSettings(),
    db=Path("/tmp/unused.db"),
    tool_policy={"run_command": "deny"},
    settings_problem=None,
)

STRICTNESS = sorted(TOOL_POLICY_VALUES, key=POLICY_STRICTNESS.__getitem__)  # loosest first
MCP_STRICTNESS = [v for v in STRICTNESS if v != "sandboxed"]  # sandboxed: run_command only


def test_folder_over_initialization_options_over_the_environment():
    config, warnings = resolve(
        BASE,
        [
            ("initializationOptions", {"model": "init-model", "maxSteps": 5, "stallTimeout": 12.5}),
            ("the configuration of /w", {"model": "folder-model", "retryAttempts": 0, "apiKey": "sk-not-this"}),
        ],
    )
    assert warnings == []
    assert config.model == ModelConfig("folder-model", "https://env.example/v1", "sk-env-key")
    assert (config.limits.max_steps, config.limits.retry_attempts, config.limits.stall_timeout) == (5, 0, 12.5)
    assert config.tool_policy == {"run_command": "deny"} and config.db == BASE.db


def test_instruction_settings_turn_them_off_and_set_their_cap():
    config, warnings = resolve(
        BASE,
        [
            ("initializationOptions", {"instructions": False, "instructionsMaxBytes": 1000}),
            ("the configuration of /w", {"instructions": "off", "instructionsMaxBytes": 0}),
        ],
    )
    assert (config.instructions.enabled, config.instructions.max_bytes) == (False, 1000)
    assert len(warnings) == 2
    assert any("cody.instructions = 'off' (the configuration of /w) must be true or false" in w for w in warnings)
    assert any("cody.instructionsMaxBytes = 0" in w and "> 0" in w for w in warnings)
    assert resolve(BASE, [])[0].instructions == BASE.instructions


def test_an_invalid_value_is_reported_and_the_value_below_applies():
    config, warnings = resolve(
        BASE,
        [
            ("initializationOptions", {"maxSteps": 7, "baseUrl": "https://init.example/v1"}),
            ("the configuration of /w", {"maxSteps": 2.5, "baseUrl": "ftp://nope", "model": "", "stallTimeout": -1}),
        ],
    )
    assert (config.limits.max_steps, config.model.base_url, config.model.model) == (
        7,
        "https://init.example/v1",
        "env-model",
    )
    assert config.limits.stall_timeout == BASE.limits.stall_timeout
    assert len(warnings) == 4
    assert any("cody.maxSteps = 2.5 (the configuration of /w) must be a whole number" in w for w in warnings)
    assert any("cody.baseUrl" in w and "http(s) URL" in w for w in warnings)
    assert any("cody.stallTimeout" in w and "≥ 0" in w for w in warnings)


def test_tool_policy_is_merged_tool_by_tool():
    config, warnings = resolve(
        BASE,
        [
            ("initializationOptions", {"toolPolicy": {"write_file": "allow"}}),
            ("the configuration of /w", {"toolPolicy": {"run_command": "ASK", "rm_rf": "allow", "edit_file": "maybe"}}),
        ],
    )
    assert config.tool_policy == {"run_command": "deny", "write_file": "allow"}  # the environment's deny stays
    assert any("toolPolicy.run_command = 'ask'" in w and "looser than 'deny'" in w for w in warnings)
    assert any("'rm_rf'" in w and "not a tool" in w for w in warnings)
    assert any("cody.toolPolicy.edit_file = 'maybe'" in w for w in warnings)
    _config, warnings = resolve(BASE, [("initializationOptions", {"toolPolicy": "allow"})])
    assert warnings and "cody.toolPolicy" in warnings[0]


@pytest.mark.parametrize("env", [None, *STRICTNESS])
@pytest.mark.parametrize("client", [None, *STRICTNESS])
@pytest.mark.parametrize("folder", [None, *STRICTNESS])
def test_a_tool_gets_the_strictest_policy_any_source_sets(env, client, folder):
    base = dataclasses.replace(BASE, tool_policy={} if env is None else {"run_command": env})
    layers = [
        ("initializationOptions", {"toolPolicy": {} if client is None else {"run_command": client}}),
        ("the configuration of /w", {"toolPolicy": {} if folder is None else {"run_command": folder}}),
    ]
    config, warnings = resolve(base, layers)
    given = [v for v in (env, client, folder) if v is not None]
    expected = max(given, key=STRICTNESS.index) if given else None
    assert config.tool_policy.get("run_command") == expected
    looser = [v for i, v in enumerate(given) if any(STRICTNESS.index(w) > STRICTNESS.index(v) for w in given[:i])]
    assert len(warnings) == len(looser)  # each value looser than one before it is reported


@pytest.mark.parametrize("env_key", ["mcp__srv__*", "mcp__srv__x"])
@pytest.mark.parametrize("client_key", ["mcp__srv__*", "mcp__srv__x"])
@pytest.mark.parametrize("env", MCP_STRICTNESS)
@pytest.mark.parametrize("client", MCP_STRICTNESS)
def test_an_mcp_tool_gets_the_strictest_policy_whether_named_or_by_its_server(env_key, client_key, env, client):
    from cody_lsp.server.core.permissions import ToolPolicy

    base = dataclasses.replace(BASE, tool_policy={env_key: env})
    config, warnings = resolve(base, [("initializationOptions", {"toolPolicy": {client_key: client}})])
    decided = ToolPolicy(config.tool_policy).decision("mcp__srv__x")
    assert decided == max(env, client, key=MCP_STRICTNESS.index)
    assert ToolPolicy(config.tool_policy).decision("mcp__other__x") == "ask"
    looser = MCP_STRICTNESS.index(client) < MCP_STRICTNESS.index(env) and (
        client_key == env_key or client_key == "mcp__srv__x"
    )
    assert len(warnings) == int(looser)


def test_sandboxed_is_for_run_command_only_and_said_once_however_many_tools():
    names = {
        "mcp__srv__*": "sandboxed",
        "mcp__srv__x": "sandboxed",
        "write_file": "sandboxed",
        "run_command": "sandboxed",
    }
    base = dataclasses.replace(BASE, tool_policy={})
    config, warnings = resolve(base, [("initializationOptions", {"toolPolicy": names})])
    assert config.tool_policy == {"run_command": "sandboxed"}
    assert len(warnings) == 1 and "which only run_command can be" in warnings[0] and "write_file" in warnings[0]


def test_within_one_source_an_mcp_tools_own_entry_wins_over_its_servers():
    from cody_lsp.server.core.permissions import ToolPolicy

    config, warnings = resolve(
        BASE, [("initializationOptions", {"toolPolicy": {"mcp__srv__*": "deny", "mcp__srv__read": "allow"}})]
    )
    policy = ToolPolicy(config.tool_policy)
    assert (policy.decision("mcp__srv__read"), policy.decision("mcp__srv__write"), warnings) == ("allow", "deny", [])


def test_context_window_and_reserve():
    config, warnings = resolve(BASE, [("x", {"contextWindow": 8000, "outputReserve": 1000})])
    assert config.context == ContextSettings(8000, 1000) and not warnings
    config, warnings = resolve(BASE, [("x", {"contextWindow": 8000, "outputReserve": 9000})])
    assert config.context == ContextSettings(8000, 0) and "must be smaller" in warnings[0]


def test_settings_that_are_not_an_object_are_ignored():
    config, warnings = resolve(BASE, [("initializationOptions", ["model", "x"]), ("folder", None)])
    assert config == dataclasses.replace(BASE) and len(warnings) == 1


async def test_a_folder_is_asked_once_until_the_settings_change():
    asked: list[str] = []
    shown: list[str] = []

    async def fetch(uri: str) -> object:
        asked.append(uri)
        return [{"model": f"model-{len(asked)}", "maxSteps": "x"}]

    settings = Settings(BASE, shown.append)
    settings.fetch = fetch
    first = await settings.for_folder("/w")
    again = await settings.for_folder("/w")
    assert first.model.model == again.model.model == "model-1" and asked == ["file:///w"]
    assert len(shown) == 1 and "cody.maxSteps" in shown[0]  # shown once
    settings.changed({"cody": {"model": "pushed"}})  # this client can be asked: pushed settings are not used
    assert (await settings.for_folder("/w")).model.model == "model-2" and len(shown) == 2


async def test_a_client_that_cannot_be_asked_pushes_its_settings():
    settings = Settings(BASE, lambda _text: None)
    settings.client = {"model": "init"}
    assert (await settings.for_folder("/w")).model.model == "init"
    settings.changed({"cody": {"model": "pushed"}})
    assert (await settings.for_folder("/w")).model.model == "pushed"
    settings.changed({"other": 1})
    assert (await settings.for_folder("/w")).model.model == "pushed"


async def test_a_failed_fetch_falls_back_and_asks_again():
    calls = 0

    async def fetch(_uri: str) -> object:
        nonlocal calls
        calls += 1
        raise RuntimeError("no answer")

    settings = Settings(BASE, lambda _text: None)
    settings.fetch = fetch
    assert (await settings.for_folder("/w")).model.model == "env-model"
    await settings.for_folder("/w")
    assert calls == 2


def test_protocol_md_lists_every_setting():
    table = load_doc().table("Setting")
    assert [_plain(row[0]) for row in table.rows] == list(KEYS)


# ---------------------------------------------------------------------- roots


def test_a_run_is_for_the_folder_of_its_document(tmp_path: Path):
    a, b, inner = tmp_path / "a", tmp_path / "b", tmp_path / "a" / "inner"
    roots = WorkspaceFolders(lambda: [str(a), str(b), str(inner)])
    assert roots.pick((b / "x.py").as_uri()) == str(b)
    assert roots.pick((inner / "y.py").as_uri()) == str(inner)  # the innermost folder
    with pytest.raises(InvalidParams) as info:
        roots.pick((tmp_path / "elsewhere.py").as_uri())
    assert "'activeDocument' is in none of the 3 workspace folders" in str(info.value)
    with pytest.raises(InvalidParams) as info:
        roots.pick(None)
    assert str(a) in str(info.value) and str(b) in str(info.value)
    assert WorkspaceFolders(lambda: [str(a)]).pick("untitled:Untitled-1") == str(a)  # the only folder
    with pytest.raises(InvalidParams, match="has not opened a workspace folder"):
        WorkspaceFolders(list).pick(None)


def test_a_folder_opened_through_a_symlink(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    roots = WorkspaceFolders(lambda: [str(tmp_path / "alias"), str(tmp_path / "other")])
    assert roots.pick((real / "x.py").as_uri()) == str(tmp_path / "alias")


def _event(payload: object) -> RunEvent:
    return RunEvent("run_1", "ses_1", 0, payload)


def test_progress_messages():
    assert activity(_event(ToolCall("c1", "run_command", {}))) == "running run_command"
    assert activity(_event(Thinking("hmm"))) == activity(_event(ToolResultChunk("c1", "x", True, ""))) == "thinking"
    assert activity(_event(UsageUpdate(1, 1, 1, 10))) is None


def test_tool_limits_are_settings_and_must_be_greater_than_zero():
    config, warnings = resolve(
        BASE,
        [
            ("initializationOptions", {"commandTimeout": 10, "maxWriteBytes": 4096}),
            ("the configuration of /w", {"toolDeadline": 2.5, "toolMaxScanEntries": 0, "maxWriteBytes": 1.5}),
        ],
    )
    limits = config.tool_limits
    assert (limits.command_timeout, limits.deadline, limits.max_write_bytes) == (10, 2.5, 4096)
    assert limits.max_scan_entries == BASE.tool_limits.max_scan_entries
    assert len(warnings) == 2
    assert any("cody.toolMaxScanEntries = 0" in w and "> 0" in w for w in warnings)
    assert any("cody.maxWriteBytes = 1.5" in w and "whole number" in w for w in warnings)


def test_vcs_writes_are_not_a_setting():
    config, warnings = resolve(BASE, [("the configuration of /w", {"allowVcsWrites": True})])
    assert config.allow_vcs_writes is False and warnings == []  # unknown keys are ignored


def test_the_extension_offers_every_setting_and_no_other():
    """editor_client/package.json contributes each server setting (its own settings besides)."""
    package = json.loads((Path(__file__).parents[3] / "editor_client" / "package.json").read_text())
    contributed = {key.removeprefix("cody.") for key in package["contributes"]["configuration"]["properties"]}
    # The extension's own settings, as editor_client/src/vscode/server.ts lists them (never sent to the server).
    server_ts = (Path(__file__).parents[3] / "editor_client" / "src" / "vscode" / "server.ts").read_text()
    listed = re.search(r"CLIENT_ONLY_SETTINGS = new Set\(\[([^\]]*)\]\)", server_ts)
    assert listed is not None
    client_only = set(re.findall(r"'([A-Za-z]+)'", listed.group(1)))
    assert {"pythonPath", "modelApiKey"} <= client_only
    assert contributed - client_only == set(KEYS)
