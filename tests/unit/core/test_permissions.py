"""Who may run a tool: command prefixes, the tool policy, rules that last, and pending requests.

The wire tests (tests/e2e/test_permission_rules.py) show the same through the real server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cody_lsp.config import SettingError, parse_tool_policy
from cody_lsp.protocol.wire import PermissionParams, PermissionResult
from cody_lsp.server.core.permissions import (
    POLICY_DENIED,
    RULE_DENIED,
    USER_DENIED,
    Permissions,
    ToolPolicy,
    options_for,
    prefix_covers,
    suggest_prefix,
)
from cody_lsp.server.store.database import Store

from ..harness import answer, calls, close_stores, make_harness

pytestmark = pytest.mark.timeout(20)


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


# ------------------------------------------------------------------------------ prefixes


@pytest.mark.parametrize(
    "command",
    ["npm test", "npm test -- -k x", "npm  test  --watch=false", "'npm' test", 'npm test "a b"', "npm test\t-q"],
)
def test_a_prefix_covers_commands_that_start_with_its_whole_words(command: str):
    assert prefix_covers("npm test", command)


@pytest.mark.parametrize(
    "command",
    [
        "npm testing",
        "npm",
        "npx test",
        "npm test; rm -rf x",
        "npm test && rm -rf x",
        "npm test || rm -rf x",
        "npm test | sh",
        "npm test & rm -rf x",
        "npm test `rm -rf x`",
        "npm test $(rm -rf x)",
        "npm test\nrm -rf x",
        "npm test\rrm -rf x",
        "npm test > ~/.bashrc",
        "npm test < /etc/passwd",
        "npm test ';'",  # even quoted
        "npm test 'unbalanced",
    ],
)
def test_a_prefix_never_covers_another_command_or_a_compound_one(command: str):
    assert not prefix_covers("npm test", command)


@pytest.mark.parametrize("prefix", ["", "   ", "npm test;", "a && b", "x | y", "'open"])
def test_a_prefix_that_is_empty_or_compound_covers_nothing(prefix: str):
    assert not prefix_covers(prefix, "npm test")


@given(
    st.text(alphabet="abc -'\"", max_size=12),
    st.sampled_from([";", "&&", "||", "|", "&", "`", "$(", "\n", "\r", ">", "<"]),
    st.text(max_size=12),
)
def test_no_compound_command_is_ever_covered(head: str, operator: str, tail: str):
    command = f"npm test {head}{operator}{tail}"
    assert not prefix_covers("npm test", command)
    assert not prefix_covers("npm", command)


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("npm test -- -k x", "npm test"),
        ("pytest -q tests", "pytest"),
        ("git status", "git status"),
        ("ls", "ls"),
        ("npm test; rm -rf x", None),
        ("", None),
        # Never a prefix that is only a destructive program's name (or one that also covers `-rf ~`).
        ("rm -f a b", None),
        ("rm build", None),
        ("/bin/rm -rf dist", None),
        ("mv a b", None),
        ("dd if=/dev/zero of=x", None),
        ("chmod -R 777 .", None),
        ("curl https://example.com/install.sh", None),
        ("sudo make install", None),
        ("xargs rm", None),
        ("find . -delete", None),
        ("git push origin main", None),
        ("git reset --hard", None),
        ("npm publish", None),
        # A bare shell or interpreter runs anything; with a script, the script is the prefix.
        ("sh -c 'echo hi'", None),
        ("python -c 'print(1)'", None),
        ("python3 -m pytest", None),
        ("python manage.py test", "python manage.py"),
        ("bash scripts/check.sh", None),  # the script is no subcommand word: only `bash` would be left
        ("git log --oneline", "git log"),
        ("make test", "make test"),
    ],
)
def test_the_suggested_prefix(command: str, suggested: str | None):
    assert suggest_prefix(command) == suggested
    assert options_for("run_command", {"command": command}).command_prefix == suggested
    assert options_for("write_file", {"path": "a"}).command_prefix is None


# ------------------------------------------------------------------------------ policy


def test_the_default_policy_asks_before_tools_that_change_things():
    policy = ToolPolicy()
    assert {name: policy.decision(name) for name in ("read_file", "grep", "write_file", "run_command")} == {
        "read_file": "allow",
        "grep": "allow",
        "write_file": "ask",
        "run_command": "ask",
    }
    overridden = ToolPolicy({"run_command": "deny", "write_file": "allow"})
    assert (overridden.decision("run_command"), overridden.decision("write_file")) == ("deny", "allow")
    assert overridden.problem is None
    assert "run_comand" in (ToolPolicy({"run_comand": "deny"}).problem or "")


def test_cody_tool_policy_parses_or_names_what_is_wrong():
    assert parse_tool_policy(" run_command=ask , write_file=ALLOW,") == {"run_command": "ask", "write_file": "allow"}
    assert parse_tool_policy("") == {}
    for bad in ("run_command", "run_command=maybe", "=allow"):
        with pytest.raises(SettingError, match="CODY_TOOL_POLICY"):
            parse_tool_policy(bad)


# ------------------------------------------------------------------------------ the gate


class Run:
    """What Permissions reads of a run."""

    def __init__(self, session_id: str, folder: str, run_id: str = "run_1"):
        self.run_id, self.session_id, self.folder = run_id, session_id, folder


class Client:
    """A scripted client: answers in order, or waits for `release` when told to hold."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.asked: list[PermissionParams] = []
        self.withdrawn: list[PermissionParams] = []

    async def __call__(self, _run: Any, params: PermissionParams) -> Any:
        self.asked.append(params)
        reply = self.answers.pop(0)
        if isinstance(reply, asyncio.Event):
            try:
                await reply.wait()
            except asyncio.CancelledError:
                self.withdrawn.append(params)
                raise
            return "deny"
        return reply


