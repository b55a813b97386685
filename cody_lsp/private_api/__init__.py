"""Every use of a private API of openai (or pygls), in one package.

cody-lsp needs openai's low-level `post`. It is used here only, with the reason, behind a
public name the rest of the code calls:

- `post_chat_stream`, the model request as a plain-dict stream.
- `load_parts`, the parts of openai the model client uses, loaded without the package's
  `__init__`s (which import the whole API's types): openai_parts.py.

No private name of pygls is used any more: JSON-RPC is the shared endpoint's
(cody_lsp/jsonrpc/), which replaced the pygls protocol subclass whose private hooks this
package fenced. tests/unit/test_private_api.py still checks that no module of cody_lsp uses a
private name of pygls' classes, so a new use lands here, listed and tested.

`OPENAI_NAMES` lists what this package relies on; tests/unit/test_private_api.py checks that
each still exists (with the same parameters) in the installed version, and that no other
module of cody_lsp uses them. When an upgrade removes one, that test names it and this file is
the one to change. pyproject.toml pins pygls and openai to the minor versions this was tested
with. The names are also reachable from this package, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "OPENAI_NAMES": "openai_stream",
    "post_chat_stream": "openai_stream",
    "load_parts": "openai_parts",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
