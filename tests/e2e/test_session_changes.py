"""A session's mode changed in one server process is told live to the clients of the others
(issue 21): an ACP client's session/set_mode reaches the editor's panel as `cody/sessionChanged`,
and the panel's cody/updateSession {mode} reaches the ACP client as `current_mode_update` and
`config_option_update` — real server processes sharing one database, the ACP side through the
official ACP SDK's client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply

from ..conftest import CodyWire
from .acp_support import SdkClient

pytestmark = pytest.mark.timeout(90)


async def until(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """`condition()` once it is true (it is looked at every 20 ms), else the test fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := condition()):
        assert loop.time() < deadline, "not told in time"
        await asyncio.sleep(0.02)
    return value


def mode_updates(client: SdkClient, session_id: str) -> list[str]:
    return [u["currentModeId"] for u in client.updates(session_id, "current_mode_update")]


def mode_options(client: SdkClient, session_id: str) -> list[str]:
    return [u["configOptions"][1]["currentValue"] for u in client.updates(session_id, "config_option_update")]


async def test_a_mode_set_in_acp_reaches_the_panel_and_the_panels_reaches_acp(
    wire_factory, acp, provider, workspace: Path
):
    panel: CodyWire = await wire_factory(capabilities={"sessionChanges": True})
    provider.add(Reply(text="Hello."))
    result, _ = await panel.run("hi")
    session = result["sessionId"]
    zed = await acp()
    loaded = await zed.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    assert loaded["modes"]["currentModeId"] == "code"

    # Zed sets plan: the panel is told, with the session as it is now.
    assert await zed.call("setSessionMode", {"sessionId": session, "modeId": "plan"}) == {}
    [change] = await until(lambda: panel.session_changes)
    assert change["changed"] == ["mode"]
    assert (change["session"]["id"], change["session"]["mode"]) == (session, "plan")
    assert change["session"]["title"] == "hi" and change["session"]["messageCount"] == 2

    # The panel sets ask: Zed is told, both as a mode and as its `mode` option.
    updated = await panel.request("cody/updateSession", {"sessionId": session, "mode": "ask"})
    assert updated["mode"] == "ask"
    await until(lambda: mode_updates(zed, session) == ["ask"])
    await until(lambda: mode_options(zed, session)[-1] == "ask")
    # The mode option the other way (set_config_option): told to the panel too.
    answered = await zed.call("setSessionConfigOption", {"sessionId": session, "configId": "mode", "value": "code"})
    assert answered["configOptions"][1]["currentValue"] == "code"
    told_before = len(mode_options(zed, session))  # what came before the answer (e.g. the models listed)
    await until(lambda: len(panel.session_changes) == 2)
    assert panel.session_changes[1]["session"]["mode"] == "code"

    # A run of the panel's now goes in the mode Zed set, and nobody is told their own change back.
    provider.add(Reply(text="Done."))
    _, chunks = await panel.run("go on", sessionId=session)
    assert chunks[0]["type"] == "session_start" and chunks[0]["mode"] == "code"
    await asyncio.sleep(1.5)  # three looks of each watch
    assert [c["session"]["mode"] for c in panel.session_changes] == ["plan", "code"]
    # Zed's: the panel's ask, and its own option's code (set_config_option tells the mode too,
    # acp/server.py) — its own set_mode and option were not told back by the watch.
    assert mode_updates(zed, session) == ["ask", "code"]
    # Nothing told after Zed's own change says another mode (the models' listing, in the requests'
    # order, is told before the answer or with the mode as it is then).
    assert set(mode_options(zed, session)[told_before:]) <= {"code"}


async def test_a_title_or_model_changed_elsewhere_is_told_and_acp_hears_the_model_as_its_option(
    wire_factory, acp, provider, workspace: Path
):
    panel = await wire_factory(capabilities={"sessionChanges": True})
    created = await panel.request("cody/createSession", {"title": "Draft"})
    session = created["id"]
    other = await wire_factory()  # another editor window (it follows nothing: it did not declare it)
    zed = await acp()
    await zed.call("loadSession", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
    await other.request("cody/updateSession", {"sessionId": session, "title": "Health endpoint"})
    [change] = await until(lambda: panel.session_changes)
    assert change["changed"] == ["title"] and change["session"]["title"] == "Health endpoint"
    await until(lambda: zed.updates(session, "session_info_update"))
    assert zed.updates(session, "session_info_update")[-1]["title"] == "Health endpoint"
    await other.request("cody/updateSession", {"sessionId": session, "model": "gpt-other"})
    await until(lambda: len(panel.session_changes) == 2)
    assert panel.session_changes[1]["changed"] == ["model"]

    # (The endpoint's models, listed since the load, may be told first, with the model of then.)
    def models_told() -> list[str]:
        return [u["configOptions"][0]["currentValue"] for u in zed.updates(session, "config_option_update")]

    await until(lambda: models_told()[-1:] == ["gpt-other"])
    assert mode_updates(zed, session) == []  # the mode did not change
    assert other.session_changes == []


async def test_a_client_that_does_not_declare_it_is_never_told(wire_factory, acp, provider, workspace: Path):
    panel = await wire_factory()
    created = await panel.request("cody/createSession", {})
    zed = await acp()
    await zed.call("loadSession", {"sessionId": created["id"], "cwd": str(workspace), "mcpServers": []})
    await zed.call("setSessionMode", {"sessionId": created["id"], "modeId": "ask"})
    await asyncio.sleep(1.5)
    assert panel.session_changes == []
    got = await panel.request("cody/getSession", {"sessionId": created["id"], "limit": 1})
    assert got["session"]["mode"] == "ask"  # it reads it when it asks
