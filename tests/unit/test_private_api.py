"""The private openai APIs cody-lsp relies on still exist, and only cody_lsp/private_api/ uses
them (or a private name of pygls' classes: none is used).

When an upgrade of openai removes or changes one of them, these tests say which and where to
fix it, instead of a server that fails at run time. (What the pygls protocol subclass that
lived here did for withdrawn requests and crossed cancels is the shared endpoint's now:
tests/unit/jsonrpc/test_endpoint.py.)
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import re
from pathlib import Path

import openai
import pytest
from lsprotocol.converters import get_converter
from pygls.client import JsonRPCClient
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.server import JsonRPCServer

import cody_lsp
from cody_lsp import private_api

PYGLS_VERSION = importlib.metadata.version("pygls")
OPENAI_VERSION = importlib.metadata.version("openai")
FENCE = Path(private_api.__file__).parent  # the package: openai_stream.py (openai)


def removed(package: str, version: str, name: str) -> str:
    return f"{package} {version} removed `{name}`; update cody_lsp/private_api/"


@pytest.mark.parametrize("path,params", sorted(private_api.OPENAI_NAMES.items()))
def test_openai_names_still_exist(path: str, params: tuple[str, ...] | None):
    target: object = openai
    for part in path.split("."):
        target = getattr(target, part, None)
        assert target is not None, removed("openai", OPENAI_VERSION, path)
    if params is not None:
        accepted = inspect.signature(target).parameters  # type: ignore[arg-type]
        missing = [p for p in params if p not in accepted]
        assert not missing, f"openai {OPENAI_VERSION}: `{path}` no longer takes {missing}; update cody_lsp/private_api/"


def test_openai_async_stream_takes_an_item_type():
    assert openai.AsyncStream[object] is not None, removed("openai", OPENAI_VERSION, "AsyncStream[T]")


def pygls_private_names() -> set[str]:
    """Every single-underscore name of the pygls classes cody-lsp builds on."""
    names: set[str] = set()
    instances = (JsonRPCProtocol(None, get_converter()), LanguageServer("x", "0"), JsonRPCClient())  # type: ignore[arg-type]
    for owner in (JsonRPCProtocol, LanguageServerProtocol, JsonRPCServer, LanguageServer, JsonRPCClient, *instances):
        names |= {n for n in dir(owner) if n.startswith("_") and not n.startswith("__")}
    return names


def test_no_other_module_uses_a_private_api():
    names = sorted(pygls_private_names(), key=len, reverse=True)
    pattern = re.compile(r"(\.|def )(" + "|".join(map(re.escape, names)) + r")\b|\.post\(|AsyncStream")
    uses = []
    for path in sorted(Path(cody_lsp.__file__).parent.rglob("*.py")):
        if path.parent == FENCE:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                uses.append(f"{path.relative_to(FENCE.parent.parent)}:{number}: {line.strip()}")
    assert not uses, "private pygls/openai APIs used outside cody_lsp/private_api/:\n" + "\n".join(uses)


def test_the_pins_match_the_versions_tested():
    """pyproject.toml pins pygls and openai to the minor versions these tests ran against."""
    pyproject = (FENCE.parent.parent / "pyproject.toml").read_text()
    for package, version in (("pygls", PYGLS_VERSION), ("openai", OPENAI_VERSION)):
        major, minor = (int(part) for part in version.split(".")[:2])
        pin = re.search(rf'"{package}>=([0-9.]+),<{major}\.{minor + 1}"', pyproject)
        assert pin is not None and pin.group(1).split(".")[:2] == [str(major), str(minor)], (
            f"pyproject.toml should pin {package} to {major}.{minor}.x (installed: {version})"
        )


def _fresh(code: str) -> str:
    """Run `code` in a fresh interpreter (openai not imported yet); its stdout."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_model_client_loads_only_the_parts_of_openai_it_uses():
    """openai_parts.load_parts: the names the model client uses, without the API's types; no
    stand-in package left behind; a later `import openai` gives the very same objects."""
    out = _fresh(
        "import json, sys\n"
        "from cody_lsp.private_api.openai_parts import PARTS, load_parts\n"
        "parts = load_parts()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('openai'))\n"
        "left = [n for n in ('openai', 'openai.types', 'openai.lib') if n in sys.modules]\n"
        "import openai\n"
        "same = all(getattr(parts, name) is getattr(openai, name) for name in PARTS)\n"
        "full = sorted(m for m in sys.modules if m.startswith('openai'))\n"
        "print(json.dumps({'loaded': loaded, 'left': left, 'same': same, 'full': len(full)}))\n"
    )
    found = json.loads(out)
    assert found["left"] == [], "a stand-in package was left in sys.modules"
    assert found["same"], f"openai {OPENAI_VERSION}: a part loaded alone is not the object `import openai` gives"
    assert not [m for m in found["loaded"] if m.startswith(("openai.resources", "openai.types.chat"))]
    assert len(found["loaded"]) * 4 < found["full"], f"{len(found['loaded'])} of {found['full']} openai modules"


def test_the_parts_come_from_openai_when_it_was_imported_already():
    out = _fresh(
        "import openai\n"
        "from cody_lsp.private_api.openai_parts import PARTS, load_parts\n"
        "parts = load_parts()\n"
        "print(all(getattr(parts, name) is getattr(openai, name) for name in PARTS))\n"
    )
    assert out.strip() == "True"


def test_a_failed_partial_load_imports_all_of_openai():
    """A release that moved a module: the whole package is imported instead, as before."""
    out = _fresh(
        "import sys\n"
        "from cody_lsp.private_api import openai_parts\n"
        "def moved():\n"
        "    raise ImportError('moved')\n"
        "openai_parts._load_without_inits = moved\n"
        "parts = openai_parts.load_parts()\n"
        "import openai\n"
        "print(parts.AsyncOpenAI is openai.AsyncOpenAI, 'openai.types.chat' in sys.modules)\n"
    )
    assert out.split() == ["True", "True"]
