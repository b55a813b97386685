"""`@path` in the terminal chat: a file (or folder) of the workspace attached to the message.

`@app.py`, `@src/` and `@app.py:10-20` (lines 10 to 20; `@app.py:12` one line) become `cody/run`
attachments of type `file` (protocol.md, "Attachments"); the text stays as typed. A mention that
names nothing in the folder stays text only (an e-mail address, a decorator), and the chat says
so. On a terminal, Tab completes the path after an `@` (`MentionCompleter`).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

MENTION = re.compile(r"(?<![\w@])@(?P<path>[^\s:@]+)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?(?=[\s,;.!?)]*(?:\s|$))")
SKIPPED = frozenset({".git", ".hg", ".svn", ".jj"})  # never attached, never offered
MAX_COMPLETIONS = 200


def mentions(text: str, folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The attachments the `@path` mentions of `text` name, and the mentions that name nothing."""
    attachments: list[dict[str, Any]] = []
    unknown: list[str] = []
    seen: set[tuple[str, int | None, int | None]] = set()
    for match in MENTION.finditer(text):
        raw = match.group("path").rstrip(".,;!?)")
        path = raw.rstrip("/") or raw
        start = int(match.group("start")) if match.group("start") else None
        end = int(match.group("end")) if match.group("end") else start
        target = folder / path
        if not _inside(target, folder) or SKIPPED & set(Path(path).parts) or not target.exists():
            unknown.append(match.group(0))
            continue
        key = (path, start, end)
        if key in seen:
            continue
        seen.add(key)
        item: dict[str, Any] = {"type": "file", "path": path}
        if start is not None and target.is_file():
            item["startLine"] = max(start, 1)
            item["endLine"] = max(end or start, start, 1)
        attachments.append(item)
    return attachments, unknown


def label(item: dict[str, Any]) -> str:
    """`app.py:10-20` for an attachment."""
    lines = f":{item['startLine']}-{item['endLine']}" if "startLine" in item else ""
    return f"{item['path']}{lines}"


def _inside(path: Path, folder: Path) -> bool:
    try:
        return os.path.realpath(path).startswith(os.path.realpath(folder).rstrip("/") + "/")
    except (OSError, ValueError):
        return False


def candidates(folder: Path, partial: str) -> Iterator[str]:
    """Paths of the folder that start with `partial` (a folder ends with `/`), sorted, bounded."""
    head, _, name = partial.rpartition("/")
    base = folder / head if head else folder
    if not _inside(base / "x", folder):
        return
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return
    shown = 0
    for entry in entries:
        if entry.name in SKIPPED or not entry.name.startswith(name):
            continue
        if name == "" and entry.name.startswith("."):
            continue  # hidden entries are offered once a dot is typed
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        yield f"{head + '/' if head else ''}{entry.name}{'/' if is_dir else ''}"
        shown += 1
        if shown >= MAX_COMPLETIONS:
            return


def completer(
    folder: Path, commands: Callable[[], list[str]] | None = None, ready: Callable[[], Awaitable[None]] | None = None
) -> Any:
    """A prompt_toolkit completer of the path after an `@`, and of a `/command` that starts the
    line (`commands`: the names, without `/`; `ready`: awaited first, until they are known) (imported
    on a terminal only)."""
    from prompt_toolkit.completion import Completer, Completion

    class MentionCompleter(Completer):
        async def get_completions_async(self, document: Any, complete_event: Any) -> AsyncGenerator[Completion, None]:
            if ready is not None and document.text_before_cursor.startswith("/"):
                await ready()
            for completion in self.get_completions(document, complete_event):
                yield completion

        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            before = document.text_before_cursor
            if commands is not None and before.startswith("/") and " " not in before:
                for name in sorted(set(commands())):
                    if name.startswith(before[1:]):
                        yield Completion("/" + name, start_position=-len(before), display="/" + name)
                return
            word = document.get_word_before_cursor(pattern=re.compile(r"@[^\s@]*"))
            if not word.startswith("@"):
                return
            partial = word[1:]
            for path in candidates(folder, partial):
                yield Completion("@" + path, start_position=-len(word), display=path)

    return MentionCompleter()
