"""Streamed text cut into Markdown blocks (client/live.py), whatever the pieces: a block is
complete at a blank line outside a code fence, or when its fence closes; and the renderer
shows each complete block once, on a terminal that can move the cursor."""

from __future__ import annotations

import io

import pyte
import pytest
from rich.console import Console

from cody_lsp.client.live import MarkdownBlocks
from cody_lsp.client.render import ChunkRenderer

TEXT = (
    "Intro paragraph\nstill the intro.\n\n\n"
    "```python\nx = 1\n\ny = 2\n```\n"
    "After the code.\n\n"
    "~~~~\n```not a close```\n~~~~\n\n"
    "- a\n- b\n\nEnd."
)
BLOCKS = [
    "Intro paragraph\nstill the intro.",
    "```python\nx = 1\n\ny = 2\n```",  # a blank line inside a fence does not end it
    "After the code.",
    "~~~~\n```not a close```\n~~~~",
    "- a\n- b",
    "End.",
]


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 1000])
def test_blocks_are_the_same_whatever_the_pieces(piece: int):
    blocks = MarkdownBlocks()
    out: list[str] = []
    for i in range(0, len(TEXT), piece):
        out += blocks.feed(TEXT[i : i + piece])
    last = blocks.finish()
    assert [*out, last] == BLOCKS
    assert blocks.finish() is None


def test_the_block_in_progress_is_what_is_pending():
    blocks = MarkdownBlocks()
    assert blocks.feed("First.\n\nSecond, not ") == ["First."]
    assert blocks.pending() == "Second, not "
    assert blocks.feed("done\nyet") == [] and blocks.pending() == "Second, not done\nyet"


def test_a_fence_right_after_a_paragraph_ends_it():
    blocks = MarkdownBlocks()
    assert blocks.feed("Look:\n```\ncode\n```\n") == ["Look:", "```\ncode\n```"]


def screen_of(chunks: list[dict], width: int = 60) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, height=30, force_terminal=True, color_system="standard")
    assert not console.is_dumb_terminal
    renderer = ChunkRenderer(console)
    for chunk in chunks:
        renderer.handle(chunk)
    renderer.close_live()
    screen = pyte.Screen(width, 30)
    pyte.Stream(screen).feed(out.getvalue().replace("\n", "\r\n"))
    return [line.rstrip() for line in screen.display]


@pytest.mark.parametrize("piece", [2, 5, 50])
def test_the_renderer_shows_each_block_once_rendered(piece: int):
    deltas = [{"type": "text_delta", "content": TEXT[i : i + piece]} for i in range(0, len(TEXT), piece)]
    lines = screen_of([*deltas, {"type": "tool_call", "toolName": "list_dir", "args": {}}])
    text = "\n".join(lines)
    assert (
        text.count("Intro paragraph") == 1
        and text.count("After the code.") == 1
        and "```" not in text.replace("```not a close```", "")
    )
    assert [line for line in lines if line.strip()][-1] == "● list_dir ."
    assert " • a" in lines and " • b" in lines


def test_thinking_and_a_retry_on_the_rich_screen():
    lines = screen_of(
        [
            {"type": "thinking", "content": "Let me think\nabout it"},
            {"type": "text_delta", "content": "A first attempt that"},
            {"type": "retry", "retryAttempt": 1, "retryMaxAttempts": 4, "delayMs": 10, "reason": "http_500: x"},
            {"type": "text_delta", "content": "The answer."},
            {"type": "done", "usage": {}},
        ]
    )
    text = "\n".join(lines)
    assert "✻ Let me think" in text and "about it" in text
    assert "A first attempt" not in text  # never complete, never printed: nothing to withdraw
    # The retry's line gave way to one that says it happened (it was updated in place meanwhile).
    assert "↻ retried once (of 4 allowed) after: http_500: x" in text and "The answer." in text
    assert "retrying in" not in text
