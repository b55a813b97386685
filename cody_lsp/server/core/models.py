"""The models the endpoint lists, asked once per server process (whichever face it serves).

`GET {base_url}/models` (agent/model.list_models: bounded in time, count and id length) is asked
the first time a client wants the listing of an endpoint, and its answer kept: the LSP face's
cody/listModels and the ACP face's model option (acp/models.py) read the same listing. A client
may ask again (`refresh`); settings that name another endpoint (base URL, key or model: a
folder's configuration, or the editor's changed) are another listing, asked on first use. An
endpoint without a listing (or one that failed or took too long) is kept as listing none.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict

from ...config import Limits, ModelConfig  # (this module imports nothing heavy: server/app.py makes one)

MAX_ENDPOINTS = 16  # listings kept (the least recently asked one is forgotten first)

_Key = tuple[str, str, str]


class ModelCatalog:
    def __init__(self) -> None:
        self._listings: OrderedDict[_Key, asyncio.Future[list[str]]] = OrderedDict()

    @staticmethod
    def _key(config: ModelConfig) -> _Key:
        return (config.base_url or "", config.api_key or "", config.model or "")

    async def models(self, config: ModelConfig, limits: Limits, *, refresh: bool = False) -> list[str]:
        """The ids the endpoint of `config` lists, in its order ([] for none): its kept listing, or
        asked now (once for every caller waiting; `refresh`: asked again even if kept). A caller
        cancelled while it waits does not cancel the listing the others wait for."""
        from ..agent.model import list_models  # the model client's module: not before a listing is wanted

        key = self._key(config)
        listing = self._listings.get(key)
        if listing is None or refresh or (listing.done() and (listing.cancelled() or listing.exception() is not None)):
            listing = self._listings[key] = asyncio.ensure_future(list_models(config, limits))
            while len(self._listings) > MAX_ENDPOINTS:
                self._listings.popitem(last=False)  # its waiters still get its answer (bounded in time)
        self._listings.move_to_end(key)
        return list(await asyncio.shield(listing))

    async def close(self) -> None:
        """Stop the listings still being asked (the process is ending)."""
        pending = [listing for listing in self._listings.values() if not listing.done()]
        for listing in pending:
            listing.cancel()
        for listing in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listing
        self._listings.clear()
