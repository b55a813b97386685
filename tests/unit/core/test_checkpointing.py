"""The run core's side of checkpoints, in process: the note to the model, paths a client gives,
the checkpoint event of a run (once, and never after the run's end)."""

from __future__ import annotations

import asyncio

import pytest

from cody_lsp.protocol.wire import CheckpointCreated, Done, InvalidParams, Usage
from cody_lsp.server.core.checkpointing import NOTE_FILES, Recording, _relative, note_text
from cody_lsp.server.core.events import RunEvent, RunEventStream
from cody_lsp.server.store.checkpoints import CheckpointRow


def test_the_note_names_the_files_and_counts_the_rest():
    files = [(f"f{i}.py", "modified") for i in range(NOTE_FILES + 3)]
    text = note_text("ckpt_1", files)
    assert "f0.py (modified)" in text and f"f{NOTE_FILES - 1}.py" in text and f"f{NOTE_FILES}.py" not in text
    assert "and 3 more" in text and "read them again" in text
    assert "bad\\xff.txt (added)" in note_text("ckpt_1", [("bad\udcff.txt", "added")])  # shown as the tools show it


def test_a_clients_path_is_relative_to_the_folder():
    assert _relative("src/./app.py") == "src/app.py"
    assert _relative("/src/app.py/") == "src/app.py"
    assert _relative("bad\\xff.txt") == "bad\udcff.txt"
    for bad in ("", "/", "../x", "a/../../b"):
        with pytest.raises(InvalidParams):
            _relative(bad)


async def test_the_checkpoint_event_is_sent_once_before_the_end():
    sent: list[RunEvent] = []
    events = RunEventStream("run_1", "ses_1", sent.append)
    row = CheckpointRow("ckpt_1", "/w", "ses_1", "run", "run_1", None, "tree", (), "now")
    gate = asyncio.Event()

    async def record() -> CheckpointRow:
        await gate.wait()
        return row

    recording = Recording(asyncio.ensure_future(record()), events, send_chunk=True)
    waiting = asyncio.ensure_future(recording.ready())
    await asyncio.sleep(0)
    waiting.cancel()  # a run cancelled while its first tool waited for the checkpoint
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.set()
    assert await recording.ready() is row and await recording.ready() is row
    events.emit(Done("", Usage()))
    assert [e.payload for e in sent] == [CheckpointCreated("ckpt_1"), Done("", Usage())]

    quiet: list[RunEvent] = []
    silent = Recording(asyncio.ensure_future(record()), RunEventStream("run_2", "ses_1", quiet.append), False)
    assert await silent.ready() is row and quiet == []
