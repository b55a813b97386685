"""Open documents: incremental sync against a reference model, line endings, encodings, the store."""

from __future__ import annotations

import random
import re

import pytest
from lsprotocol import types

from cody_lsp.server.lsp.documents import Document, DocumentStore, index_in_line, split_lines

ENCODINGS = ("utf-16", "utf-8", "utf-32")


# ---------------------------------------------------------------------- a reference: offsets in the whole text


def reference_lines(text: str) -> list[str]:
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text) + ([""] if re.search(r"(\r|\n)$|^$", text) else [])


def unit_len(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-16":
        return len(ch.encode("utf-16-le")) // 2
    return 1


def reference_offset(text: str, position: types.Position, encoding: str) -> int:
    lines = reference_lines(text)
    if position.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: position.line])
    content = lines[position.line].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(content):
        if units >= position.character:
            return start + i
        units += unit_len(ch, encoding)
    return start + len(content)


def reference_apply(text: str, range_: types.Range, new: str, encoding: str) -> str:
    a, b = sorted((reference_offset(text, range_.start, encoding), reference_offset(text, range_.end, encoding)))
    return text[:a] + new + text[b:]


PIECES = ["a", "bc", "déf", "😀", "\n", "\r\n", "\r", "  ", "x\u2028y", "\t", "é😀é"]


def random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(n))


def random_position(rng: random.Random, text: str) -> types.Position:
    lines = len(reference_lines(text))
    return types.Position(line=rng.randrange(lines + 2), character=rng.randrange(12))


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("seed", range(6))
def test_incremental_edits_match_the_reference(encoding: str, seed: int):
    rng = random.Random(seed)
    text = random_text(rng, 60)
    doc = Document.of("file:///t.txt", text)
    for _ in range(400):
        range_ = types.Range(random_position(rng, text), random_position(rng, text))
        new = random_text(rng, rng.randrange(4))
        text = reference_apply(text, range_, new, encoding)
        doc.apply(range_, new, encoding)
        assert doc.text == text
        assert doc.lines == reference_lines(text)
        assert all(line for line in doc.lines[:-1])  # only the last line may be empty


def test_split_lines_breaks_only_at_lsp_line_endings():
    assert split_lines("") == [""]
    assert split_lines("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    assert split_lines("a\n") == ["a\n", ""]
    assert split_lines("a\u2028b\x0cc\n") == ["a\u2028b\x0cc\n", ""]  # not line endings in LSP


def test_a_cr_and_a_lf_that_meet_become_one_line_ending():
    doc = Document.of("file:///t", "a\rX\nb")
    doc.apply(types.Range(types.Position(1, 0), types.Position(1, 1)), "")  # delete X: "a\r\nb"
    assert doc.lines == ["a\r\n", "b"]
    doc.apply(types.Range(types.Position(0, 1), types.Position(0, 1)), "\r")  # "a\r\r\nb"
    assert doc.lines == ["a\r", "\r\n", "b"]


def test_positions_count_the_agreed_units():
    assert index_in_line("é😀x", 3, "utf-16") == 2  # é is 1 unit, 😀 two
    assert index_in_line("é😀x", 6, "utf-8") == 2  # é is 2 bytes, 😀 four
    assert index_in_line("é😀x", 2, "utf-32") == 2
    assert index_in_line("abc", 99, "utf-16") == 3  # past the end of the line: its end
    doc = Document.of("file:///t", "one\ntwo")
    doc.apply(types.Range(types.Position(9, 0), types.Position(9, 0)), "!")  # past the last line: the end
    assert doc.text == "one\ntwo!"


def test_a_big_document_keeps_its_lines_shared():
    """An edit replaces the lines it touches, not the others (the reason it is fast)."""
    text = "".join(f"line {i}\n" for i in range(50_000))
    doc = Document.of("file:///big", text)
    before = doc.lines[10], doc.lines[40_000]
    doc.apply(types.Range(types.Position(20_000, 0), types.Position(20_001, 0)), "changed\nand added\n")
    assert doc.lines[10] is before[0] and doc.lines[40_001] is before[1]
    assert doc.text == text.replace("line 20000\n", "changed\nand added\n")


# ---------------------------------------------------------------------- the store


def opened(uri: str, text: str, version: int = 1) -> types.DidOpenTextDocumentParams:
    return types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
    )


