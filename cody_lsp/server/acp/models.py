"""The models a session may switch to (its `model` configuration option, server.py).

The session's own model, the environment's (`CODY_MODEL`), then those the endpoint lists
(`GET {base_url}/models`: the process's listing, core/models.py, which the LSP face's
cody/listModels reads too), asked in the background after the first session is opened (its
answer never waits for the endpoint). When
the listing adds models, every session this client opened gets a `config_option_update` with
the longer list. An endpoint without a listing leaves the first two.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ...config import ServerConfig
from ..core.api import ModelCatalog

log = logging.getLogger(__name__)


class ModelChoices:
    def __init__(self, config: ServerConfig, catalog: ModelCatalog):
        self._config = config
        self._catalog = catalog
        self.listed: list[str] = []  # what the endpoint listed, once it answered
        self._listing: asyncio.Task[None] | None = None

    def of(self, model: str) -> list[str]:
        """The models a session whose model is `model` may choose from, its own first."""
        return list(dict.fromkeys(m for m in (model, self._config.model.model, *self.listed) if m))

    def options(self, model: str) -> list[dict[str, Any]]:
        """The session's configuration options: its model (category `model`)."""
        return [
            {
                "id": "model",
                "name": "Model",
                "description": "The model of the session's next turns",
                "category": "model",
                "type": "select",
                "currentValue": model,
                "options": [{"value": m, "name": m} for m in self.of(model)],
            }
        ]

    def list_once(self, changed: Callable[[], Any]) -> None:
        """Ask the endpoint for its models, the first time only; `changed` (a coroutine function)
        is awaited when the listing added models. (The first session opened is also the warm-up
        hint: server.py's `commands_after` starts the model client's load, app.warm_model_client.)"""
        if self._listing is not None:
            return
        self._listing = asyncio.ensure_future(self._list(changed))

    async def _list(self, changed: Callable[[], Any]) -> None:
        before = set(self.of(""))
        self.listed = await self._catalog.models(self._config.model, self._config.limits)
        if set(self.listed) - before:
            try:
                await changed()
            except Exception:
                log.exception("could not tell the sessions about the endpoint's models")

    async def close(self) -> None:
        if self._listing is not None and not self._listing.done():
            self._listing.cancel()
            await asyncio.wait([self._listing])
