"""The parts of openai the model client uses, loaded without the rest of the package.

`import openai` runs the package's `__init__`, which imports the types of the whole API
(`openai.types`: chat, responses, realtime, evals, graders, … — ~450 modules of pydantic models,
about two thirds of the import's time) and `openai.lib`'s helpers, which import them too. The
model client (server/agent/model.py) needs none of them: it posts its own JSON and reads each
streamed event as a plain dict (openai_stream.py). So `load_parts` imports only the modules
that define what it uses (`PARTS`): while they load, the three package `__init__`s
(`SKIPPED_INITS`) are stood in for by empty packages of the same folders, which are taken out
of `sys.modules` again at once — a later `import openai` anywhere in the process runs the real
`__init__`s, and reuses the modules loaded here, so its classes are the same objects (the
test says so: tests/unit/test_private_api.py).

Private in two ways: the module names below are openai's own, and the stand-in packages rely on
how its modules import each other. When a load fails (a new release moved something), the
whole package is imported instead, as before, and the log says so at debug level;
pyproject.toml pins openai's minor version. What `import openai` does besides (its
`OPENAI_LOG` logging setup, the module names it gives its classes) is not needed here. When
openai was imported already (by a test, a client library), that one is used.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
import types
from typing import Any

log = logging.getLogger(__name__)

# What the model client uses → the openai module that defines it (private names: `_client`, …).
PARTS: dict[str, str] = {
    "AsyncOpenAI": "openai._client",
    "AsyncStream": "openai._streaming",
    "Timeout": "openai._types",
    "DefaultAioHttpClient": "openai._base_client",
    "APIError": "openai._exceptions",
    "APIStatusError": "openai._exceptions",
    "APIConnectionError": "openai._exceptions",
    "APITimeoutError": "openai._exceptions",
}
# The packages whose `__init__` imports the whole API's types; empty stand-ins while the parts load.
SKIPPED_INITS = ("openai", "openai.types", "openai.lib")


def load_parts() -> types.SimpleNamespace:
    """PARTS by name (`parts.AsyncOpenAI`, …), as `openai.AsyncOpenAI` would give them. Call it
    from one thread at a time (server/agent/model.py holds a lock)."""
    if "openai" not in sys.modules:
        try:
            return _namespace(_load_without_inits())
        except Exception:
            log.debug("loading only the parts of openai failed; importing all of it", exc_info=True)
    import openai

    return _namespace(lambda name: getattr(openai, name))


def _namespace(get: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{name: get(name) for name in PARTS})


def _load_without_inits() -> Any:
    spec = importlib.util.find_spec("openai")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("openai is not installed as a package")
    root = list(spec.submodule_search_locations)[0]
    stand_ins = {name: _empty_package(name, os.path.join(root, *name.split(".")[1:])) for name in SKIPPED_INITS}
    for name, module in stand_ins.items():
        sys.modules[name] = module
    try:
        modules = {name: importlib.import_module(where) for name, where in PARTS.items()}
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return lambda name: getattr(modules[name], name)


def _empty_package(name: str, folder: str) -> types.ModuleType:
    """A package of `folder` whose `__init__` did not run: its submodules import from it."""
    module = types.ModuleType(name)
    module.__path__ = [folder]
    module.__package__ = name
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__spec__.submodule_search_locations = [folder]
    return module
