"""The language servers code_nav may start: the chat's `/lsp` (with their state, from the server) and
`cody-lsp config` (the definitions in effect, read without a server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from ..config_file import config_path
from ..server.langservers.definitions import BadDef, definitions_for
from .render import print_table


async def show_language_servers(console: Any, client: Any, folder: Path) -> None:
    """/lsp: the folder's language servers and their state."""
    servers = await client.list_language_servers(folder)
    if not servers:
        console.print(
            "[dim]No language server is configured: code_nav asks the editor, when it answers, or none. Add one in "
            f'{escape(str(config_path()))}: [language_servers.NAME] command = [...], extensions = [".py"][/]',
            soft_wrap=True,
        )
        return
    rows = []
    for server in servers:
        state = server.state + (f" ({server.approval})" if server.approval else "")
        rows.append([server.name, " ".join(server.command), " ".join(server.extensions), state, server.source])
    print_table(console, ["server", "command", "files", "state", "from"], rows)
    for server in servers:
        if server.reason:
            console.print(f"  [dim]{escape(server.name)}: {escape(server.reason)}[/]", soft_wrap=True)


def language_server_rows(folder: Path) -> tuple[list[list[str]], list[str]]:
    """`cody-lsp config`: the definitions in effect for `folder` (rows), and what is wrong with some."""
    rows, problems = [], []
    for definition in definitions_for(str(folder), config_path()):
        if isinstance(definition, BadDef):
            problems.append(definition.reason)
            continue
        source = "config file" if definition.source == "user" else "workspace (.cody/config.toml; needs your approval)"
        rows.append([definition.name, " ".join(definition.command), " ".join(definition.extensions), source])
    return rows, problems
