"""cody/listModels through the wire: the real server as a subprocess, the scripted provider's
GET /v1/models over real HTTP — the listing kept for the process (asked once, again on `refresh`
or for another endpoint's settings), bounded, answered in request order without holding the
requests behind it, an endpoint without a listing answering none, and a listed model picked with
cody/updateSession used by the next model request."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from cody_lsp.testing.provider import Reply, ScriptedProvider

from .test_editor_native import editor_factory  # noqa: F401 (a fixture: an editor answering workspace/configuration)


def ids(listing: dict) -> list[str]:
    return [model["id"] for model in listing["models"]]


async def test_the_endpoints_models_are_listed_kept_and_one_is_picked(wire_factory, provider, workspace: Path):
    provider.models = ["scripted-model", "big-model", "bad\u0007id", "x" * 300, "small-model", "big-model"]
    wire = await wire_factory()
    assert wire.capabilities["listModels"] is True

    listed = await wire.request("cody/listModels")  # no params: the only folder's settings
    # Only printable ids of at most 200 characters, once each, in the endpoint's order.
    assert listed == {
        "models": [{"id": "scripted-model"}, {"id": "big-model"}, {"id": "small-model"}],
        "current": "scripted-model",
    }
    session = await wire.request("cody/createSession", {})
    again = await wire.request("cody/listModels", {"sessionId": session["id"]})
    assert again == listed and provider.models_requests == 1  # kept: the endpoint asked once

    provider.models = ["scripted-model", "big-model", "new-model"]
    assert ids(await wire.request("cody/listModels", {})) == ["scripted-model", "big-model", "small-model"]
    refreshed = await wire.request("cody/listModels", {"refresh": True})
    assert ids(refreshed) == ["scripted-model", "big-model", "new-model"] and provider.models_requests == 2

    # The picker's change: the session's next run uses the picked model.
    updated = await wire.request("cody/updateSession", {"sessionId": session["id"], "model": "new-model"})
    assert updated["model"] == "new-model"
    assert (await wire.request("cody/listModels", {"sessionId": session["id"]}))["current"] == "new-model"
    provider.add(Reply(text="Picked."))
    result, chunks = await wire.run("hello", sessionId=session["id"])
    assert result["status"] == "done" and chunks[0]["model"] == "new-model"
    assert provider.requests[-1]["model"] == "new-model"

    err = await wire.error_of("cody/listModels", {"sessionId": "ses_nope"})
    assert err.code == -32001 and "ses_nope" in err.message
    err = await wire.error_of("cody/listModels", {"refresh": "yes"})
    assert err.code == -32602 and "refresh" in err.message


async def test_an_endpoint_without_a_listing_lists_none(wire_factory, provider, workspace: Path):
    provider.models_status = 404
    wire = await wire_factory()
    assert await wire.request("cody/listModels", {}) == {"models": [], "current": "scripted-model"}
    provider.models_status = 500
    assert await wire.request("cody/listModels", {"refresh": True}) == {"models": [], "current": "scripted-model"}
    provider.models_status, provider.models = None, ["one-model"]
    assert ids(await wire.request("cody/listModels", {"refresh": True})) == ["one-model"]
    # The server keeps serving: a run after the failed listings.
    provider.add(Reply(text="Still here."))
    result, _ = await wire.run("hi")
    assert result["status"] == "done"


async def test_an_unreachable_endpoint_lists_none_and_no_model_needs_no_model(
    wire_factory, provider, db_path, workspace
):
    from tests.conftest import server_env

    env = server_env(provider, db_path)
    del env["CODY_MODEL"]  # a listing needs no model named: one may be picked from it
    wire = await wire_factory(env=env)
    listed = await wire.request("cody/listModels", {})
    assert listed == {"models": [{"id": "scripted-demo-model"}]}  # no `current`: none is set
    closed = server_env(provider, db_path, CODY_MODEL_BASE_URL="http://127.0.0.1:9/v1")
    other = await wire_factory(env=closed)  # nothing listens on port 9
    assert await other.request("cody/listModels", {}) == {"models": [], "current": "scripted-model"}


async def test_a_slow_listing_is_asked_once_and_holds_no_request_behind_it(wire_factory, provider, workspace: Path):
    provider.models_delay = 1.0
    wire = await wire_factory()
    first = wire.send("cody/listModels", {})
    second = wire.send("cody/listModels", {})
    session = await wire.request("cody/createSession", {})  # read after both, answered before them
    assert not first.done() and not second.done() and session["id"]
    assert await first == await second == {"models": [{"id": "scripted-demo-model"}], "current": "scripted-model"}
    assert provider.models_requests == 1
    # A cancelled wait ($/cancelRequest) ends that request only; the listing goes on for the others.
    provider.models = ["after-cancel"]
    waiting = wire.send("cody/listModels", {"refresh": True}, msg_id="slow-1")
    other = wire.send("cody/listModels", {})
    await asyncio.sleep(0.3)
    wire.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="slow-1"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(waiting, 15)
    assert info.value.code == -32800
    assert ids(await other) == ["after-cancel"] and provider.models_requests == 2


async def test_another_endpoint_in_the_settings_is_another_listing(editor_factory, provider, workspace: Path):  # noqa: F811
    async with ScriptedProvider() as elsewhere:
        provider.models, elsewhere.models = ["here-model"], ["there-model", "there-mini"]
        editor = await editor_factory(configuration={workspace.as_uri(): {"model": "first"}})
        assert await editor.wire.request("cody/listModels", {}) == {
            "models": [{"id": "here-model"}],
            "current": "first",
        }
        editor.client.set_configuration(
            {"model": "there-mini", "baseUrl": elsewhere.base_url}, section="cody", scope_uri=workspace.as_uri()
        )
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        listed = await editor.wire.request("cody/listModels", {})
        assert listed == {"models": [{"id": "there-model"}, {"id": "there-mini"}], "current": "there-mini"}
        assert provider.models_requests == 1 and elsewhere.models_requests == 1
