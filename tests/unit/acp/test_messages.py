"""The ACP face's messages come from the pinned schema: the committed module is what it generates,
and what the face validates against is that schema's definitions."""

from __future__ import annotations

import json

import pytest

from cody_lsp.server.acp import generate, messages
from cody_lsp.server.acp.validate import Invalid, check, definitions


def test_the_committed_module_is_what_the_pinned_schema_generates():
    assert generate.OUTPUT.read_text() == generate.generate(), (
        "cody_lsp/server/acp/messages.py is stale: run `python -m cody_lsp.server.acp.generate` and commit it"
    )


def test_the_pin_is_schema_1_21_or_later_of_v1():
    source = json.loads((generate.PINNED / "source.json").read_text())
    assert tuple(int(part) for part in source["schemaVersion"].split(".")) >= (1, 21, 0)
    assert messages.PROTOCOL_VERSION == 1
    assert messages.PROTOCOL_METHODS == {"cancel_request": "$/cancel_request"}


def test_every_method_has_its_params_and_result_definitions():
    defs = definitions()
    for table in (
        messages.AGENT_REQUESTS,
        messages.AGENT_RESPONSES,
        messages.CLIENT_REQUESTS,
        messages.CLIENT_RESPONSES,
    ):
        assert all(name in defs for name in table.values())
    assert set(messages.AGENT_REQUESTS) == set(messages.AGENT_METHODS.values()) - {"session/cancel"}


@pytest.mark.parametrize(
    ("definition", "value", "message"),
    [
        ("PromptRequest", {"prompt": []}, "missing required field 'sessionId'"),
        ("PromptRequest", {"sessionId": 3, "prompt": []}, "'sessionId' must be a string, got the number 3"),
        ("PromptRequest", {"sessionId": "s", "prompt": [{"type": "x"}]}, "'prompt[0].type' must be one of 'text'"),
        ("PromptRequest", {"sessionId": "s", "prompt": [{"type": "text"}]}, "missing required field 'prompt[0].text'"),
        ("NewSessionRequest", {"cwd": "/x"}, "missing required field 'mcpServers'"),
        ("InitializeRequest", {"protocolVersion": 70000}, "'protocolVersion' must be between 0 and 65535"),
    ],
)
def test_a_value_that_does_not_fit_names_its_field(definition, value, message):
    with pytest.raises(Invalid) as info:
        check(definition, value)
    assert str(info.value).startswith(message)


def test_the_schemas_leniency_is_kept():
    # A field marked x-deserialize-default-on-error that does not fit is dropped (its default).
    assert check("InitializeRequest", {"protocolVersion": 1, "clientCapabilities": {"fs": "no", "terminal": 2}}) == {
        "protocolVersion": 1,
        "clientCapabilities": {},
    }
    # Fields the schema does not name are kept (a newer client may send more).
    assert check("ListSessionsRequest", {"cwd": "/x", "future": 1}) == {"cwd": "/x", "future": 1}


def test_the_committed_v2_module_is_what_the_pinned_v2_schema_generates():
    assert generate.OUTPUT_V2.read_text() == generate.generate_v2(), (
        "cody_lsp/server/acp/messages_v2.py is stale: run `python -m cody_lsp.server.acp.generate` and commit it"
    )


def test_v2_values_are_checked_against_v2s_definitions():
    from cody_lsp.server.acp import messages_v2

    assert messages_v2.PROTOCOL_VERSION == 2
    assert set(messages_v2.AGENT_REQUESTS) >= {"initialize", "session/new", "session/resume", "session/prompt"}
    assert "session/load" not in messages_v2.AGENT_REQUESTS and "fs/read_text_file" not in messages_v2.CLIENT_REQUESTS
    with pytest.raises(Invalid) as info:
        check("InitializeRequest", {"protocolVersion": 2}, version=2)
    assert str(info.value) == "missing required field 'info'"
    with pytest.raises(Invalid) as info:
        check("PromptRequest", {"sessionId": "s", "prompt": [{"type": "text"}]}, version=2)
    assert str(info.value) == "missing required field 'prompt[0].text'"
    # null where the schema says "default on null" is the default; unknown variants of open unions pass.
    assert check("ResumeSessionRequest", {"sessionId": "s", "cwd": "/x", "mcpServers": None}, version=2) == {
        "sessionId": "s",
        "cwd": "/x",
    }
    assert check("PromptRequest", {"sessionId": "s", "prompt": [{"type": "_x"}]}, version=2)["prompt"] == [
        {"type": "_x"}
    ]
