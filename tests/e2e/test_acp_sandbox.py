"""The command sandbox (issue 23) through the ACP face, behind the official ACP SDK's client:
under `run_command=sandboxed` a command runs unasked and confined; a command asking to leave the
sandbox is asked about with its reason and only for that call; the permission request of a
command offers the sandboxed folder rule, which then covers the folder's commands; where the
kernel has no Landlock (simulated with a seccomp filter) the request offers no such rule.

The folder and the fake home are under /var/tmp (a sandboxed command may write /tmp)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cody_lsp.server.core.permissions import SANDBOXED_LABEL
from cody_lsp.testing.provider import Reply, ScriptedProvider, ToolCall

from ..conftest import server_env
from ..sandboxing import SUPPORT, Place, needs_landlock, outside_tmp, without_landlock
from .acp_support import AGENT, SdkClient

pytestmark = pytest.mark.timeout(90)

SANDBOXED = {"CODY_TOOL_POLICY": "run_command=sandboxed"}


@pytest.fixture
def place() -> Iterator[Place]:
    with outside_tmp() as p:
        yield p


@pytest.fixture
async def acp(provider: ScriptedProvider, place: Place):
    """Start ACP agents (on one database) behind the SDK's client, each with a session in the folder."""
    started: list[SdkClient] = []

    async def start(agent: list[str] | None = None, **extra: str) -> tuple[SdkClient, str]:
        env = server_env(provider, place.db, HOME=str(place.home), XDG_STATE_HOME=str(place.state.parent), **extra)
        client = await SdkClient.start(env, place.folder, agent)
        started.append(client)
        await client.initialize()
        return client, await client.new_session(place.folder)

    yield start
    for client in started:
        problems = client.problems()
        await client.stop()
        assert not problems, problems


def commands(*texts: str, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": text, **args}) for text in texts])


def results(client: SdkClient, session: str) -> list[str]:
    return [u["content"][-1]["content"]["text"] for u in client.results(session)]


@needs_landlock
async def test_sandboxed_commands_run_unasked_in_the_sandbox(acp, provider, place: Place) -> None:
    client, session = await acp(**SANDBOXED)
    provider.add(
        commands("echo in > made.txt", 'echo x > "$HOME/home.txt"', 'cat "$HOME/.ssh/id_rsa"'), Reply(text="ok")
    )
    assert await client.prompt(session, "try") == {"stopReason": "end_turn"}
    assert client.of("permission") == []  # nobody was asked
    made, home, key = results(client, session)
    assert made.startswith("exit code: 0") and (place.folder / "made.txt").read_text() == "in\n"
    for refused in (home, key):
        assert "Permission denied" in refused and '"sandbox": false' in refused
    assert "fake-key" not in key and not (place.home / "home.txt").exists()


@needs_landlock
async def test_leaving_the_sandbox_is_asked_with_its_reason_for_that_call_only(acp, provider, place: Place) -> None:
    client, session = await acp(**SANDBOXED)
    await client.policy("allow_once")
    reason = "the build tool caches in my home"
    provider.add(commands('echo 1 > "$HOME/cache.txt"', sandbox=False, reason=reason), Reply(text="ok"))
    assert await client.prompt(session, "build") == {"stopReason": "end_turn"}
    [asked] = client.of("permission")
    params = asked["params"]
    assert [(o["optionId"], o["kind"]) for o in params["options"]] == [
        ("allow_once", "allow_once"),
        ("reject_once", "reject_once"),
    ]  # no rule, no "always": the answer is for this call
    tool = params["toolCall"]
    assert tool["title"].endswith("outside the sandbox")
    assert tool["content"] == [
        {
            "type": "content",
            "content": {"type": "text", "text": f"Asks to run outside the sandbox. The model's reason: {reason}"},
        }
    ]
    assert results(client, session)[0].startswith("exit code: 0")
    assert (place.home / "cache.txt").read_text() == "1\n"  # it ran as it is, as allowed


@needs_landlock
async def test_the_sandboxed_folder_rule_is_offered_and_covers_the_folder(acp, provider, place: Place) -> None:
    client, session = await acp()  # the default policy: ask
    await client.policy("allow_always_sandboxed")
    provider.add(commands('echo 1 > "$HOME/a.txt"; echo 1 > a.txt'), Reply(text="ok"))
    assert await client.prompt(session, "first") == {"stopReason": "end_turn"}
    [asked] = client.of("permission")
    offered = {o["optionId"]: (o["name"], o["kind"]) for o in asked["params"]["options"]}
    assert offered["allow_always_sandboxed"] == (SANDBOXED_LABEL, "allow_always")
    [first] = results(client, session)
    assert "Permission denied" in first, "the call answered so runs sandboxed too"
    assert (place.folder / "a.txt").exists() and not (place.home / "a.txt").exists()
    # Another agent on the same database, another session: the folder's commands run sandboxed, unasked.
    other, second = await acp()
    provider.add(commands('echo 2 > "$HOME/b.txt"', "echo 2 > b.txt"), Reply(text="ok"))
    assert await other.prompt(second, "second") == {"stopReason": "end_turn"}
    assert other.of("permission") == []
    home, folder = results(other, second)
    assert "Permission denied" in home and folder.startswith("exit code: 0")


async def test_without_landlock_the_request_offers_no_sandboxed_rule(acp, provider, place: Place) -> None:
    if not SUPPORT.seccomp:
        pytest.skip("the fallback is simulated with a seccomp filter, which this machine lacks")
    client, session = await acp(without_landlock(AGENT[1:]), **SANDBOXED)
    provider.add(commands('echo x > "$HOME/asked.txt"'), Reply(text="ok"))
    assert await client.prompt(session, "go") == {"stopReason": "end_turn"}
    [asked] = client.of("permission")  # sandboxed falls back to asking
    assert "allow_always_sandboxed" not in [o["optionId"] for o in asked["params"]["options"]]
    assert results(client, session)[0].startswith("exit code: 0")  # allowed once, as it is
    assert (place.home / "asked.txt").exists()
