"""What the chat does right after its prompt can be shown: the work that needs the server fully
up (it answers `initialize` and the first session reads before its imports are done, see
server/lsp/early_initialize.py), done in the background so that the prompt never waits for it.

- the hint that a run is coming (`cody/warmUp`, when the server advertises `warmUp`): the server
  loads its model client while the user types — `hint_run_coming`, the one call site;
- the folder's instruction files for the header's `rules` line (a new session; a resumed one
  names its own), its custom commands, and the context window's figures for the status line.

A line printed while the prompt is shown goes above it (prompt_toolkit's `run_in_terminal`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .connection import CodyClient, CodyError, server_feature

WARM_UP = "cody/warmUp"


async def hint_run_coming(client: CodyClient) -> None:
    """Tell the server a run is coming (cody/warmUp), when it takes the hint; never an error."""
    if not server_feature(client, "warmUp"):
        return
    with contextlib.suppress(CodyError):
        await client._request(WARM_UP, {}, timeout=30)


async def above_prompt(show: Callable[[], Any]) -> None:
    """Run `show` (it prints) above the prompt being read, or as is when none is."""
    try:
        from prompt_toolkit.application import get_app_or_none, run_in_terminal
    except ImportError:  # pragma: no cover - prompt_toolkit is a dependency
        show()
        return
    app = get_app_or_none()
    if app is None or not app.is_running:
        show()
        return
    await run_in_terminal(show)