async def gate(tmp_path: Path, client: Client, policy: dict[str, str] | None = None) -> tuple[Permissions, Store]:
    store = await Store.open(tmp_path / "rules.db")
    from ..harness import OPEN_STORES

    OPEN_STORES.append(store)
    for session_id, folder in (("ses_a", "/w"), ("ses_b", "/w"), ("ses_c", "/other")):
        await store.sessions.create(session_id, None, "m", folder)
    return Permissions(store, ToolPolicy(policy), client), store


async def test_deny_never_asks_and_allow_never_asks(tmp_path: Path):
    client = Client()
    permissions, _ = await gate(tmp_path, client, {"run_command": "deny", "write_file": "allow"})
    run = Run("ses_a", "/w")
    assert await permissions.check(run, "c1", "run_command", {"command": "ls"}) == POLICY_DENIED.format(
        name="run_command"
    )
    assert await permissions.check(run, "c2", "write_file", {"path": "a", "content": ""}) is None
    assert await permissions.check(run, "c3", "read_file", {"path": "a"}) is None
    assert client.asked == []


async def test_without_a_client_to_ask_the_policy_answers(tmp_path: Path):
    store = await Store.open(tmp_path / "rules.db")
    from ..harness import OPEN_STORES

    OPEN_STORES.append(store)
    permissions = Permissions(store, ToolPolicy({"edit_file": "deny"}), None)
    run = Run("ses_a", "/w")
    assert await permissions.check(run, "c1", "run_command", {"command": "ls"}) is None
    assert await permissions.check(run, "c2", "edit_file", {"path": "a"}) is not None


async def test_allow_always_is_a_session_rule_by_default_and_folder_when_asked(tmp_path: Path):
    client = Client("allow_always", PermissionResult("allow_always", scope="folder"), "deny")
    permissions, store = await gate(tmp_path, client)
    a, b, c = Run("ses_a", "/w"), Run("ses_b", "/w"), Run("ses_c", "/other")
    assert await permissions.check(a, "c1", "write_file", {"path": "x"}) is None
    assert await permissions.check(a, "c2", "write_file", {"path": "y"}) is None  # the session rule
    assert await permissions.check(b, "c3", "write_file", {"path": "y"}) is None  # asked: folder rule
    assert len(client.asked) == 2
    assert await permissions.check(a, "c4", "write_file", {"path": "z"}) is None
    assert await permissions.check(b, "c5", "write_file", {"path": "z"}) is None
    # Another folder's session is not covered: asked, and denied.
    assert await permissions.check(c, "c6", "write_file", {"path": "z"}) == USER_DENIED.format(name="write_file")
    rules = await store.rules.listed()
    assert [(r.scope, r.session_id, r.workspace_folder) for r in rules] == [
        ("session", "ses_a", "/w"),
        ("folder", None, "/w"),
    ]
    assert client.asked[0].options.scopes == ["session", "folder"]


