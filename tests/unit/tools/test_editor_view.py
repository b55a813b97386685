"""The file tools with the editor: the overlay of open documents, edits through the editor, conflicts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cody_lsp.server.tools import ToolConfig, run_tool
from cody_lsp.server.tools.editor_view import (
    Change,
    OpenFile,
    Overlay,
    ReadLog,
    TextEdit,
    position_at,
    text_edit,
)


@dataclass
class FakeEditor:
    """An EditorSession whose documents and answers a test sets."""

    docs: dict[str, str] = field(default_factory=dict)  # path → text
    folders: Sequence[str] = ()
    encoding: str = "utf-16"
    can_edit: bool = True
    can_create: bool = True
    accept: bool = True
    save: bool = False  # write a created file's text to disk, as an editor that saves what it creates
    applied: list[Change] = field(default_factory=list)
    writes: list[tuple[str, str, int | None]] = field(default_factory=list)

    def open_files(self) -> list[OpenFile]:
        return [OpenFile(path, Path(path).as_uri(), text, 7) for path, text in self.docs.items()]

    async def apply(self, change: Change) -> bool:
        self.applied.append(change)
        if self.accept and self.save and change.create:
            Path(change.uri.removeprefix("file://")).write_text(change.text)
        return self.accept

    def written(self, uri: str, text: str, version: int | None) -> None:
        self.writes.append((uri, text, version))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.txt").write_text("saved notes\n")
    return root.resolve()


def cfg(editor: FakeEditor | None = None, reads: ReadLog | None = None) -> ToolConfig:
    return ToolConfig(editor=editor, reads=reads)


async def test_reads_see_the_unsaved_text(ws: Path):
    editor = FakeEditor({str(ws / "src/app.py"): "def main():\n    return 2  # unsaved\n"})
    r = await run_tool("read_file", {"path": "src/app.py"}, ws, cfg(editor))
    assert r.ok and "return 2  # unsaved" in r.content and "open in the editor" in r.content
    r = await run_tool("grep", {"pattern": "unsaved|return 1"}, ws, cfg(editor))
    assert r.content == "src/app.py:2:     return 2  # unsaved"
    r = await run_tool("grep", {"pattern": "return", "path": "src/app.py"}, ws, cfg(editor))
    assert r.content == "src/app.py:2:     return 2  # unsaved"
    r = await run_tool("read_file", {"path": "notes.txt"}, ws, cfg(editor))  # not open: the disk
    assert "saved notes" in r.content and "editor" not in r.content


async def test_documents_only_in_the_editor_are_listed_and_searched(ws: Path):
    editor = FakeEditor({str(ws / "src/new.py"): "NEW = True\n", str(ws / "draft/plan.md"): "# plan\n"})
    r = await run_tool("list_dir", {"path": "src"}, ws, cfg(editor))
    assert r.content.splitlines() == [
        "src/ (1 entries)",
        "app.py",
        "new.py  [unsaved: open in the editor, not on disk]",
    ]
    r = await run_tool("list_dir", {}, ws, cfg(editor))
    assert "draft/  [unsaved: open in the editor, not on disk]" in r.content.splitlines()
    r = await run_tool("list_dir", {"path": "draft"}, ws, cfg(editor))
    assert r.ok and "plan.md  [unsaved" in r.content
    r = await run_tool("glob", {"pattern": "**/*.py"}, ws, cfg(editor))
    assert r.content.splitlines() == ["src/app.py", "src/new.py  [unsaved: open in the editor, not on disk]"]
    r = await run_tool("grep", {"pattern": "NEW|plan"}, ws, cfg(editor))
    assert r.content.splitlines() == ["draft/plan.md:1: # plan", "src/new.py:1: NEW = True"]
    r = await run_tool("read_file", {"path": "draft/plan.md"}, ws, cfg(editor))
    assert "# plan" in r.content and "not saved to disk yet" in r.content


async def test_documents_outside_the_folder_are_never_read(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("disk secret\n")
    (ws / "link").symlink_to(outside)
    (ws / "inlink").symlink_to(ws / "src")
    editor = FakeEditor(
        {
            str(outside / "secret.txt"): "BUFFER SECRET\n",
            str(ws / "link" / "secret.txt"): "BUFFER SECRET via link\n",
            str(ws / "inlink" / "app.py"): "BUFFER through an inside link\n",
            str(ws / ".." / "outside" / "x.txt"): "BUFFER dotdot\n",
        }
    )
    for tool, args in [
        ("read_file", {"path": "link/secret.txt"}),
        ("read_file", {"path": str(outside / "secret.txt")}),
        ("read_file", {"path": "../outside/x.txt"}),
    ]:
        r = await run_tool(tool, args, ws, cfg(editor))
        assert not r.ok and "outside the workspace" in r.content and "BUFFER" not in r.content
    for args in [{"pattern": "BUFFER"}, {"pattern": "BUFFER", "path": "inlink"}]:
        r = await run_tool("grep", args, ws, cfg(editor))
        assert r.content.startswith("no matches for /BUFFER/")
    r = await run_tool("read_file", {"path": "inlink/app.py"}, ws, cfg(editor))
    assert "return 1" in r.content  # a document opened through a symlink is not that file's buffer
    r = await run_tool("list_dir", {}, ws, cfg(editor))
    assert "unsaved" not in r.content


async def test_a_folder_the_editor_names_through_a_symlink(ws: Path, tmp_path: Path):
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    editor = FakeEditor({str(alias / "notes.txt"): "typed in the editor\n"}, folders=[str(alias)])
    r = await run_tool("read_file", {"path": "notes.txt"}, ws, cfg(editor))
    assert "typed in the editor" in r.content
    # Without the folder's spelling the document is not known to be this folder's file.
    r = await run_tool("read_file", {"path": "notes.txt"}, ws, cfg(FakeEditor({str(alias / "notes.txt"): "x"})))
    assert "saved notes" in r.content


def test_overlay_build_keeps_only_files_of_the_folder(ws: Path, tmp_path: Path):
    files = [
        OpenFile(str(ws / "a.py"), "", "a", 1),
        OpenFile(str(ws), "", "the folder itself", 1),
        OpenFile(str(tmp_path / "wsx" / "b.py"), "", "a sibling with a common prefix", 1),
    ]
    overlay = Overlay.build(str(ws), files)
    assert overlay.get(("a.py",)) is not None and overlay.get(()) is None
    assert [d.parts for d in overlay.unsaved_below(())] == [("a.py",)]


# ---------------------------------------------------------------------- edits through the editor


async def test_edit_of_an_open_document_goes_through_the_editor(ws: Path):
    path = ws / "src/app.py"
    buffer = "# 😀 héllo\r\ndef main():\r\n    return 1\r\n"
    editor = FakeEditor({str(path): buffer})
    reads = ReadLog()
    await run_tool("read_file", {"path": "src/app.py"}, ws, cfg(editor, reads))
    r = await run_tool(
        "edit_file",
        {"path": "src/app.py", "old_string": "return 1\n", "new_string": "return 2\n"},
        ws,
        cfg(editor, reads),
    )
    assert r.ok and "applied in the editor" in r.content, r.content
    (change,) = editor.applied
    edited = buffer.replace("return 1", "return 2")
    assert change.label == "Cody: edit src/app.py" and change.version == 7 and not change.create
    assert change.edits == (TextEdit((2, 11), (2, 12), "2"),)  # only what differs
    assert change.text == edited and editor.writes == [(path.as_uri(), edited, 7)]
    assert path.read_text() == "def main():\n    return 1\n"  # the disk is untouched
    # The model wrote it: editing again needs no new read.
    editor.docs[str(path)] = edited
    r = await run_tool(
        "edit_file", {"path": "src/app.py", "old_string": "héllo", "new_string": "hello"}, ws, cfg(editor, reads)
    )
    assert r.ok and editor.applied[-1].edits == (TextEdit((0, 6), (0, 7), "e"),)  # 😀 counts 2 in UTF-16


async def test_a_declined_edit_is_written_to_disk(ws: Path):
    path = ws / "src/app.py"
    editor = FakeEditor({str(path): "def main():\n    return 1\n"}, accept=False)
    r = await run_tool("write_file", {"path": "src/app.py", "content": "print('hi')\n"}, ws, cfg(editor))
    assert r.ok and "written to disk (the editor declined" in r.content
    assert editor.applied[0].edits == (TextEdit((0, 0), (1, 12), "print('hi')"),)
    assert path.read_text() == "print('hi')\n"
    assert editor.writes == [(path.as_uri(), "print('hi')\n", 7)]


async def test_files_not_open_are_written_to_disk(ws: Path):
    editor = FakeEditor(can_create=False)
    r = await run_tool("write_file", {"path": "src/other.py", "content": "x = 1\n"}, ws, cfg(editor))
    assert r.content == "created src/other.py (6 bytes) — written to disk" and not editor.applied
    r = await run_tool("write_file", {"path": "src/other.py", "content": "x = 2\n"}, ws, cfg(FakeEditor()))
    assert r.content == "overwrote src/other.py (6 bytes) — written to disk"  # exists, not open: the disk
    r = await run_tool("write_file", {"path": "src/other.py", "content": "x = 3\n"}, ws, cfg())
    assert r.content == "overwrote src/other.py (6 bytes)"  # no editor: as before


async def test_a_new_file_is_created_through_an_editor_that_creates_files(ws: Path):
    editor = FakeEditor()
    r = await run_tool("write_file", {"path": "src/pkg/new.py", "content": "A = 1\n"}, ws, cfg(editor))
    assert r.ok and r.content.startswith("created src/pkg/new.py (6 bytes) — created in the editor"), r.content
    assert "no content until the user saves it" in r.content and r.changed == str(ws / "src/pkg/new.py")
    (change,) = editor.applied
    assert change.uri == (ws / "src/pkg/new.py").as_uri() and change.create and change.version is None
    assert change.edits == (TextEdit((0, 0), (0, 0), "A = 1\n"),) and change.label == "Cody: create src/pkg/new.py"
    assert editor.writes == [(change.uri, "A = 1\n", None)]  # reads see its text until the editor reports it
    assert not (ws / "src/pkg/new.py").exists()
    saving = FakeEditor(save=True)  # an editor that saves what it creates: the model is told it is on disk
    r = await run_tool("write_file", {"path": "made.py", "content": "B = 2\n"}, ws, cfg(saving))
    assert (
        r.content == "created made.py (6 bytes) — created through the editor (the user can undo it there), and on disk"
    )
    declining = FakeEditor(accept=False)
    r = await run_tool("write_file", {"path": "other.py", "content": "C = 3\n"}, ws, cfg(declining))
    assert r.content.endswith("written to disk (the editor declined to apply it)")
    assert (ws / "other.py").read_text() == "C = 3\n"


async def test_an_unsaved_new_document_is_created_then_edited(ws: Path):
    path = ws / "src/new.py"
    editor = FakeEditor({str(path): ""})
    r = await run_tool("write_file", {"path": "src/new.py", "content": "A = 1\n"}, ws, cfg(editor))
    assert r.ok and r.content.startswith("created src/new.py") and "created in the editor" in r.content
    assert "until the user saves it" in r.content  # a new file, not on disk yet: said so
    (change,) = editor.applied
    assert change.create and change.edits == (TextEdit((0, 0), (0, 0), "A = 1\n"),)
    assert not path.exists()
    editor.can_create = False
    await run_tool("write_file", {"path": "src/new.py", "content": "A = 2\n"}, ws, cfg(editor))
    assert not editor.applied[-1].create


async def test_an_editor_that_cannot_edit_gets_the_disk_written(ws: Path):
    path = ws / "notes.txt"
    editor = FakeEditor({str(path): "buffer notes\n"}, can_edit=False)
    r = await run_tool(
        "edit_file", {"path": "notes.txt", "old_string": "buffer", "new_string": "edited"}, ws, cfg(editor)
    )
    assert r.ok and r.content.endswith("— written to disk") and not editor.applied
    assert path.read_text() == "edited notes\n"  # the edit was made to what the model saw: the buffer
    assert editor.writes == [(path.as_uri(), "edited notes\n", 7)]


def test_text_edit_positions():
    text = "a\r\nb😀c\nd"
    assert position_at(text, 3, "utf-16") == (1, 0)
    assert position_at(text, 5, "utf-16") == (1, 3) and position_at(text, 5, "utf-8") == (1, 5)
    assert position_at(text, len(text), "utf-16") == (2, 1)
    # An edge between \r and \n is moved so that the edit never splits a line ending.
    assert text_edit(text, 2, 3, "", "utf-16") == TextEdit((0, 1), (1, 0), "\r")
    assert text_edit(text, 0, 2, "x", "utf-16") == TextEdit((0, 0), (1, 0), "x\n")
    # Only what differs is replaced.
    assert text_edit("keep OLD keep", 0, 13, "keep NEW keep", "utf-16") == TextEdit((0, 5), (0, 8), "NEW")
    assert text_edit("aaa", 0, 3, "aaaa", "utf-16") == TextEdit((0, 3), (0, 3), "a")


# ---------------------------------------------------------------------- conflicts


async def test_an_edit_after_the_file_changed_is_refused_until_it_is_read_again(ws: Path):
    path = ws / "notes.txt"
    reads = ReadLog()
    edit = {"path": "notes.txt", "old_string": "notes", "new_string": "NOTES"}
    assert (await run_tool("read_file", {"path": "notes.txt"}, ws, cfg(None, reads))).ok
    path.write_text("saved notes, and the user's newer typing\n")
    r = await run_tool("edit_file", edit, ws, cfg(None, reads))
    assert not r.ok and "changed since you last read it" in r.content and "read it again" in r.content.lower()
    assert "the file on disk" in r.content and path.read_text().startswith("saved notes, and")
    r = await run_tool("write_file", {"path": "notes.txt", "content": "overwritten"}, ws, cfg(None, reads))
    assert not r.ok and "changed since you last read it" in r.content
    await run_tool("read_file", {"path": "notes.txt", "start_line": 1, "end_line": 1}, ws, cfg(None, reads))
    r = await run_tool("edit_file", edit, ws, cfg(None, reads))
    assert r.ok and path.read_text() == "saved NOTES, and the user's newer typing\n"
    # What the tool wrote is what the model knows: a second edit needs no new read.
    r = await run_tool(
        "edit_file", {"path": "notes.txt", "old_string": "newer", "new_string": "new"}, ws, cfg(None, reads)
    )
    assert r.ok
    path.unlink()
    r = await run_tool("write_file", {"path": "notes.txt", "content": "back"}, ws, cfg(None, reads))
    assert not r.ok and "it was deleted" in r.content


async def test_typing_in_the_editor_after_the_read_is_a_conflict(ws: Path):
    path = ws / "src/app.py"
    editor, reads = FakeEditor({str(path): "def main():\n    return 1\n"}), ReadLog()
    await run_tool("read_file", {"path": "src/app.py"}, ws, cfg(editor, reads))
    editor.docs[str(path)] = "def main():\n    return 1  # the user typed this\n"
    r = await run_tool(
        "edit_file", {"path": "src/app.py", "old_string": "1", "new_string": "2"}, ws, cfg(editor, reads)
    )
    assert not r.ok and "its text in the editor" in r.content and not editor.applied
    # A file never read in the session is the model's to change (it matches old_string exactly).
    r = await run_tool(
        "edit_file", {"path": "notes.txt", "old_string": "saved", "new_string": "kept"}, ws, cfg(editor, reads)
    )
    assert r.ok


async def test_a_partial_read_gives_no_baseline(ws: Path):
    """A read stopped by the scan limit did not see the whole file: no conflict can be judged, none is claimed."""
    reads = ReadLog()
    big = ws / "big.txt"
    big.write_text("x\n" * 600_000)
    small = ToolConfig(reads=reads, max_scan_bytes=1 << 20)
    await run_tool("read_file", {"path": "big.txt", "end_line": 1}, ws, small)
    big.write_text("y\n" * 600_000)
    r = await run_tool("write_file", {"path": "big.txt", "content": "z"}, ws, small)
    assert r.ok, r.content
    assert os.path.getsize(big) == 1
