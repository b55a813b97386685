"""/help on a terminal: each command beside what it does, the words of a long description wrapped
under that description (never back at the left edge, whatever the width); elsewhere as written."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

COMMAND_WIDTH = 17  # "  /diff [N|all]  ": a longer command has a line of its own
_ENTRY = re.compile(r"^  (\S(?:.*?\S)?)(?: {2,}(.*))?$")


def entries(text: str) -> list[tuple[str, str, str]]:
    """(heading, command, description) of each line of the help (continuation lines joined)."""
    out: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        if line.startswith("[bold]") and "[/]" in line:
            out.append((line[len("[bold]") :].partition("[/]")[0], "", ""))
        elif line.startswith("    ") and out and (out[-1][1] or out[-1][2]):
            heading, command, said = out[-1]
            out[-1] = (heading, command, f"{said} {line.strip()}".strip())
        elif (found := _ENTRY.match(line)) is not None:
            first, rest = found.group(1), found.group(2)
            if first.startswith("/"):
                out.append(("", first, rest or ""))
            else:  # a line of prose (the keys)
                out.append(("", "", line.strip()))
    return out


def print_help(console: Console, text: str, plain: Any) -> None:
    """`plain`: the help as written, for what is not a terminal."""
    if not console.is_terminal:
        console.print(plain)
        return
    from rich.table import Table

    def grid() -> Any:
        table = Table.grid(padding=0, pad_edge=False)
        table.add_column(no_wrap=True, width=COMMAND_WIDTH)
        table.add_column(ratio=1)
        return table

    table = grid()
    for heading, command, said in entries(text):
        if heading:
            if table.row_count:
                console.print(table)
                table = grid()
            console.print(Text(heading, style="bold"))
        elif command and len(command) + 4 > COMMAND_WIDTH:  # its own line, what it does under it
            if table.row_count:
                console.print(table)
                table = grid()
            console.print(Text("  " + command), no_wrap=True, overflow="ellipsis")
            table.add_row(Text(""), Text(said))
        elif command:
            table.add_row(Text("  " + command), Text(said))
        else:
            prose = Table.grid(padding=0, pad_edge=False)
            prose.add_column(no_wrap=True, width=2)
            prose.add_column(ratio=1)
            prose.add_row("", Text(said))
            if table.row_count:
                console.print(table)
                table = grid()
            console.print(prose)
    if table.row_count:
        console.print(table)
