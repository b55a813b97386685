"""A tools/call result as text; MCP names in the tool policy, the rules and the options."""

from __future__ import annotations

from cody_lsp.server.core.permissions import ToolPolicy, options_for, rule_covers
from cody_lsp.server.mcp.results import result_text
from cody_lsp.server.store.records import RuleRecord
from cody_lsp.server.tools import builtin_tools
from cody_lsp.server.tools.toolset import OfferedTool


def test_every_kind_of_content():
    ok, text = result_text(
        {
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "A" * 400, "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA"}},
                {"type": "resource_link", "name": "c", "uri": "file:///c", "description": "the c file"},
                {"type": "hologram"},
            ]
        }
    )
    assert ok
    assert text.split("\n") == [
        "hello",
        "[image: image/png, 300 bytes; the image itself is not shown]",
        "[audio: audio/wav, 3 bytes; the audio itself is not shown]",
        "[resource file:///a.txt (text/plain)]",
        "body",
        "[resource file:///b.bin: binary, 3 bytes; not shown]",
        "[resource link: c file:///c] the c file",
        "[a content block of type 'hologram', which cody-lsp does not show]",
    ]
    assert result_text({"content": [], "isError": True}) == (False, "(the tool returned no content)")
    assert result_text({"content": [], "structuredContent": {"a": 1}}) == (True, '{\n "a": 1\n}')


def test_mcp_names_in_the_policy():
    policy = ToolPolicy({"mcp__db__*": "deny", "mcp__db__read": "allow", "mcp__gone__x": "allow"})
    assert policy.problem is None  # servers come and go: never a configuration error
    assert policy.decision("mcp__db__drop") == "deny"
    assert policy.decision("mcp__db__read") == "allow"  # the tool's own entry wins
    assert policy.decision("mcp__time__now") == "ask"  # read-only or not, asked by default
    assert ToolPolicy({"nope": "allow"}).problem is not None


def test_a_rule_for_a_whole_server_and_the_offered_pattern():
    rule = RuleRecord("rule_1", "mcp__db__*", "folder", "/w", "t")
    assert rule_covers(rule, "mcp__db__query", {}) and not rule_covers(rule, "mcp__dbx__query", {})
    assert options_for("mcp__db__query", {}).tool_pattern == "mcp__db__*"
    assert options_for("write_file", {}).tool_pattern is None


def test_a_run_tool_set_names_what_is_missing():
    async def run(*_args):
        raise AssertionError

    tool = OfferedTool("mcp__db__q", {"type": "function"}, True, run, "db")
    tools = builtin_tools().plus([tool], {"gone": "stopped: it exited with code 1"})
    assert tools.get("mcp__db__q") is tool and tools.read_only().get("mcp__db__q") is tool
    assert (
        tools.why_missing("mcp__gone__x")
        == "mcp__gone__x is not available: the MCP server gone stopped: it exited with code 1"
    )
    assert "no MCP server named 'other'" in (tools.why_missing("mcp__other__x") or "")
    assert tools.why_missing("read_file") is None
