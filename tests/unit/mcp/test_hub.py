"""The hub against the real `mcp-server-time` (PyPI): tools, checked arguments, results, states,
stopping; and nothing of the SDK imported while no server is configured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cody_lsp.server.mcp import definitions as defs
from cody_lsp.server.mcp.hub import McpHub
from cody_lsp.server.tools import ToolConfig

TIME = str(Path(sys.executable).parent / "mcp-server-time")


def test_the_sdk_is_not_imported_without_a_server():
    code = (
        "import sys, cody_lsp.server.core.runs, cody_lsp.server.lsp.server, cody_lsp.server.mcp.hub\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'jsonschema', 'httpx2')]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_tools_calls_states_and_stopping(tmp_path: Path):
    hub = McpHub()
    found = defs.parse(
        {
            "time": {"command": TIME, "env": {"SERVICE_TOKEN": "tok-0123456789abcdef"}},
            "missing": {"command": str(tmp_path / "no-such-server")},
            "bad": {"url": "ftp://x"},
        },
        "user",
        "test",
    )
    tools, unavailable = await hub.tools_for(found, None)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"mcp__time__get_current_time", "mcp__time__convert_time"}
    now = by_name["mcp__time__get_current_time"]
    assert now.read_only and now.server == "time" and now.schema["function"]["parameters"]["required"] == ["timezone"]
    assert "was not found" in unavailable["missing"] and "http(s) URL" in unavailable["bad"]

    assert now.run is not None
    result = await now.run({"timezone": "UTC"}, tmp_path, ToolConfig())
    assert result.ok and '"timezone": "UTC"' in result.content
    wrong = await now.run({"timezone": 5}, tmp_path, ToolConfig())
    assert not wrong.ok and "do not fit its schema (at 'timezone')" in wrong.content
    refused = await now.run({"timezone": "Mars/Olympus"}, tmp_path, ToolConfig())
    assert not refused.ok  # the server's own isError
    short = await now.run({"timezone": "UTC"}, tmp_path, ToolConfig(max_result_chars=40))
    assert len(short.content) <= 40 + 100 and "truncated" in short.content

    listed = {s.name: s for s in await hub.status(found)}
    assert listed["time"].state == "ready" and {t.name for t in listed["time"].tools} == set(by_name)
    assert listed["missing"].state == "failed" and "started again when a run needs it" in (
        listed["missing"].reason or ""
    )
    assert listed["bad"].state == "failed"

    connection = next(iter(hub._connections.values()))
    pid = connection.pid
    assert pid is not None and os.path.exists(f"/proc/{pid}")
    await hub.aclose()
    assert not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] in "ZX"
    assert await hub.tools_for(found, None) == ([], {"bad": unavailable["bad"]})
