"""The policy `sandboxed` and its rules, in the permission check (core/permissions.py), the
settings (config.py, lsp/configuration.py) and the store — the decisions one by one; the wire
shows them whole in tests/e2e/test_sandbox.py."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cody_lsp import landlock
from cody_lsp.config import SettingError, parse_tool_policy, stricter
from cody_lsp.protocol.capabilities import cody_capabilities
from cody_lsp.protocol.wire import PermissionParams, PermissionResult, SandboxCapability, parse
from cody_lsp.server.core import permissions as perms
from cody_lsp.server.core.permissions import SANDBOXED_RULE, Permissions, ToolPolicy
from cody_lsp.server.lsp.configuration import resolve
from cody_lsp.server.store.database import Store
from cody_lsp.server.store.schema import MIGRATIONS
from cody_lsp.server.tools import sandbox
from cody_lsp.server.tools.sandbox import SANDBOXED

from ..lsp.test_configuration import BASE

RUN = SimpleNamespace(run_id="run_1", session_id="", folder="/w")
NO_SANDBOX = landlock.Support(0, "no Landlock (simulated)", True, False)
A_SANDBOX = landlock.Support(7, None, True, True)


class Asker:
    """Answers permission requests from a list, recording them."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.asked: list[PermissionParams] = []

    async def __call__(self, _run: Any, params: PermissionParams) -> Any:
        self.asked.append(params)
        answer = self.answers.pop(0)
        return await answer if asyncio.isfuture(answer) else answer


@pytest.fixture
async def store(tmp_path: Path):
    opened = await Store.open(tmp_path / "sessions.db")
    yield opened
    await opened.close()


def gate(store: Store, policy: str, asker: Asker | None, *, can_ask: bool = True) -> Permissions:
    return Permissions(store, ToolPolicy({"run_command": policy}), asker, lambda: can_ask)


def with_sandbox(monkeypatch: pytest.MonkeyPatch, support: landlock.Support) -> None:
    monkeypatch.setattr(sandbox, "available", lambda: support)


CMD = {"command": "make test"}
OUT = {"command": "pip install x", "sandbox": False, "reason": "pip writes ~/.cache"}


async def test_sandboxed_runs_in_the_sandbox_unasked(store, monkeypatch) -> None:
    with_sandbox(monkeypatch, A_SANDBOX)
    asker = Asker()
    assert await gate(store, "sandboxed", asker).check(RUN, "c1", "run_command", CMD) is SANDBOXED
    assert asker.asked == []


async def test_without_a_sandbox_sandboxed_asks_or_refuses(store, monkeypatch) -> None:
    with_sandbox(monkeypatch, NO_SANDBOX)
    asker = Asker("allow")
    assert await gate(store, "sandboxed", asker).check(RUN, "c1", "run_command", CMD) is None
    assert [p.options.sandboxed_rule for p in asker.asked if p.options] == [None]
    refused = await gate(store, "sandboxed", Asker(), can_ask=False).check(RUN, "c1", "run_command", CMD)
    assert isinstance(refused, str) and "there is no sandbox here" in refused
    # A sandboxed rule cannot be kept where there is no sandbox: that call does not run.
    chose = Asker(PermissionResult("allow_always", "folder", sandboxed=True))
    refused = await gate(store, "ask", chose).check(RUN, "c1", "run_command", CMD)
    assert isinstance(refused, str) and "no sandbox here" in refused
    assert await store.rules.listed() == []


async def test_leaving_the_sandbox_is_always_asked_and_never_kept(store, monkeypatch) -> None:
    with_sandbox(monkeypatch, A_SANDBOX)
    for policy in ("allow", "sandboxed", "ask"):
        asker = Asker(PermissionResult("allow_always", "folder"))
        assert await gate(store, policy, asker).check(RUN, "c1", "run_command", OUT) is None
        (params,) = asker.asked
        assert params.unsandboxed is not None and params.unsandboxed.reason == "pip writes ~/.cache"
        assert params.options is not None and params.options.outcomes == ["allow", "deny"]
    assert await store.rules.listed() == []  # its answers are for that call only
    denied = await gate(store, "deny", Asker()).check(RUN, "c1", "run_command", OUT)
    assert isinstance(denied, str) and "deny" in denied
    nobody = await gate(store, "sandboxed", Asker(), can_ask=False).check(RUN, "c1", "run_command", OUT)
    assert isinstance(nobody, str) and "outside the sandbox" in nobody


async def test_a_sandboxed_rule_answers_for_the_folder_and_an_unsandboxed_one_wins(store, monkeypatch) -> None:
    with_sandbox(monkeypatch, A_SANDBOX)
    asker = Asker(PermissionResult("allow_always", "folder", sandboxed=True))
    check = gate(store, "ask", asker).check
    assert await check(RUN, "c1", "run_command", CMD) is SANDBOXED
    assert asker.asked[0].options is not None and asker.asked[0].options.sandboxed_rule == SANDBOXED_RULE
    (rule,) = await store.rules.listed()
    assert (rule.scope, rule.sandboxed, rule.command_prefix) == ("folder", True, None)
    assert await check(RUN, "c2", "run_command", {"command": "rm -rf build"}) is SANDBOXED
    assert len(asker.asked) == 1
    # ... but it never answers a call that asks to leave the sandbox.
    asker.answers.append("allow")
    assert await check(RUN, "c3", "run_command", OUT) is None and len(asker.asked) == 2
    # A rule that runs `make` as it is wins over the sandboxed one for what it covers.
    asker.answers.append(PermissionResult("allow_always", "folder", "make"))
    with_sandbox(monkeypatch, NO_SANDBOX)  # (so that the sandboxed rule does not answer first)
    assert await check(RUN, "c4", "run_command", CMD) is None
    with_sandbox(monkeypatch, A_SANDBOX)
    assert await check(RUN, "c5", "run_command", {"command": "make lint"}) is None
    assert await check(RUN, "c6", "run_command", {"command": "pytest"}) is SANDBOXED


