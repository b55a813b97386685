"""`cody-lsp mcp list`: the MCP servers in effect for a folder, started, with their state and tools.

Runs in this process (no server needed): it reads the definitions a run in the folder would use
(the environment's and the folder's; not the editor's setting nor an ACP session's), starts them —
a workspace-defined one only if it was approved for the folder — prints each one's state and tools,
and stops them. Exit code 1 if one of them failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from ..config import db_path
from ..protocol.wire import McpServer, to_wire
from ..server.core.folders import normalize_folder
from ..server.mcp.definitions import ServerDef
from ..server.mcp.hub import McpHub


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cody-lsp mcp", description="The MCP servers whose tools runs in a folder are offered."
    )
    commands = parser.add_subparsers(dest="subcommand", metavar="list", required=True)
    listing = commands.add_parser("list", help="start the folder's MCP servers and list their state and tools")
    listing.add_argument("--workspace", "-w", default=".", help="the workspace folder (default: this directory)")
    listing.add_argument("--json", action="store_true", help="print the servers as JSON (cody/listMcpServers' shape)")
    return parser


async def servers_of(folder: str) -> list[McpServer]:
    hub = McpHub()
    found = hub.definitions(folder)
    decisions: dict[str, str | None] = {}
    if any(isinstance(d, ServerDef) and d.source == "workspace" for d in found):
        decisions = await _approvals(folder, found)

    async def approved(definition: ServerDef) -> bool:
        return decisions.get(definition.fingerprint()) == "allowed"

    async def decided(definition: ServerDef) -> str | None:
        return decisions.get(definition.fingerprint())

    try:
        await hub.tools_for(found, approved)
        return await hub.status(found, decided)  # type: ignore[arg-type]
    finally:
        await hub.aclose()


async def _approvals(folder: str, found: list) -> dict[str, str | None]:
    """The user's answers about the folder's own servers, by definition (from the session database)."""
    from ..server.store.database import Store

    path = db_path()
    if not path.exists():
        return {}
    store = await Store.open(path)
    try:
        out: dict[str, str | None] = {}
        for definition in found:
            if isinstance(definition, ServerDef) and definition.source == "workspace":
                kept = await store.mcp_approvals.get(folder, definition.name)
                if kept is not None and kept[0] == definition.fingerprint():
                    out[definition.fingerprint()] = kept[1]
        return out
    finally:
        await store.close()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv[1:])
    try:
        folder = normalize_folder(str(Path(args.workspace).resolve()))
    except ValueError as exc:
        print(f"cody-lsp mcp: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("cody_lsp").setLevel(logging.ERROR)  # a server's failure is in its line below
    servers = asyncio.run(servers_of(folder))
    if args.json:
        print(json.dumps({"servers": to_wire(servers)}, indent=1))
    elif not servers:
        print(f'No MCP servers for {folder} (see the README, "MCP servers").')
    for server in [] if args.json else servers:
        print(f"{server.name} ({server.source}): {server.state}" + (f" — {server.reason}" if server.reason else ""))
        for tool in server.tools:
            print(f"  {tool.name}{' (read-only)' if tool.read_only else ''}: {tool.description[:100]}")
    return 1 if any(s.state == "failed" for s in servers) else 0
