"""The answer as Markdown on a terminal, and the bottom of the screen while a run goes.

`MarkdownBlocks` cuts streamed text into Markdown blocks: a block is complete at a blank
line outside a code fence, or when its fence closes. Each complete block is rendered with
rich (code blocks highlighted) and printed for good; the block still streaming is shown
as it comes, raw, in the `LiveArea` — the bottom of the screen that rich redraws below
whatever else is printed — with, under it, the line the user is typing during the run, so
neither is ever mixed into the other. Only a terminal that can move the cursor gets this;
elsewhere text is written as it comes, plain and whole (render.py).
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_THEME = "monokai"


class MarkdownBlocks:
    """Streamed text in, complete Markdown blocks out."""

    def __init__(self) -> None:
        self._lines: list[str] = []  # the complete lines of the block in progress
        self._partial = ""  # the line in progress
        self._fence: str | None = None  # the open fence's marker (``` or ~~~, as long as opened)

    def feed(self, text: str) -> list[str]:
        """The blocks `text` completes (their source, without the blank line that ended them)."""
        done: list[str] = []
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            if self._fence is not None:
                self._lines.append(line)
                if line.strip().startswith(self._fence) and set(line.strip()) == {self._fence[0]}:
                    done.append(self._take())
                    self._fence = None
                continue
            fence = _FENCE.match(line)
            if fence:
                if self._lines:  # a fence ends the paragraph before it
                    done.append(self._take())
                self._fence = fence.group(1)
                self._lines = [line]
            elif not line.strip():
                if self._lines:
                    done.append(self._take())
            else:
                self._lines.append(line)
        return done

    def pending(self) -> str:
        """What is shown raw while it streams: the block in progress."""
        return "\n".join([*self._lines, self._partial]) if self._lines else self._partial

    def finish(self) -> str | None:
        """The rest, as the last block (the text ended), or None if nothing is left."""
        if self._partial.strip():
            self._lines.append(self._partial)
        self._partial = ""
        self._fence = None
        return self._take() if self._lines else None

    def discard(self) -> None:
        self._lines, self._partial, self._fence = [], "", None

    def _take(self) -> str:
        block, self._lines = "\n".join(self._lines), []
        return block


def spacing(block: str) -> tuple[bool, bool]:
    """Whether a block as printed (markdown(): its blank lines at the ends dropped) starts, and
    ends, with a blank-looking line of its own: never — one blank line goes between two blocks."""
    return False, False


_MARKDOWN: Any = None


def _markdown_class() -> Any:
    """rich's Markdown with headings flush left (rich centres a `# heading`)."""
    global _MARKDOWN
    if _MARKDOWN is None:
        from rich.markdown import Heading, Markdown

        class LeftHeading(Heading):
            LEVEL_ALIGN = dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6"), "left")

        class LeftMarkdown(Markdown):
            elements = {**Markdown.elements, "heading_open": LeftHeading}

        _MARKDOWN = LeftMarkdown
    return _MARKDOWN


def markdown(source: str) -> Any:
    """A block as rich renders it (rich.markdown is imported only when a terminal shows Markdown),
    headings flush left, without blank lines at its ends or two in a row (_Tidy)."""
    return _Tidy(_markdown_class()(source, code_theme=CODE_THEME, hyperlinks=False))


class _Tidy:
    """A renderable's lines without blank lines at its start and end, and one blank line at most
    in a row (a line of spaces on a background, a code block's padding, is not blank)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = console.render_lines(self.inner, options, pad=False)

        def blank(line: list[Any]) -> bool:
            return all(not seg.text.strip() and not (seg.style and seg.style.bgcolor) for seg in line)

        kept: list[list[Any]] = []
        for line in lines:
            if blank(line) and (not kept or blank(kept[-1])):
                continue
            kept.append(line)
        while kept and blank(kept[-1]):
            kept.pop()
        for line in kept:
            yield from line
            yield Segment.line()


class LiveArea:
    """The bottom of the screen during a run: the text still streaming, then the typed line.

    Everything printed on the console meanwhile goes above it (rich's Live). Empty, it is not
    drawn at all. `pause()` takes it off the screen (a question is asked), `resume()` puts it back.
    """

    def __init__(self, console: Console):
        self.console = console
        self.tail = ""  # the block (or thinking line) still streaming
        self.tail_style = ""
        self.typed: str | None = None  # the line being typed during the run (None: nothing typed)
        self.notice: Any = None  # one line below the text, replaced in place (a retry's), or None
        self.output: list[Text] = []  # the last lines of a command running now (tool_output)
        self._live: Any = None
        self._paused = False

    def show(
        self,
        tail: str | None = None,
        style: str | None = None,
        typed: str | None | bool = False,
        notice: Any = False,
        output: list[Text] | None = None,
    ) -> None:
        """Change what is shown (`typed=False`, `notice=False`, `output=None`: keep them as they are)."""
        if output is not None:
            self.output = output
        if notice is not False:
            self.notice = notice
        if tail is not None:
            self.tail = tail
        if style is not None:
            self.tail_style = style
        if typed is not False:
            self.typed = typed if isinstance(typed, str) else None
        self._redraw()

    def pause(self) -> None:
        self._paused = True
        self._stop()

    def resume(self) -> None:
        self._paused = False
        self._redraw()

    def close(self) -> None:
        """Off the screen for good (the run ended); what was typed is kept for the next prompt."""
        self.tail = ""
        self.notice = None
        self.output = []
        self._stop()

    def _redraw(self) -> None:
        empty = not self.tail and not self.typed and self.notice is None and not self.output
        if self._paused or empty:
            self._stop()
            return
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                _Bottom(self),
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        self._live.refresh()

    def _stop(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()


class _Bottom:
    """The live area's lines: the last lines of the streaming block (a third of the screen at
    most), the last lines of a command running now, the retry's line, then the typed line, its end
    in view."""

    def __init__(self, area: LiveArea):
        self.area = area

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(10, options.max_width)
        area = self.area
        if area.tail:
            lines = Text(area.tail.replace("\t", "    "), style=area.tail_style).wrap(console, width)
            budget = max(3, console.height // 3)
            yield from list(lines)[-budget:]
        for line in area.output:
            shown = line.copy()
            shown.truncate(width, overflow="ellipsis")
            yield shown
        if area.notice is not None:
            notice = area.notice.copy() if isinstance(area.notice, Text) else Text(str(area.notice))
            notice.truncate(width, overflow="ellipsis")
            yield notice
        if area.typed is not None:
            room = width - 3
            typed = area.typed if Text(area.typed).cell_len <= room else "…" + area.typed[-(room - 1) :]
            yield Text.assemble(("› ", "bold green"), typed, ("▏", "dim"))