def changed(
    uri: str, version: int, *changes: types.TextDocumentContentChangeEvent
) -> types.DidChangeTextDocumentParams:
    return types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=version), list(changes)
    )


def test_store_open_change_close_and_snapshot():
    store = DocumentStore()
    store.did_open(opened("file:///w/a.py", "x = 1\n"))
    store.did_open(opened("untitled:Untitled-1", "scratch"))
    store.did_change(
        changed(
            "file:///w/a.py",
            2,
            types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(0, 4), types.Position(0, 5)), text="2"
            ),
            types.TextDocumentContentChangeWholeDocument(text="y = 3\n"),
            types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(1, 0), types.Position(1, 0)), text="z"
            ),
        )
    )
    (only,) = store.open_files()  # an untitled document is not a file
    assert (only.path, only.text, only.version) == ("/w/a.py", "y = 3\nz", 2)
    store.did_change(changed("file:///w/unknown.py", 5, types.TextDocumentContentChangeWholeDocument(text="?")))
    store.did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri="file:///w/a.py")))
    assert store.open_files() == []


def test_a_write_is_seen_until_the_editor_reports_a_newer_version():
    store = DocumentStore()
    store.did_open(opened("file:///w/a.py", "old\n", version=4))
    store.written("file:///w/a.py", "new\n", 4)
    assert store.open_files()[0].text == "new\n"
    store.did_change(changed("file:///w/a.py", 4, types.TextDocumentContentChangeWholeDocument(text="old\n")))
    assert store.open_files()[0].text == "new\n"  # not newer: still expected
    store.did_change(changed("file:///w/a.py", 5, types.TextDocumentContentChangeWholeDocument(text="new\n!")))
    assert store.open_files()[0].text == "new\n!"

    # A file the editor created for an edit and has not reported open yet.
    store.written("file:///w/b.py", "made\n", None)
    made = [f for f in store.open_files() if f.uri == "file:///w/b.py"]
    assert [(f.text, f.version) for f in made] == [("made\n", None)]
    store.did_open(opened("file:///w/b.py", "made\n", version=1))
    assert [(f.text, f.version) for f in store.open_files() if f.uri == "file:///w/b.py"] == [("made\n", 1)]
    store.written("file:///w/b.py", "again\n", 1)
    store.did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri="file:///w/b.py")))
    assert [f.uri for f in store.open_files()] == ["file:///w/a.py"]


async def test_a_burst_of_edits_gives_the_event_loop_turns():
    """Edits that arrive together are handled in order, and the loop gets a turn while they are
    (a run's stream is not held up behind a thousand keystrokes)."""
    import asyncio
    import json

    from cody_lsp.config import ServerConfig
    from cody_lsp.server.lsp.server import create_server

    server = create_server(ServerConfig())
    endpoint = server.endpoint
    endpoint.writer = type("Sink", (), {"write": lambda self, data: None})()

    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    uri = "file:///w/a.py"
    messages = [frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})]
    messages.append(
        frame(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": ""}},
            }
        )
    )
    count = 3000
    for i in range(count):
        at = {"line": 0, "character": i}
        change = {"range": {"start": at, "end": at}, "text": "x"}
        messages.append(
            frame(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {"textDocument": {"uri": uri, "version": 2 + i}, "contentChanges": [change]},
                }
            )
        )

    class Burst:
        def __init__(self, data: bytes):
            self.data = data

        async def read(self, n: int) -> bytes:
            chunk, self.data = self.data[:n], self.data[n:]
            return chunk

    seen: list[int] = []

    def peek() -> None:
        doc = server.editor.documents.documents.get(uri)
        seen.append(len(doc.text) if doc is not None else -1)

    async def watch() -> None:
        while True:
            peek()
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(watch())
    await endpoint.serve(Burst(b"".join(messages)))
    watcher.cancel()
    assert server.editor.documents.documents[uri].text == "x" * count
    assert any(0 < n < count for n in seen), "the loop got no turn during the burst"
