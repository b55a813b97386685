"""The run core as the faces see it: the one module of core/ that server/lsp and server/acp
import (tests/unit/test_layers.py holds them to it).

- `RunManager` (runs.py): the facade a face calls — each request of a client is one of its
  public methods; `LiveRun` (live.py) is the handle of an admitted run, `Compaction`
  (compaction.py) and `Restore` (checkpointing.py) of a compaction or a restore taken in;
- `ClientPort` and `ClientFeatures` (port.py): what the core needs of a client, which each face
  implements; `RunEvent` (events.py): what a run emits, which each face translates; `Marker`
  (replay.py): a stored turn's end, as a replayed history shows it, and `PartialText`: the text
  of an answer its turn's cancel cut short; `SessionChange`
  (session_watch.py): a session another server process changed; `Compacted` (compaction.py):
  what a cody/compact did;
- `RequestError`, `UnknownSession`, `SessionBusy`, `StoreUnavailable` (errors.py): how a request
  fails, which each face maps to its error codes;
- `RequestOrder`, `Ticket`, `Later`, `in_turn` (order.py): requests take effect in the order they
  arrived;
- `normalize_folder` (folders.py), `ModelCatalog` (models.py).

Each name is loaded from its module when a face first asks for it, so a face's light path (the
early start) loads nothing it does not use: the run manager, and the agent and the store behind
it, come with the first request that needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checkpointing import Restore
    from .compaction import Compacted, Compaction
    from .errors import RequestError, SessionBusy, StoreUnavailable, UnknownSession
    from .events import RunEvent
    from .folders import normalize_folder
    from .live import LiveRun
    from .models import ModelCatalog
    from .order import Later, RequestOrder, Ticket, in_turn
    from .port import ClientFeatures, ClientPort
    from .replay import Marker, PartialText
    from .runs import RunManager
    from .session_watch import SessionChange

__all__ = [
    "ClientFeatures",
    "ClientPort",
    "Compacted",
    "Compaction",
    "Later",
    "LiveRun",
    "Marker",
    "ModelCatalog",
    "PartialText",
    "RequestError",
    "RequestOrder",
    "Restore",
    "RunEvent",
    "RunManager",
    "SessionBusy",
    "SessionChange",
    "StoreUnavailable",
    "Ticket",
    "UnknownSession",
    "in_turn",
    "normalize_folder",
]

# Each name's module (in this package).
_HOMES = {
    "ClientFeatures": "port",
    "ClientPort": "port",
    "Compacted": "compaction",
    "Compaction": "compaction",
    "Later": "order",
    "LiveRun": "live",
    "Marker": "replay",
    "ModelCatalog": "models",
    "PartialText": "replay",
    "RequestError": "errors",
    "RequestOrder": "order",
    "Restore": "checkpointing",
    "RunEvent": "events",
    "RunManager": "runs",
    "SessionBusy": "errors",
    "SessionChange": "session_watch",
    "StoreUnavailable": "errors",
    "Ticket": "order",
    "UnknownSession": "errors",
    "in_turn": "order",
    "normalize_folder": "folders",
}


def __getattr__(name: str) -> Any:
    """A name of `__all__`, loaded from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{home}"), name)
    globals()[name] = value
    return value
