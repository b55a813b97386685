"""The attachments of a `cody/run` message, made into the user message the model reads.

A client sends context with a prompt (protocol.md, "Attachments"): files (a line range, or a
folder's listing), a selection, the editor's problems, terminal text, images. `user_input` reads
and checks them when the message is taken in — what the model sees is what was sent then — and
gives a `UserInput`: the typed text, the model's content (text, then one part per image), and
the attachments as the history keeps them (text cut as the model got it, an image without its data).

The model's text, stable and delimited: a header per attachment, a file as `read_file` shows it
(line numbers; the open document's unsaved text; confined to the session's folder exactly as the
file tools are, never version-control metadata), raw text in a fence longer than any run of
backticks in it, then the message::

    [Attachments: 2]

    [Attachment 1: file app.py, lines 10-20]
    [lines 10-20 of 120 in app.py]
        10	def main():
    …

    [Attachment 2: terminal output (bash)]
    ```
    $ pytest
    ```

    [Message]
    fix the failing test

Sizes: each attachment's text at most `attachment_max_chars`, all of a message's at most
`attachments_max_chars` and half the model's context; where something is cut, a note says so.
An attachment that cannot be used (not found, outside the folder, binary, a bad image, an image
for a model that takes none) fails the request with InvalidParams naming it: nothing is queued.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import attrs

from ...config import EditorContext
from ...protocol.wire import Attachment, FileDiagnostics, InvalidParams
from ...secrets import env_secrets, redact_all
from ..tools import ToolConfig, ToolError
from ..tools.files import attached_file
from .budget import CHARS_PER_TOKEN, TokenBudget
from .history import UserInput
from .images import takes_images
from .problems import problem_text
from .problems import where as where_in

MAX_ATTACHMENTS = 50  # per message
MAX_PROBLEMS = 2_000  # diagnostics read of one attachment (the rest are counted)
NOTE_ROOM = 400  # characters kept for the notes of an attachment that was cut

MAX_CHARS_SOURCE = "CODY_ATTACHMENT_MAX_CHARS, or the editor's cody.attachmentMaxChars"
TOTAL_SOURCE = "CODY_ATTACHMENTS_MAX_CHARS, or the editor's cody.attachmentsMaxChars"

# Image types models take, and how their data starts.
IMAGE_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
_DATA_URL = re.compile(r"data:([a-z]+/[a-z0-9.+-]+);base64,", re.IGNORECASE)


def text_room(settings: EditorContext, budget: TokenBudget) -> int:
    """Characters all the attachments of one message may take."""
    return max(min(settings.attachments_max_chars, budget.limit * CHARS_PER_TOKEN // 2), 1)


def fence(text: str) -> str:
    """A Markdown fence longer than any run of backticks in `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def fenced(text: str) -> str:
    mark = fence(text)
    return f"{mark}\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}{mark}"


def _problem(where: str, value: str) -> InvalidParams:
    return InvalidParams(f"{where}: {value}")


def _path_of(raw: str) -> str:
    """A file:// URI as a path; anything else as given."""
    if raw.startswith("file:"):
        url = urlparse(raw)
        return unquote(url.path) or "/"
    return raw


def _shown_path(uri: str, folder: Path) -> str:
    """A problem's file as the model sees it: relative to the folder when inside it."""
    path = _path_of(uri)
    if path.startswith("/"):
        try:
            return Path(path).relative_to(folder).as_posix()
        except ValueError:
            return path
    return path


class _Builder:
    def __init__(self, folder: Path, tools: ToolConfig, settings: EditorContext, model: str, budget: TokenBudget):
        self.folder = folder
        self.tools = tools
        self.settings = settings
        self.model = model
        self.total = text_room(settings, budget)  # characters all the attachments may take
        self.room = self.total  # of those, left
        self.secrets = env_secrets(os.environ)

    def limit(self) -> int:
        """Characters the next attachment may take."""
        return min(self.settings.attachment_max_chars, self.room)

    def cut_note(self, limit: int) -> str:
        if limit < self.settings.attachment_max_chars:
            return (
                f"the attachments of one message are limited to {self.total:,} characters "
                f"({TOTAL_SOURCE}; at most half the model's context)"
            )
        return f"one attachment is limited to {limit:,} characters ({MAX_CHARS_SOURCE})"

    def clean(self, text: str) -> str:
        return redact_all(text, self.secrets)

    # ------------------------------------------------------------------ each kind

    async def file(self, where: str, item: Attachment, limit: int) -> tuple[str, str, bool]:
        if not item.path:
            raise _problem(where, "a file attachment needs 'path'")
        if item.start_line is not None and item.end_line is not None and item.end_line < item.start_line:
            raise _problem(where, f"'endLine' ({item.end_line}) is before 'startLine' ({item.start_line})")
        path = _path_of(item.path)
        editor = self.tools.editor
        args: dict[str, Any] = {"path": path, "folders": list(editor.folders) if editor is not None else []}
        if item.start_line is not None:
            args["start_line"] = item.start_line
        if item.end_line is not None:
            args["end_line"] = item.end_line
        config = dataclasses.replace(self.tools, max_result_chars=limit + NOTE_ROOM)
        try:
            result = await attached_file(Path(os.path.realpath(self.folder)), args, config)
        except ToolError as exc:
            raise _problem(where, f"the file '{item.path}' cannot be attached: {exc}") from None
        text = self.clean(result.content)
        truncated = "\n…[truncated: " in text or "more entries not shown]" in text
        if truncated:
            text += f"\n[The attachment was cut: {self.cut_note(limit)}.]"
        lines = ""
        if item.start_line is not None or item.end_line is not None:
            lines = f", lines {item.start_line or 1}-{item.end_line if item.end_line is not None else 'end'}"
        return f"file {item.path}{lines}", text, truncated

    def text(self, where: str, item: Attachment, limit: int, *, keep_end: bool) -> tuple[str, str, bool]:
        if item.text is None:
            raise _problem(where, f"a {item.type} attachment needs 'text'")
        text = self.clean(item.text)
        truncated = len(text) > limit
        if truncated:
            cut = len(text) - limit
            text = text[cut:] if keep_end else text[:limit]
            place = "first" if keep_end else "last"
            text = f"{fenced(text)}\n[The {place} {cut:,} characters were cut: {self.cut_note(limit)}.]"
        else:
            text = fenced(text)
        if item.type == "terminal":
            label = f"terminal output ({item.name})" if item.name else "terminal output"
        else:
            lines = ""
            if item.start_line is not None:
                end = item.end_line if item.end_line is not None else item.start_line
                lines = f", lines {item.start_line}-{end}"
            label = f"selection in {item.path}{lines}" if item.path else "selection"
        return label, text, truncated

    def problems(self, where: str, item: Attachment, limit: int) -> tuple[str, str, bool]:
        if item.files is None:
            raise _problem(where, "a diagnostics attachment needs 'files'")
        rows: list[str] = []
        size, total, left = 0, 0, 0
        for file in item.files:
            for diagnostic in file.diagnostics:
                total += 1
                if total > MAX_PROBLEMS or left:
                    left += 1
                    continue
                row = f"- {_shown_path(file.uri, self.folder)}:{where_in(diagnostic)}: {problem_text(diagnostic)}"
                if size + len(row) + 1 > limit:
                    left += 1
                    continue
                rows.append(row)
                size += len(row) + 1
        text = self.clean("\n".join(rows)) if rows else "(none)"
        if left:
            text += f"\n[{left:,} more problems were left out: {self.cut_note(limit)}.]"
        return f"problems reported by the editor ({total:,})", text, bool(left)

    def image(self, where: str, item: Attachment) -> tuple[str, dict[str, Any], Attachment]:
        if not item.data_url:
            raise _problem(where, "an image attachment needs 'dataUrl'")
        if not takes_images(self.model, self.settings.model_images):
            raise _problem(
                where,
                f"the model '{self.model}' is not known to take images; leave the image out, or set "
                "CODY_MODEL_IMAGES=1 (the editor's cody.modelImages: true) if it does",
            )
        head = _DATA_URL.match(item.data_url)
        mime = head.group(1).lower() if head else ""
        if head is None or mime not in IMAGE_MAGIC:
            raise _problem(
                where,
                "'dataUrl' must be a base64 data URL of a PNG, JPEG, GIF or WebP image (data:image/png;base64,…)",
            )
        encoded = item.data_url[head.end() :]
        limit = self.settings.image_max_bytes
        if len(encoded) * 3 // 4 > limit + 3:
            raise _problem(
                where,
                f"the image is about {len(encoded) * 3 // 4:,} bytes; the limit is {limit:,} "
                "(CODY_IMAGE_MAX_BYTES, or the editor's cody.imageMaxBytes)",
            )
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise _problem(where, "'dataUrl' is not valid base64") from None
        if len(data) > limit:
            raise _problem(where, f"the image is {len(data):,} bytes; the limit is {limit:,} (CODY_IMAGE_MAX_BYTES)")
        magic = IMAGE_MAGIC[mime]
        if not data.startswith(magic) or (mime == "image/webp" and data[8:12] != b"WEBP"):
            raise _problem(where, f"the data is not a {mime.split('/')[1].upper()} image")
        name = item.name or f"image {mime.split('/')[1]}"
        part = {"type": "image_url", "image_url": {"url": item.data_url}}
        return name, part, Attachment("image", name=item.name, mime_type=mime, size=len(data))


async def user_input(
    prompt: str,
    attachments: list[Attachment],
    *,
    folder: Path,
    tools: ToolConfig,
    settings: EditorContext,
    model: str,
    budget: TokenBudget,
) -> UserInput:
    """The prompt with its attachments, as the model reads it; InvalidParams naming an
    attachment that cannot be used."""
    if len(attachments) > MAX_ATTACHMENTS:
        raise InvalidParams(f"'attachments' has {len(attachments)} items; at most {MAX_ATTACHMENTS} per message")
    build = _Builder(folder, tools, settings, model, budget)
    sections: list[str] = []
    images: list[dict[str, Any]] = []
    kept: list[Attachment] = []
    for i, item in enumerate(attachments):
        where = f"attachments[{i}]"
        number = f"Attachment {i + 1}"
        if item.type == "image":
            name, part, shown = build.image(where, item)
            images.append(part)
            kept.append(shown)
            sections.append(f"[{number}: image {name}, attached below]")
            continue
        limit = build.limit()
        if limit < NOTE_ROOM:
            sections.append(
                f"[{number}: {item.type} {item.path or item.name or ''} — left out: {build.cut_note(limit)}]"
            )
            kept.append(_history_form(item, True, 0))
            continue
        if item.type == "file":
            label, text, truncated = await build.file(where, item, limit)
        elif item.type == "diagnostics":
            label, text, truncated = build.problems(where, item, limit)
        else:
            label, text, truncated = build.text(where, item, limit, keep_end=item.type == "terminal")
        build.room -= min(len(text), build.room)
        sections.append(f"[{number}: {label}]\n{text}")
        kept.append(_history_form(item, truncated, limit))
    body = f"[Attachments: {len(attachments)}]\n\n" + "\n\n".join(sections) + f"\n\n[Message]\n{prompt}"
    content: str | list[dict[str, Any]] = body
    if images:
        content = [{"type": "text", "text": body}, *images]
    return UserInput(prompt, content, kept)


def _history_form(item: Attachment, truncated: bool, limit: int) -> Attachment:
    """An attachment as the history keeps it: as sent, its text cut as the model got it."""
    if not truncated:
        return item
    text = item.text
    if text is not None:
        text = (text[-limit:] if limit else "") if item.type == "terminal" else text[:limit]
    files = _first_problems(item.files, MAX_PROBLEMS) if item.files is not None else None
    return attrs.evolve(item, text=text, files=files, truncated=True)


def _first_problems(files: list[FileDiagnostics], limit: int) -> list[FileDiagnostics]:
    kept, left = [], limit
    for file in files:
        if left <= 0:
            break
        kept.append(FileDiagnostics(file.uri, file.diagnostics[:left]))
        left -= len(file.diagnostics)
    return kept