async def test_a_prefix_rule_covers_only_what_it_names(tmp_path: Path):
    client = Client(PermissionResult("allow_always", command_prefix="npm test"), "deny", "deny")
    permissions, store = await gate(tmp_path, client)
    run = Run("ses_a", "/w")
    assert await permissions.check(run, "c1", "run_command", {"command": "npm test"}) is None
    assert await permissions.check(run, "c2", "run_command", {"command": "npm test -- -k x"}) is None
    assert await permissions.check(run, "c3", "run_command", {"command": "npm test; rm -rf x"}) is not None
    assert await permissions.check(run, "c4", "run_command", {"command": "npm install"}) is not None
    assert [p.args["command"] for p in client.asked] == ["npm test", "npm test; rm -rf x", "npm install"]
    assert client.asked[1].options.command_prefix is None  # compound: no prefix to offer
    (rule,) = await store.rules.listed()
    assert rule.command_prefix == "npm test"


async def test_a_prefix_that_cannot_cover_a_command_allows_once_and_keeps_no_rule(tmp_path: Path):
    client = Client(PermissionResult("allow_always", command_prefix="npm test; rm"), "allow")
    permissions, store = await gate(tmp_path, client)
    run = Run("ses_a", "/w")
    assert await permissions.check(run, "c1", "run_command", {"command": "npm test"}) is None
    assert await store.rules.listed() == []
    assert await permissions.check(run, "c2", "run_command", {"command": "npm test"}) is None
    assert len(client.asked) == 2


async def test_revoking_a_rule_makes_the_next_call_ask_again(tmp_path: Path):
    client = Client("allow_always", "deny")
    permissions, store = await gate(tmp_path, client)
    run = Run("ses_a", "/w")
    await permissions.check(run, "c1", "edit_file", {"path": "a"})
    (rule,) = await permissions.list_rules(folder="/w", session_id="ses_a")
    assert await permissions.revoke(rule.id) is True and await permissions.revoke(rule.id) is False
    assert await permissions.check(run, "c2", "edit_file", {"path": "a"}) is not None
    assert len(client.asked) == 2


async def test_a_new_rule_answers_the_pending_requests_it_covers_and_withdraws_them(tmp_path: Path):
    holds = [asyncio.Event() for _ in range(3)]
    rule = PermissionResult("allow_always", scope="folder", command_prefix="npm test")
    client = Client(*holds, rule)
    permissions, _ = await gate(tmp_path, client)
    b, c = Run("ses_b", "/w"), Run("ses_c", "/other")
    pending = [
        asyncio.ensure_future(permissions.check(b, "c2", "run_command", {"command": "npm test -- -k b"})),
        asyncio.ensure_future(permissions.check(c, "c3", "run_command", {"command": "npm test -- -k c"})),
        asyncio.ensure_future(permissions.check(b, "c4", "run_command", {"command": "npm test && rm -rf x"})),
    ]
    for _ in range(200):
        if len(client.asked) == 3:
            break
        await asyncio.sleep(0.005)
    assert await permissions.check(Run("ses_a", "/w"), "c1", "run_command", {"command": "npm test"}) is None
    assert await pending[0] is None  # covered by the new folder rule: answered by it
    assert [p.tool_call_id for p in client.withdrawn] == ["c2"]  # and its prompt withdrawn
    # Another folder's request and a compound command stay with the client.
    await asyncio.sleep(0.01)
    assert not pending[1].done() and not pending[2].done()
    for hold in holds:
        hold.set()
    assert await pending[1] is not None and await pending[2] is not None


