"""The terminal chat's review of a run's changes: `/diff [N]` and `/undo-hunks [numbers]`.

`/diff` shows the changes of the session's last run (`/diff N`: of turn N, as `/rewind` numbers the
turns; `/diff all`: of the whole session, since its first checkpoint) file by file: each hunk numbered, with the lines' numbers before and after, removed lines red,
added ones green, and the hunk's state now (`reverted`, `changed since` when it is neither what the run
left nor what was there before). `/undo-hunks 2 5` puts back hunks 2 and 5 of what `/diff` showed last
(`all`: every one); without numbers it shows the diff and asks. A hunk whose lines changed since is
refused (nothing is changed), and the revert itself can be undone: `/rewind` lists it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape
from rich.text import Text

from ..protocol.wire import ChangeList, RevertFile
from .connection import CodyError
from .render import print_line


@dataclass
class Shown:
    """What /diff showed last: the run, and hunk number → (file, index in the file)."""

    run_id: str | None
    label: str
    hunks: dict[int, tuple[str, int]] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)  # a number given to a file without hunks


class ReviewCommands:
    def __init__(self, chat: Any):
        self.chat = chat  # the Chat: its console, client, session, reader
        self.shown: Shown | None = None

    @property
    def console(self) -> Any:
        return self.chat.console

    async def _run_of(self, arg: str) -> tuple[str | None, str] | None:
        """(run id, its label) of turn `arg` (as /rewind numbers them), or of the last run."""
        client, session_id = self.chat.client, self.chat.session_id
        listing = await client.list_checkpoints(session_id)
        if listing.unavailable:
            self.console.print(f"[yellow]Checkpoints are off on this server:[/] {escape(listing.unavailable)}")
            return None
        numbered = list(enumerate(listing.checkpoints, 1))
        runs = [(n, c) for n, c in numbered if c.kind == "run" and c.run_id is not None]
        if not runs:
            self.console.print("[dim]No run of this session changed anything yet.[/]")
            return None
        if arg.lower() == "all":  # the session's changes since its first checkpoint
            return None, "this session"
        if not arg:
            number, info = runs[-1]
        else:
            found = [(n, c) for n, c in runs if str(n) == arg]
            if not found:
                self.console.print(f"[red]no turn {escape(arg)}[/]: /rewind lists them (1–{len(numbered)})")
                return None
            number, info = found[0]
        return info.run_id, f"turn {number}"

    async def diff(self, arg: str) -> Shown | None:
        if self.chat.session_id is None:
            self.console.print("[dim]Nothing to show yet: send a message first.[/]")
            return None
        run = await self._run_of(arg.strip())
        if run is None:
            return None
        run_id, label = run
        changes = await self.chat.client.list_changes(self.chat.session_id, run_id=run_id)
        self.shown = show_changes(self.console, changes, run_id, label)
        return self.shown

    async def undo_hunks(self, arg: str) -> None:
        words = arg.replace(",", " ").split()
        if self.shown is None or not words:
            shown = await self.diff("")
            if shown is None or not (shown.hunks or shown.files):
                return
            if not words:
                try:
                    picked = await self.chat.reader.read("Undo which hunks? (numbers, or all; Enter: none) ", ask=True)
                except (EOFError, KeyboardInterrupt):
                    return
                words = picked.replace(",", " ").split()
                if not words:
                    return
        shown = self.shown
        assert shown is not None
        numbers = set(shown.hunks) | set(shown.files)
        chosen = sorted(numbers) if [w.lower() for w in words] == ["all"] else []
        if not chosen:
            for word in words:
                if not word.isdigit() or int(word) not in numbers:
                    self.console.print(f"[red]no hunk {escape(word)}[/]: /diff numbers them (1–{max(numbers)})")
                    return
                chosen.append(int(word))
        files: dict[str, list[int] | None] = {}
        for number in chosen:
            if number in shown.files:
                files[shown.files[number]] = None
            else:
                path, index = shown.hunks[number]
                if path not in files or files[path] is not None:
                    files.setdefault(path, [])
                    kept = files[path]
                    assert kept is not None
                    kept.append(index)
        try:
            result = await self.chat.client.revert_changes(
                self.chat.session_id, run_id=shown.run_id, files=[RevertFile(p, h) for p, h in files.items()]
            )
        except CodyError as exc:
            self.console.print(f"[red]not undone[/]: {escape(exc.message)}", soft_wrap=True)
            return
        for change in result.files:
            self.console.print(f"  {escape(change.path)} [dim]({change.status})[/]", soft_wrap=True)
        self.console.print(
            f"[green]Undone[/]: {len(chosen)} hunk(s) of {shown.label}. [dim]To undo this: /rewind, then its last entry.[/]",
            soft_wrap=True,
        )
        self.shown = None  # numbers are of the listing before the revert


def show_changes(console: Any, changes: ChangeList, run_id: str | None, label: str) -> Shown:
    """Print the changes, numbering the hunks (and the files without hunks) from 1."""
    shown = Shown(run_id, label)
    if not changes.files:
        console.print(f"[dim]No file changed in {label}.[/]")
        return shown
    console.print(f"[bold]Changes of {label}[/] [dim]({len(changes.files)} file(s))[/]")
    number = 0
    for file in changes.files:
        console.print(Text.assemble((file.path, "bold"), ("  " + file.status, "dim")), soft_wrap=True)
        if not file.hunks:
            number += 1
            shown.files[number] = file.path
            what = "binary" if file.binary else file.status
            console.print(f"  [bold]\\[{number}][/] [dim]the whole file ({what})[/]")
            continue
        for index, hunk in enumerate(file.hunks):
            number += 1
            shown.hunks[number] = (file.path, index)
            state = {"reverted": " · reverted", "changed": " · changed since: cannot be undone"}.get(
                hunk.state or "", ""
            )
            header = f"@@ -{hunk.old_start},{hunk.old_lines} +{hunk.new_start},{hunk.new_lines} @@"
            console.print(Text.assemble(("  [" + str(number) + "] ", "bold"), (header, "cyan"), (state, "yellow")))
            old, new = (
                hunk.old_start if hunk.old_lines else hunk.old_start + 1,
                hunk.new_start if hunk.new_lines else hunk.new_start + 1,
            )
            width = len(str(max(hunk.old_start + hunk.old_lines, hunk.new_start + hunk.new_lines)))
            for line in hunk.lines:
                mark, text = line[:1], line[1:]
                if mark == "-":
                    numbers, style, old = f"{old:>{width}} {'':>{width}}", "red", old + 1
                elif mark == "+":
                    numbers, style, new = f"{'':>{width}} {new:>{width}}", "green", new + 1
                else:
                    numbers, style = f"{old:>{width}} {new:>{width}}", "dim"
                    old, new = old + 1, new + 1
                print_line(console, Text.assemble(("    " + numbers + " ", "dim"), (f"{mark or ' '} {text}", style)))
    return shown
