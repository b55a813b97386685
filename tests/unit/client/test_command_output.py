"""A command's output as the chat's renderer shows it (tool_output chunks), on a console that is not
a terminal (a file, a pipe): a foreground command's output is left to its result, a background
command's comes under a line naming it, without escape sequences, bounded per run."""

from __future__ import annotations

import io

from rich.console import Console

from cody_lsp.client.render import BACKGROUND_LINES, ChunkRenderer


def renderer() -> tuple[ChunkRenderer, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=80, color_system=None)
    return ChunkRenderer(console, show_usage=False), out


def call(command: str, background: bool = False) -> dict:
    return {
        "type": "tool_call",
        "toolName": "run_command",
        "toolCallId": "c1",
        "args": {"command": command, "background": background},
    }


def test_a_foreground_commands_output_is_left_to_its_result():
    shown, out = renderer()
    shown.handle(call("make"))
    shown.handle({"type": "tool_output", "toolCallId": "c1", "text": "building\n"})
    assert "building" not in out.getvalue()
    shown.handle(
        {
            "type": "tool_result",
            "toolName": "run_command",
            "toolCallId": "c1",
            "ok": True,
            "content": "exit code: 0\nbuilding",
        }
    )
    assert out.getvalue().count("building") == 1


def test_a_background_commands_output_comes_under_a_line_naming_it_clean_and_bounded():
    shown, out = renderer()
    shown.handle(call("npm run dev", background=True))
    started = "started in the background as cmd_0123456789abcdef0123; it goes on\noutput so far:\nready"
    shown.handle({"type": "tool_result", "toolName": "run_command", "toolCallId": "c1", "ok": True, "content": started})
    shown.handle(
        {"type": "tool_output", "toolCallId": "c1", "text": "\x1b[32mcompiled\x1b[0m in 3s\nprog 10%\rprog 100%\nhal"}
    )
    shown.handle({"type": "tool_output", "toolCallId": "c1", "text": "f a line\n"})
    text = out.getvalue()
    assert "⎿ cmd_0123456789abcdef0123 (in the background): npm run dev" in text
    assert "│ compiled in 3s\n" in text and "\x1b" not in text
    assert "│ prog 100%\n" in text and "prog 10%" not in text
    assert "│ half a line\n" in text
    assert text.count("(in the background):") == 1  # named once while its output goes on
    shown.handle({"type": "tool_output", "toolCallId": "c1", "text": "".join(f"l{i}\n" for i in range(500))})
    text = out.getvalue()
    assert f"l{BACKGROUND_LINES - 4}\n" in text and f"l{BACKGROUND_LINES - 3}\n" not in text  # 3 lines before
    assert "… more output: /jobs shows the end of cmd_0123456789abcdef0123" in text
    shown.handle({"type": "done"})


def test_the_end_of_a_run_prints_a_background_commands_line_in_progress():
    shown, out = renderer()
    shown.handle(call("tail -f log", background=True))
    shown.handle(
        {
            "type": "tool_result",
            "toolName": "run_command",
            "toolCallId": "c1",
            "ok": True,
            "content": "started in the background as cmd_aaaaaaaaaaaaaaaaaaaa",
        }
    )
    shown.handle({"type": "tool_output", "toolCallId": "c1", "text": "no newline yet"})
    assert "no newline yet" not in out.getvalue()
    shown.handle({"type": "done"})
    assert "│ no newline yet" in out.getvalue()
