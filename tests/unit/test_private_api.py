"""The private pygls and openai APIs cody-lsp relies on still exist, and only
cody_lsp/private_api/ uses them.

When an upgrade of pygls or openai removes or changes one of them, these tests say which
and where to fix it, instead of a server that fails at run time.
"""

from __future__ import annotations

import importlib.metadata
import inspect
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
FENCE = Path(private_api.__file__).parent  # the package: jsonrpc.py (pygls), openai_stream.py (openai)


def removed(package: str, version: str, name: str) -> str:
    return f"{package} {version} removed `{name}`; update cody_lsp/private_api/"


@pytest.mark.parametrize("name,params", sorted(private_api.PYGLS_PROTOCOL_METHODS.items()))
def test_pygls_protocol_methods_still_exist(name: str, params: tuple[str, ...]):
    method = getattr(JsonRPCProtocol, name, None)
    assert callable(method), removed("pygls", PYGLS_VERSION, name)
    found = tuple(p for p in inspect.signature(method).parameters if p != "self")
    assert found == params, (
        f"pygls {PYGLS_VERSION} changed the parameters of `{name}` from {params} to {found}; "
        "update cody_lsp/private_api/"
    )


@pytest.mark.parametrize("name", private_api.PYGLS_PROTOCOL_ATTRIBUTES)
def test_pygls_protocol_attributes_still_exist(name: str):
    protocol = JsonRPCProtocol(None, get_converter())  # type: ignore[arg-type]
    assert hasattr(protocol, name), removed("pygls", PYGLS_VERSION, name)


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


async def test_a_late_answer_to_a_withdrawn_request_is_dropped_quietly(caplog: pytest.LogCaptureFixture):
    """LSP clients answer a request the server withdrew ($/cancelRequest): no warning for it."""
    protocol = private_api.FencedProtocol(None, get_converter())
    protocol.write_message = lambda _data: None  # type: ignore[method-assign]
    protocol.send_request_async("cody/requestPermission", {}, msg_id="perm_1")
    protocol.forget_request("perm_1")
    with caplog.at_level("WARNING"):
        protocol._handle_response("perm_1", {"outcome": "allow"})
        protocol._handle_response("perm_unknown", {"outcome": "allow"})
    assert [r.getMessage() for r in caplog.records if "perm_1" in r.getMessage()] == []
    assert any("perm_unknown" in r.getMessage() for r in caplog.records)  # a truly unknown id still warns


async def test_a_cancel_for_a_request_already_answered_is_quiet(caplog: pytest.LogCaptureFixture):
    """A `$/cancelRequest` that crossed the answer (normal in LSP): no warning, nothing cancelled."""
    protocol = private_api.FencedProtocol(None, get_converter())
    with caplog.at_level("WARNING"):
        protocol.cancel_request("perm_answered")
    assert caplog.records == []
