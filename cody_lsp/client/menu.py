"""A question with a few answers, one a line (the approval menu):

    Allow edit_file?
    ❯ 1. Yes (y)
      2. Yes, always in this session (a)
      n. No, and tell the agent what to do instead (n)
      v. View the whole change (v)

A number, or an answer's letter, picks it at once; on a terminal that can move the cursor ↑/↓
move the highlighted answer and Enter picks it. Each answer is wrapped at the words (never inside
one) to the terminal's width. Once picked, the menu gives way to one line: the question and the
answer. Where stdin is not a terminal a line is read (a number, a letter or a word of an answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.control import Control, ControlType
from rich.text import Text

from .reader import LineReader

UP = ("\x1b[A", "\x1bOA", "k")
DOWN = ("\x1b[B", "\x1bOB", "j")
ENTER = ("\r", "\n", "\r\n")
ESCAPE = "\x1b"
MARK = "❯ "


def keys_of(data: str) -> list[str]:
    """The keys of what one read of the terminal got: an escape sequence (an arrow), Enter, or a
    character each (a key and Enter typed fast arrive together)."""
    keys: list[str] = []
    i = 0
    while i < len(data):
        if data[i] == ESCAPE and i + 2 < len(data) + 1 and data[i + 1 : i + 2] in ("[", "O"):
            end = i + 2
            while end < len(data) and not ("@" <= data[end] <= "~"):
                end += 1
            keys.append(data[i : end + 1])
            i = end + 1
        elif data[i : i + 2] == "\r\n":
            keys.append("\r")
            i += 2
        else:
            keys.append(data[i])
            i += 1
    return keys


@dataclass(frozen=True)
class Option:
    """An answer: its number or letter in the menu, its words, the keys that pick it, and what it stands for."""

    number: str  # "1", "2", … or "n", "v"
    label: str
    keys: tuple[str, ...]  # letters (and words, for a typed line) that pick it too
    value: Any


def option_text(option: Option, focused: bool) -> Text:
    hint = f" ({option.keys[0]})" if option.keys and option.keys[0] != option.number else ""
    style = "bold cyan" if focused else ""
    return Text.assemble(
        (MARK if focused else "  ", "bold cyan"),
        (f"{option.number}. ", style or "dim"),
        (option.label, style),
        (hint, "dim"),
    )


def option_lines(option: Option, focused: bool, console: Console, width: int) -> list[Text]:
    """An answer's lines at `width`: wrapped at the words, the lines after the first indented
    under its words (never broken inside a word, unless one is wider than the line)."""
    text = option_text(option, focused)
    indent = len(MARK) + len(option.number) + 2
    head, body = text[:indent], text[indent:]
    lines = body.wrap(console, max(10, width - indent), overflow="fold")
    return [Text.assemble(head if i == 0 else " " * indent, line) for i, line in enumerate(lines)]


class Menu:
    def __init__(self, console: Console, reader: LineReader):
        self.console = console
        self.reader = reader

    @property
    def moves(self) -> bool:
        """Whether the menu can be redrawn in place (a terminal that moves the cursor)."""
        return self.reader.interactive and self.console.is_terminal and not self.console.is_dumb_terminal

    def _lines(self, title: Text, options: Sequence[Option], focus: int | None) -> list[Text]:
        width = max(20, self.console.width) if self.console.is_terminal else 10_000
        out = [title]
        for i, option in enumerate(options):
            out += option_lines(option, i == focus, self.console, width)
        return out

    def _height(self, lines: list[Text]) -> int:
        width = max(20, self.console.width)
        return sum(len(line.wrap(self.console, width, overflow="fold")) for line in lines)

    def _draw(self, lines: list[Text]) -> None:
        for line in lines:
            self.console.print(line, overflow="fold", soft_wrap=False)

    def _erase(self, height: int) -> None:
        """Take the last `height` screen lines back (each erased), the cursor at the first."""
        if height <= 0:
            return
        controls = [Control.move_to_column(0)]
        for _ in range(height):
            controls.append(Control((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)))
        self.console.control(*controls)

    async def choose(self, title: Text, options: Sequence[Option], *, focus: int = 0) -> Option:
        """The option picked (KeyboardInterrupt on Ctrl+C, EOFError on Ctrl+D or the end of input)."""
        if not self.reader.interactive:
            return await self._choose_by_line(title, options)
        by_key = self._keys(options)
        lines = self._lines(title, options, focus if self.moves else None)
        self._draw(lines)
        height = self._height(lines)
        while True:
            picked: Option | None = None
            moved = False
            for key in keys_of(await self.reader.read_press()):
                if key in UP and self.moves:
                    focus, moved = (focus - 1) % len(options), True
                elif key in DOWN and self.moves:
                    focus, moved = (focus + 1) % len(options), True
                elif key in ENTER and self.moves:
                    picked = options[focus]
                elif key == ESCAPE:
                    picked = next((o for o in options if "n" in o.keys), None)
                elif key.lower() in by_key:
                    picked = by_key[key.lower()]
                if picked is not None:
                    break
            if picked is None and not moved:
                continue
            if self.moves:
                self._erase(height)
            if picked is not None:
                self._picked(title, picked)
                return picked
            lines = self._lines(title, options, focus)
            self._draw(lines)
            height = self._height(lines)

    def _picked(self, title: Text, option: Option) -> None:
        """The menu's one line once answered (where it was redrawn in place; elsewhere the key is echoed)."""
        if self.moves:
            self.console.print(Text.assemble(title, " ", (option.label, "bold")), overflow="fold")
        else:
            self.console.print(Text(f"› {option.number}. {option.label}", style="dim"), overflow="fold")

    @staticmethod
    def _keys(options: Sequence[Option]) -> dict[str, Option]:
        by_key: dict[str, Option] = {}
        for option in options:
            for key in (option.number, *option.keys):
                by_key.setdefault(key.lower(), option)
        return by_key

    async def _choose_by_line(self, title: Text, options: Sequence[Option]) -> Option:
        self._draw(self._lines(title, options, None))
        by_key = self._keys(options)
        while True:
            answer = (await self.reader.read("answer (a number or a letter): ", ask=True)).strip().lower()
            picked = by_key.get(answer)
            if picked is not None:
                return picked
            keys = ", ".join(o.number for o in options)
            self.console.print(f"answer one of {keys}", style="dim", markup=False)
