"""core/models.py: the process's listings of the endpoints' models — asked once however many
wait, a failed ask not kept, at most MAX_ENDPOINTS kept, and the listings being asked stopped at
close. (Through the wire, against the scripted provider: tests/e2e/test_list_models.py.)"""

from __future__ import annotations

import asyncio

import pytest

from cody_lsp.config import Limits, ModelConfig
from cody_lsp.server.agent import model
from cody_lsp.server.core import models
from cody_lsp.server.core.models import ModelCatalog


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The base URLs asked for their models; each answers [its URL] after a moment ("boom": raises)."""
    calls: list[str] = []

    async def fake(config: ModelConfig, limits: Limits) -> list[str]:
        calls.append(config.base_url or "")
        await asyncio.sleep(0.05)
        if config.base_url == "boom":
            raise RuntimeError("the openai module failed to load")
        return [config.base_url or ""]

    monkeypatch.setattr(model, "list_models", fake)
    return calls


def endpoint(url: str) -> ModelConfig:
    return ModelConfig("m", url, "k")


async def test_asked_once_for_every_waiter_and_again_on_refresh(asked: list[str]):
    catalog = ModelCatalog()
    one, two = await asyncio.gather(catalog.models(endpoint("a"), Limits()), catalog.models(endpoint("a"), Limits()))
    assert one == two == ["a"] and asked == ["a"]
    assert await catalog.models(endpoint("a"), Limits()) == ["a"] and asked == ["a"]
    assert await catalog.models(endpoint("a"), Limits(), refresh=True) == ["a"] and asked == ["a", "a"]
    assert await catalog.models(ModelConfig("other-model", "a", "k"), Limits()) == ["a"] and len(asked) == 3


async def test_a_failed_ask_is_not_kept_and_a_cancelled_waiter_cancels_nothing(asked: list[str]):
    catalog = ModelCatalog()
    with pytest.raises(RuntimeError):
        await catalog.models(endpoint("boom"), Limits())
    with pytest.raises(RuntimeError):
        await catalog.models(endpoint("boom"), Limits())
    assert asked == ["boom", "boom"]
    waiter = asyncio.ensure_future(catalog.models(endpoint("b"), Limits()))
    other = asyncio.ensure_future(catalog.models(endpoint("b"), Limits()))
    await asyncio.sleep(0.01)
    waiter.cancel()
    assert await other == ["b"] and asked.count("b") == 1


async def test_at_most_max_endpoints_kept_and_close_stops_the_asking(asked: list[str], monkeypatch):
    monkeypatch.setattr(models, "MAX_ENDPOINTS", 2)
    catalog = ModelCatalog()
    for url in ("a", "b", "c"):
        await catalog.models(endpoint(url), Limits())
    await catalog.models(endpoint("a"), Limits())  # forgotten (the least recently asked): asked again
    assert asked == ["a", "b", "c", "a"]
    pending = asyncio.ensure_future(catalog.models(endpoint("d"), Limits()))
    await asyncio.sleep(0.01)
    await catalog.close()
    with pytest.raises(asyncio.CancelledError):
        await pending
