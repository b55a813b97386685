"""What a PreToolUse hook's word does in the permission check (core/permissions.py `hook=`): its
`allow` skips the question only where one would be asked, never against a `deny` policy or rule,
the sandbox, or a command asking to leave it; its `ask` asks even where the policy or a rule
would allow. The wire shows it whole in tests/e2e/test_hooks.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cody_lsp import landlock
from cody_lsp.protocol.wire import PermissionParams
from cody_lsp.server.core.permissions import POLICY_DENIED, RULE_DENIED, NoApprover, Permissions, ToolPolicy
from cody_lsp.server.store.connection import now
from cody_lsp.server.store.database import Store
from cody_lsp.server.store.records import RuleRecord
from cody_lsp.server.tools import sandbox
from cody_lsp.server.tools.sandbox import SANDBOXED

pytestmark = pytest.mark.timeout(20)

RUN = SimpleNamespace(run_id="run_1", session_id="ses_a", folder="/w")
A_SANDBOX = landlock.Support(7, None, True, True)
NO_SANDBOX = landlock.Support(0, "no Landlock (simulated)", True, False)
CMD = {"command": "make test"}


class Asker:
    def __init__(self, answer: Any = "allow", *, nobody: bool = False):
        self.answer = answer
        self.nobody = nobody
        self.asked: list[PermissionParams] = []

    async def __call__(self, _run: Any, params: PermissionParams) -> Any:
        if self.nobody:
            raise NoApprover
        self.asked.append(params)
        return self.answer


@pytest.fixture
async def store(tmp_path: Path):
    opened = await Store.open(tmp_path / "sessions.db")
    await opened.sessions.create("ses_a", None, "m", "/w")
    yield opened
    await opened.close()


def gate(store: Store, policy: dict[str, str], asker: Asker) -> Permissions:
    return Permissions(store, ToolPolicy(policy), asker, lambda: not asker.nobody)


async def test_allow_skips_the_question_that_would_be_asked(store, monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: A_SANDBOX)
    asker = Asker("deny")
    permissions = gate(store, {}, asker)
    assert await permissions.check(RUN, "c1", "write_file", {"path": "a"}, hook="allow") is None
    assert await permissions.check(RUN, "c2", "run_command", CMD, hook="allow") is None
    assert asker.asked == []
    assert await permissions.check(RUN, "c3", "write_file", {"path": "a"}) is not None  # asked without it
    assert len(asker.asked) == 1


async def test_allow_never_beats_a_deny_policy_a_deny_rule_or_the_sandbox(store, monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: A_SANDBOX)
    asker = Asker("deny")
    permissions = gate(store, {"edit_file": "deny", "run_command": "sandboxed"}, asker)
    assert await permissions.check(RUN, "c1", "edit_file", {"path": "a"}, hook="allow") == POLICY_DENIED.format(
        name="edit_file"
    )
    assert await permissions.check(RUN, "c2", "run_command", CMD, hook="allow") is SANDBOXED  # still sandboxed
    out = {"command": "pip install x", "sandbox": False, "reason": "needs ~/.cache"}
    assert await permissions.check(RUN, "c3", "run_command", out, hook="allow") is not None  # asked, denied
    assert [a.tool_name for a in asker.asked] == ["run_command"]
    refusal = RuleRecord("rule_x", "write_file", "session", "/w", now(), "ses_a", decision="deny")
    await store.rules.add(refusal)
    assert await permissions.check(RUN, "c4", "write_file", {"path": "a"}, hook="allow") == RULE_DENIED.format(
        name="write_file"
    )


async def test_allow_without_a_sandbox_still_asks_for_a_sandboxed_command(store, monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: NO_SANDBOX)
    asker = Asker("allow")
    permissions = gate(store, {"run_command": "sandboxed"}, asker)
    assert await permissions.check(RUN, "c1", "run_command", CMD, hook="allow") is None
    assert len(asker.asked) == 1  # the person decided, not the hook


async def test_ask_asks_where_the_policy_or_a_rule_would_allow(store, monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: A_SANDBOX)
    asker = Asker("allow")
    permissions = gate(store, {"write_file": "allow", "run_command": "sandboxed"}, asker)
    assert await permissions.check(RUN, "c1", "write_file", {"path": "a"}, hook="ask") is None
    assert await permissions.check(RUN, "c2", "run_command", CMD, hook="ask") is None
    allowing = RuleRecord("rule_y", "edit_file", "folder", "/w", now())
    await store.rules.add(allowing)
    assert await permissions.check(RUN, "c3", "edit_file", {"path": "a"}) is None  # the rule, unasked
    assert await permissions.check(RUN, "c4", "edit_file", {"path": "a"}, hook="ask") is None
    assert [a.tool_name for a in asker.asked] == ["write_file", "run_command", "edit_file"]
    nobody = gate(store, {"write_file": "allow"}, Asker(nobody=True))
    refused = await nobody.check(RUN, "c5", "write_file", {"path": "a"}, hook="ask")
    assert refused is not None and "cannot ask" in refused
