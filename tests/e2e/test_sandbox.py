"""The tool policy `sandboxed` through the wire (issue 23): the real server runs the model's
commands without asking, confined to the folder, without network, unable to read the user's
secrets or signal the server; where the kernel has no Landlock (simulated with a seccomp filter)
it asks instead; a command may ask to run outside the sandbox, and is then always asked about;
"in this folder without asking, sandboxed" is a rule, stored and listed.

Everything the sandbox must refuse lies outside /tmp (which a sandboxed command may write): the
folder, the fake home with its secrets and the database are under /var/tmp."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from cody_lsp.protocol.wire import PermissionChoice, to_wire
from cody_lsp.server.core.permissions import SANDBOXED_LABEL
from cody_lsp.testing.provider import Reply, ScriptedProvider, ToolCall

from ..conftest import CodyWire, server_env, start_wire, stop_wire
from ..sandboxing import SUPPORT, Place, connect_command, needs_landlock, outside_tmp, tcp_listener, without_landlock

pytestmark = pytest.mark.timeout(90)

CAN_ANSWER = {"permissions": True}
CANNOT_ANSWER = {"permissions": None}  # not declared at all
SANDBOXED_RULE = to_wire(PermissionChoice(SANDBOXED_LABEL, "allow_always", "folder", True))


@pytest.fixture
def place() -> Iterator[Place]:
    with outside_tmp() as p:
        yield p


def env_for(provider: ScriptedProvider, place: Place, **extra: str) -> dict[str, str]:
    return server_env(provider, place.db, HOME=str(place.home), XDG_STATE_HOME=str(place.state.parent), **extra)


@pytest.fixture
async def start(provider: ScriptedProvider, place: Place):
    started: list[CodyWire] = []

    async def start_server(
        *, capabilities: dict[str, Any] | None = CAN_ANSWER, command: list[str] | None = None, **extra: str
    ) -> CodyWire:
        wire = await start_wire(env_for(provider, place, **extra), [place.folder], capabilities, command=command)
        started.append(wire)
        return wire

    yield start_server
    for wire in started:
        await stop_wire(wire)


def commands(*texts: str, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": text, **args}) for text in texts])


def results(chunks: list[dict]) -> list[str]:
    return [c["content"] for c in chunks if c["type"] == "tool_result"]


SANDBOXED = {"CODY_TOOL_POLICY": "run_command=sandboxed"}


@needs_landlock
async def test_the_capability_says_what_the_machine_offers(start) -> None:
    wire = await start(**SANDBOXED)
    network = "blocked" if SUPPORT.seccomp or SUPPORT.namespace else ("tcp-blocked" if SUPPORT.abi >= 4 else "open")
    assert wire.capabilities["sandbox"] == {"available": True, "abi": SUPPORT.abi, "network": network}
    allowed = await start(CODY_SANDBOX_NETWORK="allow")
    assert allowed.capabilities["sandbox"]["network"] == "allowed"


@needs_landlock
async def test_sandboxed_commands_run_unasked_and_write_only_in_their_folder(start, provider, place: Place) -> None:
    wire = await start(**SANDBOXED)
    (place.folder / "out").symlink_to(place.home)
    etc = f"/etc/cody-sandbox-e2e-{os.getpid()}"
    settings = place.db.parent / "xdg-config" / "cody-lsp"  # server_env's XDG_CONFIG_HOME
    settings.mkdir(parents=True)
    (settings / "key").write_text("sk-fake-key-in-the-config-dir\n")
    provider.add(
        commands(
            "echo inside > made.txt && cat made.txt",
            'echo x > "$HOME/home.txt"',
            f"echo x > /tmp/..{etc}",
            "echo x > out/through-link.txt",
            "sh -c 'sh -c \"echo x > $HOME/grandchild.txt\"'",
            'cat "$HOME/.ssh/id_rsa"',
            f"cat {shlex.quote(str(place.db))}",
            f"cat {shlex.quote(str(settings / 'key'))}",
        ),
        Reply(text="done"),
    )
    try:
        result, chunks = await wire.run("try things")
    finally:
        if os.path.exists(etc):
            os.unlink(etc)
    assert result["status"] == "done"
    made, home, dotdot, link, grandchild, key, db, settings_key = results(chunks)
    assert made.startswith("exit code: 0") and "inside" in made
    assert (place.folder / "made.txt").read_text() == "inside\n"
    for refused in (home, dotdot, link, grandchild, key, db, settings_key):
        assert "Permission denied" in refused and "exit code: 0" not in refused, refused
        assert '"sandbox": false' in refused  # the model is told how to ask for more
    assert "fake-key" not in key and "sk-fake" not in settings_key
    assert sorted(p.name for p in place.home.iterdir()) == [".bashrc", ".config", ".ssh"]
    assert wire.permission_requests == []  # nobody was asked


@needs_landlock
async def test_no_network_unless_the_setting_allows_it(start, provider) -> None:
    with tcp_listener() as (port, heard):
        blocked = await start(**SANDBOXED)
        provider.add(commands(connect_command(port)), Reply(text="ok"))
        _, chunks = await blocked.run("connect")
        assert "refused: PermissionError" in results(chunks)[0]
        allowed = await start(CODY_SANDBOX_NETWORK="allow", **SANDBOXED)
        provider.add(commands(connect_command(port)), Reply(text="ok"))
        _, chunks = await allowed.run("connect")
        assert "connected" in results(chunks)[0]
    assert heard == [b"hello from the command"]


@needs_landlock
async def test_a_sandboxed_command_cannot_kill_the_server(start, provider) -> None:
    if SUPPORT.abi < 6:
        pytest.skip(f"Landlock ABI {SUPPORT.abi} < 6 does not scope signals")
    wire = await start(**SANDBOXED)
    pid = wire.process.pid
    provider.add(commands(f"kill -TERM {pid}; echo rc=$?; kill -KILL {pid}; echo rc=$?"), Reply(text="ok"))
    result, chunks = await wire.run("kill it")
    assert result["status"] == "done"
    assert results(chunks)[0].count("rc=1") == 2, results(chunks)
    assert "Operation not permitted" in results(chunks)[0]
    assert wire.process.returncode is None
    assert (await wire.request("cody/listSessions", {}))["sessions"]


@needs_landlock
async def test_an_unsandboxed_retry_is_asked_about_with_its_reason(start, provider, place: Place) -> None:
    wire = await start(**SANDBOXED)
    answers = iter([{"outcome": "deny"}, {"outcome": "allow"}])
    wire.permission_answer = lambda params: next(answers)
    reason = "pip needs to write its cache in ~/.cache"
    retry = {"sandbox": False, "reason": reason}
    provider.add(
        commands('echo 1 > "$HOME/first.txt"'),
        commands('echo 2 > "$HOME/second.txt"', **retry),
        commands('echo 3 > "$HOME/third.txt"', **retry),
        Reply(text="done"),
    )
    _, chunks = await wire.run("write to my home")
    first, denied, allowed = results(chunks)
    assert "Permission denied" in first and "refused by the user" in denied and allowed.startswith("exit code: 0")
    assert [p["args"]["command"] for p in wire.permission_requests] == [
        'echo 2 > "$HOME/second.txt"',
        'echo 3 > "$HOME/third.txt"',
    ]
    for request in wire.permission_requests:
        assert request["unsandboxed"] == {"reason": reason}
        assert request["options"] == {"outcomes": ["allow", "deny"], "scopes": []}
    assert sorted(p.name for p in place.home.iterdir()) == [".bashrc", ".config", ".ssh", "third.txt"]
    # Even a policy that runs everything unasked asks about a call that leaves the sandbox.
    loose = await start(CODY_TOOL_POLICY="run_command=allow")
    provider.add(commands("true", sandbox=False, reason="why not"), Reply(text="ok"))
    await loose.run("go")
    assert [p["unsandboxed"]["reason"] for p in loose.permission_requests] == ["why not"]


@needs_landlock
async def test_nobody_to_ask_means_an_unsandboxed_retry_does_not_run(start, provider, place: Place) -> None:
    wire = await start(capabilities=CANNOT_ANSWER, **SANDBOXED)  # a client that cannot answer
    provider.add(commands('echo x > "$HOME/x.txt"', sandbox=False, reason="please"), Reply(text="ok"))
    _, chunks = await wire.run("go")
    assert "did not run" in results(chunks)[0] and "nobody can be asked" in results(chunks)[0]
    assert not (place.home / "x.txt").exists()
    # CODY_APPROVALS=never runs what would be asked about, but never a sandboxed command outside the sandbox.
    never = await start(CODY_APPROVALS="never", **SANDBOXED)
    provider.add(commands('echo y > "$HOME/y.txt"', sandbox=False, reason="please"), Reply(text="ok"))
    _, chunks = await never.run("go")
    assert "nobody can be asked" in results(chunks)[0] and never.permission_requests == []
    assert not (place.home / "y.txt").exists()


@needs_landlock
async def test_the_sandboxed_folder_rule_is_offered_stored_and_listed(start, provider, place: Place) -> None:
    wire = await start()  # the default policy: ask
    wire.permission_answer = lambda params: {"outcome": "allow_always", "scope": "folder", "sandboxed": True}
    provider.add(commands('echo 1 > "$HOME/a.txt"; echo 1 > a.txt'), Reply(text="ok"))
    _, chunks = await wire.run("first")
    assert len(wire.permission_requests) == 1
    assert wire.permission_requests[0]["options"]["sandboxedRule"] == SANDBOXED_RULE
    assert "Permission denied" in results(chunks)[0], "the call answered so runs sandboxed too"
    assert (place.folder / "a.txt").exists() and not (place.home / "a.txt").exists()

    rules = (await wire.request("cody/listPermissionRules", {"workspaceFolder": str(place.folder)}))["rules"]
    assert [(r["toolName"], r["scope"], r.get("sandboxed"), r.get("commandPrefix")) for r in rules] == [
        ("run_command", "folder", True, None)
    ]
    # Another window on the same database: every command of the folder runs sandboxed, unasked.
    other = await start()
    provider.add(commands('echo 2 > "$HOME/b.txt"', "echo 2 > b.txt"), Reply(text="ok"))
    _, chunks = await other.run("second")
    assert other.permission_requests == []
    home, folder = results(chunks)
    assert "Permission denied" in home and folder.startswith("exit code: 0")
    assert await other.request("cody/revokePermissionRule", {"ruleId": rules[0]["id"]}) == {"revoked": True}
    provider.add(commands("true"), Reply(text="ok"))
    await other.run("third")
    assert len(other.permission_requests) == 1


# ------------------------------------------------------------------ without Landlock


async def test_without_landlock_sandboxed_asks_and_says_so(start, provider, place: Place) -> None:
    if not SUPPORT.seccomp:
        pytest.skip("the fallback is simulated with a seccomp filter, which this machine lacks")
    command = without_landlock(["-m", "cody_lsp"])
    wire = await start(command=command, **SANDBOXED)
    sandbox = wire.capabilities["sandbox"]
    assert sandbox["available"] is False and "no Landlock" in sandbox["reason"]
    provider.add(commands('echo x > "$HOME/asked.txt"'), Reply(text="ok"))
    _, chunks = await wire.run("go")
    assert [p["args"]["command"] for p in wire.permission_requests] == ['echo x > "$HOME/asked.txt"']
    assert "sandboxedRule" not in wire.permission_requests[0]["options"]  # nothing to offer
    assert results(chunks)[0].startswith("exit code: 0")  # the user allowed it, as it is
    assert (place.home / "asked.txt").exists()
    # Nobody to ask: it does not run at all.
    unasked = await start(command=command, capabilities=CANNOT_ANSWER, **SANDBOXED)
    provider.add(commands('echo x > "$HOME/unasked.txt"'), Reply(text="ok"))
    _, chunks = await unasked.run("go")
    assert "there is no sandbox here" in results(chunks)[0]
    assert not (place.home / "unasked.txt").exists()