async def test_a_refusal_rule_refuses_without_asking_wins_over_an_allow_and_answers_the_pending(tmp_path: Path):
    """`refuse` (ACP's reject_always) keeps a session rule that refuses the tool without asking —
    even with approvals off and over a rule that allows it — and refuses the pending requests it
    covers (withdrawn), not another session's."""
    hold = asyncio.Event()
    client = Client(PermissionResult("allow_always", scope="folder"), hold, asyncio.Event())
    permissions, store = await gate(tmp_path, client)
    a, b = Run("ses_a", "/w"), Run("ses_b", "/w")
    edit = {"path": "a", "old_string": "x", "new_string": "y"}
    assert await permissions.check(a, "c1", "write_file", {"path": "a", "content": ""}) is None  # folder rule
    pending = asyncio.ensure_future(permissions.check(a, "c2", "edit_file", edit))
    other = asyncio.ensure_future(permissions.check(b, "c3", "edit_file", edit))
    for _ in range(200):
        if len(client.asked) == 3:
            break
        await asyncio.sleep(0.005)
    await permissions.refuse(client.asked[1])
    assert await pending == USER_DENIED.format(name="edit_file")
    assert [p.tool_call_id for p in client.withdrawn] == ["c2"]
    assert not other.done()
    asked = len(client.asked)
    assert await permissions.check(a, "c4", "edit_file", edit) == RULE_DENIED.format(name="edit_file")
    assert len(client.asked) == asked  # not asked
    # It wins over the folder's allow rule, and holds with nobody to ask.
    await permissions.refuse(PermissionParams("run_2", "ses_a", "c5", "write_file", {}, "/w"))
    assert await permissions.check(a, "c6", "write_file", {"path": "a", "content": ""}) == RULE_DENIED.format(
        name="write_file"
    )
    nobody = Permissions(store, ToolPolicy(), None)
    assert await nobody.check(a, "c7", "edit_file", edit) is not None
    assert await nobody.check(b, "c8", "write_file", {"path": "a", "content": ""}) is None  # ses_b: the folder rule
    rules = await permissions.list_rules(folder="/w", session_id="ses_a")
    assert sorted((r.tool_name, r.scope, r.decision) for r in rules) == [
        ("edit_file", "session", "deny"),
        ("write_file", "folder", None),
        ("write_file", "session", "deny"),
    ]
    other.cancel()
    hold.set()


async def test_rules_survive_a_restart_of_the_store(tmp_path: Path):
    client = Client(PermissionResult("allow_always", scope="folder"))
    permissions, store = await gate(tmp_path, client)
    await permissions.check(Run("ses_a", "/w"), "c1", "write_file", {"path": "a"})
    await store.close()
    from ..harness import OPEN_STORES

    OPEN_STORES.remove(store)
    reopened = await Store.open(tmp_path / "rules.db")
    OPEN_STORES.append(reopened)
    again = Permissions(reopened, ToolPolicy(), Client())
    assert await again.check(Run("ses_b", "/w"), "c2", "write_file", {"path": "b"}) is None


async def test_deleting_a_session_forgets_its_rules_but_not_its_folders(tmp_path: Path):
    client = Client("allow_always", PermissionResult("allow_always", scope="folder"))
    permissions, store = await gate(tmp_path, client)
    run = Run("ses_a", "/w")
    await permissions.check(run, "c1", "write_file", {"path": "a"})
    await permissions.check(run, "c2", "edit_file", {"path": "a"})
    assert len(await store.rules.listed(folder="/w")) == 2
    await store.sessions.delete("ses_a")
    assert [r.tool_name for r in await store.rules.listed(folder="/w")] == ["edit_file"]


async def test_the_run_manager_enforces_the_policy_whatever_the_model_asks(tmp_path: Path):
    asked: list[str] = []

    async def ask(_run: Any, params: PermissionParams) -> str:
        asked.append(params.tool_name)
        return "allow"

    h = await make_harness(tmp_path, ask=ask, tool_policy={"run_command": "deny", "read_file": "deny"})
    h.steps = [
        calls(
            ("run_command", '{"command": "ls"}'),
            ("read_file", '{"path": "a"}'),
            ("write_file", '{"path": "b", "content": "x"}'),
        ),
        answer("ok"),
    ]
    result = await h.run()
    results = [c for c in h.chunks(result.run_id) if c["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [False, False, True]
    assert "policy" in results[0]["content"]
    assert asked == ["write_file"] and h.tool_calls == [("write_file", {"path": "b", "content": "x"})]


async def test_a_tool_policy_naming_no_tool_fails_every_run_saying_so(tmp_path: Path):
    h = await make_harness(tmp_path, tool_policy={"rm_rf": "deny"})
    session = await h.store.sessions.create("ses_1", None, "m", str(h.folder))
    result = await h.run(session_id=session.id)
    assert result.status == "error" and result.error.code == "config" and "rm_rf" in result.error.message