async def test_a_sandboxed_rule_answers_the_requests_pending_in_the_sandbox(store, monkeypatch) -> None:
    with_sandbox(monkeypatch, A_SANDBOX)
    loop = asyncio.get_running_loop()
    answers = {call: loop.create_future() for call in ("c1", "c2", "c3")}
    asked: list[str] = []

    async def asker(_run: Any, params: PermissionParams) -> Any:
        asked.append(params.tool_call_id)
        return await asyncio.shield(answers[params.tool_call_id])

    check = Permissions(store, ToolPolicy({}), asker, lambda: True).check
    pending = asyncio.ensure_future(check(RUN, "c1", "run_command", {"command": "ls"}))
    leaving = asyncio.ensure_future(check(RUN, "c2", "run_command", OUT))
    answering = asyncio.ensure_future(check(RUN, "c3", "run_command", CMD))
    while len(asked) < 3:
        await asyncio.sleep(0.01)
    answers["c3"].set_result(PermissionResult("allow_always", "folder", sandboxed=True))
    assert await answering is SANDBOXED
    assert await pending is SANDBOXED  # answered by the new rule, in the sandbox
    assert not leaving.done()  # still asked: no rule answers it
    answers["c2"].set_result("deny")
    assert isinstance(await leaving, str)


def test_policy_values_and_their_order() -> None:
    assert parse_tool_policy("run_command=SANDBOXED,write_file=allow") == {
        "run_command": "sandboxed",
        "write_file": "allow",
    }
    with pytest.raises(SettingError, match="only run_command can be"):
        parse_tool_policy("write_file=sandboxed")
    assert stricter("allow", "sandboxed") == "sandboxed" and stricter("sandboxed", "ask") == "ask"
    assert stricter("deny", "sandboxed") == "deny"
    assert ToolPolicy({"run_command": "sandboxed"}).decision("run_command") == "sandboxed"


def test_settings_take_sandboxed_and_the_network_setting() -> None:
    config, warnings = resolve(
        dataclasses.replace(BASE, tool_policy={}),  # nothing stricter from the environment
        [
            ("initializationOptions", {"toolPolicy": {"run_command": "sandboxed"}, "sandboxNetwork": "allow"}),
            ("the configuration of /w", {"toolPolicy": {"edit_file": "sandboxed"}, "sandboxNetwork": "sometimes"}),
        ],
    )
    assert config.tool_policy == {"run_command": "sandboxed"}
    assert config.sandbox_network == "allow"
    assert any("toolPolicy.edit_file = 'sandboxed'" in w and "only run_command" in w for w in warnings)
    assert any("sandboxNetwork = 'sometimes'" in w for w in warnings)
    assert sandbox.settings_for(config).network is True
    # The environment's explicit "block" is not loosened by a client.
    blocked, _ = resolve(dataclasses.replace(BASE, sandbox_network="block"), [("x", {"sandboxNetwork": "allow"})])
    assert blocked.sandbox_network == "block" and sandbox.settings_for(blocked).network is False
    hidden = sandbox.settings_for(BASE).hidden
    assert str(BASE.db) in hidden and f"{BASE.db}-wal" in hidden and f"{BASE.db}-shm" in hidden


def test_the_capability_fits_its_wire_type() -> None:
    capability = parse(SandboxCapability, cody_capabilities()["sandbox"], "sandbox")
    assert capability.available is landlock.support().available
    assert (capability.reason is None) is capability.available


# MIGRATIONS[11] takes the schema from 11 to 12: permission_rules.sandboxed (after the attachments).
SANDBOXED_MIGRATION = 11


async def test_rules_of_an_older_database_are_not_sandboxed(tmp_path: Path) -> None:
    assert "ADD COLUMN sandboxed" in MIGRATIONS[SANDBOXED_MIGRATION]
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        for step in MIGRATIONS[:SANDBOXED_MIGRATION]:
            conn.executescript(step)
        conn.execute(
            "INSERT INTO permission_rules (id, tool_name, scope, workspace_folder, created_at) "
            "VALUES ('rule_old', 'run_command', 'folder', '/w', '2025-01-01T00:00:00Z')"
        )
        conn.execute(f"PRAGMA user_version = {SANDBOXED_MIGRATION}")
    store = await Store.open(path)
    try:
        (rule,) = await store.rules.listed()
        assert rule.id == "rule_old" and rule.sandboxed is None
    finally:
        await store.close()


def test_the_offered_choice_is_the_answer_to_send() -> None:
    options = perms.options_for("run_command", CMD, sandboxed=True)
    assert options.sandboxed_rule == SANDBOXED_RULE
    choice = SANDBOXED_RULE
    assert PermissionResult(choice.outcome, choice.scope, sandboxed=choice.sandboxed).sandboxed is True
    assert perms.options_for("write_file", {"path": "x"}, sandboxed=True).sandboxed_rule is None
    assert perms.options_for("run_command", CMD, sandboxed=False).sandboxed_rule is None
