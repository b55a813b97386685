"""What a person sees on a real terminal (the output played on a terminal emulator): the answer
rendered as Markdown once each block is complete, code highlighted; the line typed while an
answer streams kept below it, never mixed in; output that is not a terminal plain and whole."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.testing.provider import Reply

from .cli_support import PROMPT, Screen, cli_env, cody

ANSWER = (
    "# The plan\n\nFirst **read** the `config` and then _write_ it.\n\n"
    "```python\ndef add(a, b):\n    return a + b\n```\n\n"
    "- one item\n- another item\n\n| col | other |\n|-----|-------|\n| a1  | b1    |\n\nThe end of the answer."
)


async def test_the_answer_is_rendered_as_markdown_once_each_block_is_complete(provider, db_path: Path, workspace):
    provider.add(Reply(text=ANSWER, text_deltas=40, delay=0.05))
    screen = Screen(["chat", "--yes"], cli_env(provider, db_path), workspace)
    try:
        await screen.until("/help for")
        screen.child.send("explain\r")
        text = await screen.until("✓ done")
    finally:
        screen.kill()
    lines = screen.lines()
    assert "The plan" in text and "# The plan" not in text  # a heading, not its source
    assert any(line.strip() == "First read the config and then write it." for line in lines)
    assert "**" not in text and "`" not in text and "_write_" not in text
    assert any(line.strip() == "def add(a, b):" for line in lines) and "```" not in text
    assert any(line.strip() == "• one item" for line in lines)
    assert "|-----|" not in text and any("a1" in line and "b1" in line for line in lines)  # a table, drawn
    # The code is highlighted: its characters have colours of their own.
    row = next(i for i, line in enumerate(lines) if line.strip() == "def add(a, b):")
    colours = {char.fg for char in screen.screen.buffer[row].values() if char.data.strip()}
    assert len(colours - {"default"}) >= 2, colours
    bold_row = next(i for i, line in enumerate(lines) if "First read" in line)
    assert any(char.bold for char in screen.screen.buffer[bold_row].values() if char.data in "read")


async def test_the_line_typed_while_an_answer_streams_stays_apart_from_it(provider, db_path: Path, workspace):
    long_answer = " ".join(f"word{i}" for i in range(150)) + "\n\nSecond paragraph of the answer.\n\nLast one."
    provider.add(Reply(text=long_answer, text_deltas=80, delay=0.06), Reply(text="Taken into account."))
    screen = Screen(["chat", "--yes"], cli_env(provider, db_path), workspace)
    try:
        await screen.until("/help for")
        screen.child.send("stream something long\r")
        await screen.until("word20")
        screen.child.send("also mind the tests")  # typed while the answer streams, no Enter yet
        # The typed line is drawn below the answer (a read of the terminal may end mid-redraw:
        # the frame after it holds both).
        text = await screen.until(lambda t: "word60" in t and _bottom(t).startswith("› also mind the tests"))
        *above, bottom = [line for line in _above_status(text).splitlines() if line.strip()]
        assert not any("mind the tests" in line for line in above)
        screen.child.send("\x7f\x7f\x7f\x7f\x7fcode\r")  # Backspace edits it; Enter sends it
        await screen.until("» queued for the model's next step: also mind the code")
        text = await screen.until("Taken into account.")
    finally:
        screen.kill()
    words = " ".join(line for line in text.splitlines() if "word" in line).split()
    assert [w for w in words if w.startswith("word")] == [f"word{i}" for i in range(150)]  # nothing mixed in
    assert "mind the tests" not in text and "also mind the code" in text


def _bottom(text: str) -> str:
    """The last line written above the status line (the terminal's last row)."""
    lines = [line for line in _above_status(text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _above_status(text: str) -> str:
    lines = text.splitlines()
    if lines and "scripted-model ·" in lines[-1]:
        lines = lines[:-1]
    return "\n".join(lines).rstrip()


async def test_a_line_not_finished_when_the_run_ends_waits_in_the_next_prompt(provider, db_path: Path, workspace):
    provider.add(Reply(text="Short answer, " * 6, text_deltas=6, delay=0.2), Reply(text="Got the rest."))
    screen = Screen(["chat", "--yes"], cli_env(provider, db_path), workspace)
    try:
        await screen.until("/help for")
        screen.child.send("go\r")
        await screen.until("Short answer,")
        screen.child.send("half a tho")
        await screen.until("✓ done")
        await screen.until(lambda text: _above_status(text).endswith(f"{PROMPT}half a tho"))
        screen.child.send("ught\r")
        await screen.until("Got the rest.")
    finally:
        screen.kill()
    assert provider.requests[1]["messages"][-1]["content"] == "half a thought"


async def test_output_that_is_not_a_terminal_stays_plain_and_whole(provider, db_path: Path, workspace):
    provider.add(Reply(text=ANSWER, text_deltas=40))
    code, out, err = await cody(["run", "explain"], cli_env(provider, db_path), workspace)
    assert code == 0, err
    assert ANSWER in out  # the model's text as it came: the Markdown source, nothing wrapped or cut
