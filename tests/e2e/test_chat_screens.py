"""The terminal chat as a person sees it (issue 38): the real `cody-lsp chat` in a pseudo-terminal,
its output played on a terminal emulator (pyte) 80 and 120 columns wide, the screen read back —
the status line at the bottom, the approval menu, a coloured diff with line numbers, an edit that
cannot apply reported without asking, an MCP tool's JSON result, /help, a retry's one line,
/usage and /context."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from cody_lsp.client.chat import HELP
from cody_lsp.testing.provider import Fault, Reply, ToolCall

from .cli_support import PROMPT, Screen, cli_env

pytestmark = pytest.mark.timeout(120)

WIDTHS = [80, 120]
CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def started(provider, db_path: Path, workspace: Path, width: int, *args: str, rows: int = 40, **env: str) -> Screen:
    return Screen(["chat", *args], cli_env(provider, db_path, **env), workspace, dimensions=(rows, width))


def bottom(screen: Screen) -> str:
    return screen.lines()[-1]


async def at_prompt(screen: Screen) -> str:
    """The prompt, empty, ready for a line (the status line below it)."""
    return await screen.until(lambda text: "/help for" in text and _prompt_row(screen) is not None)


def _prompt_row(screen: Screen) -> int | None:
    rows = [i for i, line in enumerate(screen.lines()) if line.rstrip() == PROMPT.rstrip()]
    return rows[-1] if rows else None


def row_of(screen: Screen, needle: str) -> int:
    return next(i for i, line in enumerate(screen.lines()) if needle in line)


def colours(screen: Screen, row: int) -> set[str]:
    """The foreground and background colours of a row's visible characters."""
    line = screen.screen.buffer[row]
    return {c.fg for c in line.values() if c.data.strip()} | {c.bg for c in line.values() if c.data.strip()}


# ------------------------------------------------------------------ the status line


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_status_line_says_model_mode_context_tokens_and_cost_and_works_while_the_run_does(
    provider, db_path: Path, workspace: Path, width: int
):
    provider.add(Reply(text=" ".join(f"word{i}" for i in range(60)), text_deltas=30, delay=0.1, usage=(5000, 300)))
    screen = started(provider, db_path, workspace, width, "--yes", CODY_MODEL_PRICE="2,8")
    try:
        await at_prompt(screen)
        await screen.until(lambda _text: "of context" in bottom(screen))
        line = bottom(screen)
        assert "scripted-model" in line and " code " in f" {line} " and "%" in line, line
        assert line.index("scripted-model") < line.index("code")
        screen.child.send("tell me a long story\r")
        await screen.until(lambda _text: "working" in bottom(screen) or "↓" in bottom(screen))
        working = bottom(screen)
        assert re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (working )?\d+(\.\d)?s", working), working
        # Never mixed into the answer: the status row holds the status alone, the answer the rows above.
        assert "word" not in working and "scripted-model" in working
        await screen.until("✓ done")
        spinning = re.compile("[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]")
        await screen.until(lambda _text: "$" in bottom(screen) and not spinning.search(bottom(screen)))
        done = bottom(screen)
        assert "5.3k tokens" in done, done  # 5000 in + 300 out, as the server counted them
        assert "$0.0124" in done, done  # 5000 × $2 + 300 × $8 per million
        assert "15% of context" in done and "~" not in done, done  # 5000 of a 32,768 window, as reported
        assert "working" not in done
        assert all(len(line) <= width for line in screen.lines())
    finally:
        screen.kill()


async def test_a_message_typed_during_a_run_is_counted_as_queued(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(text=" ".join(f"w{i}" for i in range(40)), text_deltas=40, delay=0.15),
        Reply(text="Second answer."),
    )
    screen = started(provider, db_path, workspace, 100, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("first\r")
        await screen.until("w5")
        screen.child.send("and then this\r")
        await screen.until(lambda _text: "1 queued" in bottom(screen))
        await screen.until("Second answer.")
        await screen.until(lambda _text: "queued" not in bottom(screen))
    finally:
        screen.kill()


async def test_no_status_line_with_no_status(provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="Hi."))
    screen = started(provider, db_path, workspace, 100, "--yes", "--no-status")
    try:
        await at_prompt(screen)
        screen.child.send("hello\r")
        await screen.until("✓ done")
        assert not any("scripted-model ·" in line for line in screen.lines())
    finally:
        screen.kill()


# ------------------------------------------------------------------ approvals and diffs


LONG_COMMAND = "npm test -- -k a_rather_long_test_name_that_goes_on_and_on"


@pytest.mark.parametrize("width", [60, *WIDTHS])
async def test_the_approval_menu_is_one_answer_a_line_never_broken_inside_a_word(
    provider, db_path: Path, workspace: Path, width: int
):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": LONG_COMMAND})]), Reply(text="Ran."))
    screen = started(provider, db_path, workspace, width)
    try:
        await at_prompt(screen)
        screen.child.send("run the tests\r")
        text = await screen.until("View the whole command")
        lines = screen.lines()
        top = row_of(screen, "Allow run_command?")
        menu = [line for line in lines[top + 1 :] if line.strip()][:8]
        labels = [
            "1. Yes (y)",
            "2. Yes, and any command in this session (a)",
            "3. Yes, and any command in this folder (f)",
            "4. Yes, and always for `npm test` in this folder (p)",
            "n. No, and tell the agent what to do instead",
            "v. View the whole command",
        ]
        for label in labels:  # each whole on one line of its own
            assert any(line.strip().lstrip("❯ ").strip() == label for line in menu), (label, menu)
        # A longer answer wraps at its words, under them: every word on the menu is a whole word.
        sandboxed = "5. Yes, and run every command of this folder sandboxed, without asking (s)"
        known = {word for label in [*labels, sandboxed] for word in label.split()}
        shown = {
            word for line in lines[top + 1 : row_of(screen, "v. View the whole command") + 1] for word in line.split()
        }
        assert shown - {"❯"} <= known, shown - known
        assert menu[0].startswith("❯ 1. Yes")  # the focused answer, marked
        focused = row_of(screen, "❯ 1. Yes")
        assert any(c.bold for c in screen.screen.buffer[focused].values() if c.data == "Y")
        # Arrows move the mark; a number picks at once.
        screen.child.send("\x1b[B")
        await screen.until(lambda _t: any(line.startswith("❯ 2. Yes") for line in screen.lines()))
        screen.child.send("1")
        await screen.until("Ran.")
        assert "Allow run_command? Yes" in screen.text()  # the menu gave way to its answer
        assert "2. Yes, and any" not in screen.text()
        assert all(len(line) <= width for line in screen.lines())
        assert text
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_an_edit_is_shown_as_a_coloured_diff_with_line_numbers(
    provider, db_path: Path, workspace: Path, width: int
):
    (workspace / "calc.py").write_text(CALC)
    edit = {"path": "calc.py", "old_string": "    return a - b\n", "new_string": "    return a - b  # the difference\n"}
    provider.add(Reply(tool_calls=[ToolCall("edit_file", edit)]), Reply(text="Edited."))
    screen = started(provider, db_path, workspace, width)
    try:
        await at_prompt(screen)
        screen.child.send("comment sub\r")
        await screen.until("View the whole change")
        lines = screen.lines()
        assert any(line.strip() == "calc.py  +1 −1" for line in lines)
        removed = row_of(screen, "-     return a - b")
        added = row_of(screen, "+     return a - b  # the difference")
        assert re.match(r"^\s+6 -     return a - b$", lines[removed]), lines[removed]
        assert re.match(r"^\s+6 \+     return a - b  # the difference$", lines[added]), lines[added]
        assert re.match(r"^\s+5\s+def sub\(a, b\):$", lines[removed - 1])  # context, numbered
        assert "red" in colours(screen, removed) and "green" in colours(screen, added)
        # The words that changed are marked within the added line (a background of their own).
        cells = screen.screen.buffer[added]
        word = cells[lines[added].index("#")].bg
        rest = cells[lines[added].index("return")].bg
        assert word != rest and "default" not in (word, rest)
        screen.child.send("y")
        await screen.until("Edited.")
        assert (workspace / "calc.py").read_text() == CALC.replace("a - b\n", "a - b  # the difference\n")
        assert "(+1 −1)" in screen.text()  # the result says what changed; the diff is not shown twice
        assert screen.text().count("# the difference") == 1
    finally:
        screen.kill()


async def test_an_edit_made_without_asking_shows_its_diff_after_it(provider, db_path: Path, workspace: Path):
    (workspace / "calc.py").write_text(CALC)
    edit = {"path": "calc.py", "old_string": "def mul", "new_string": "def times"}
    provider.add(Reply(tool_calls=[ToolCall("edit_file", edit)]), Reply(text="Renamed."))
    screen = started(provider, db_path, workspace, 100, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("rename mul\r")
        await screen.until("Renamed.")
        lines = screen.lines()
        assert any(re.match(r"^\s+9 - def mul\(a, b\):$", line) for line in lines), lines
        assert any(re.match(r"^\s+9 \+ def times\(a, b\):$", line) for line in lines), lines
        assert "Allow" not in screen.text()
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_an_edit_that_cannot_apply_is_reported_without_asking(provider, db_path: Path, workspace: Path, width):
    (workspace / "calc.py").write_text(CALC)
    edit = {"path": "calc.py", "old_string": "def div(a, b):", "new_string": "def divide(a, b):"}
    provider.add(Reply(tool_calls=[ToolCall("edit_file", edit)]), Reply(text="It is not there."))
    screen = started(provider, db_path, workspace, width)
    try:
        await at_prompt(screen)
        screen.child.send("rename div\r")
        text = await screen.until("It is not there.")
        assert "✗ old_string was not found in calc.py" in text
        assert "Allow" not in text and "View the whole" not in text  # nobody was asked
        assert (workspace / "calc.py").read_text() == CALC
    finally:
        screen.kill()


async def test_a_write_that_changes_nothing_is_said_so_and_not_asked(provider, db_path: Path, workspace: Path):
    (workspace / "calc.py").write_text(CALC)
    provider.add(Reply(tool_calls=[ToolCall("write_file", {"path": "calc.py", "content": CALC})]), Reply(text="Same."))
    screen = started(provider, db_path, workspace, 120)
    try:
        await at_prompt(screen)
        screen.child.send("write it again\r")
        text = await screen.until("Same.")
        assert "calc.py already holds exactly this content: nothing was written" in text
        assert "Allow" not in text
    finally:
        screen.kill()


async def test_a_refusal_is_said_once(provider, db_path: Path, workspace: Path):
    provider.add(
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.md", "content": "hi\n"})]),
        Reply(text="Not written, then."),
    )
    screen = started(provider, db_path, workspace, 100)
    try:
        await at_prompt(screen)
        screen.child.send("write notes\r")
        await screen.until("View the whole change")
        screen.child.send("n")
        await screen.until("Tell the agent what to do instead")
        screen.child.send("\r")  # just no
        text = await screen.until("Not written, then.")
        assert "Allow write_file? No" in text
        assert "refused" not in text and "Permission to run" not in text  # the menu's answer says it
        assert not (workspace / "notes.md").exists()
    finally:
        screen.kill()


async def test_cancelling_is_said_below_what_streamed_before_it(provider, db_path: Path, workspace: Path):
    provider.add(Reply(text=" ".join(f"word{i}" for i in range(200)), text_deltas=100, delay=0.1))
    screen = started(provider, db_path, workspace, 100, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("go on\r")
        await screen.until("word30")
        screen.child.send("\x03")
        text = await screen.until("cancelled")
        lines = text.splitlines()
        notice = next(i for i, line in enumerate(lines) if "cancelling…" in line)
        streamed = [i for i, line in enumerate(lines) if "word" in line]
        assert streamed and min(streamed) < notice  # what streamed before the Ctrl+C stays above the notice
        assert "word30" in "\n".join(lines[:notice])
    finally:
        screen.kill()


# ------------------------------------------------------------------ results, help, retries, usage


TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"


@pytest.mark.parametrize("width", WIDTHS)
async def test_an_mcp_tools_json_result_is_shown_whole_and_its_arguments_once(
    provider, db_path: Path, workspace: Path, width: int
):
    assert TIME_SERVER.exists(), f"{TIME_SERVER} is missing: install the test extra (pip install -e '.[test]')"
    servers = {"mcpServers": {"clock": {"command": str(TIME_SERVER), "args": ["--local-timezone", "UTC"]}}}
    call = ToolCall("mcp__clock__get_current_time", {"timezone": "Europe/Paris"})
    provider.add(Reply(tool_calls=[call]), Reply(text="It is late."))
    screen = started(provider, db_path, workspace, width, CODY_MCP_CONFIG=json.dumps(servers))
    try:
        await at_prompt(screen)
        screen.child.send("what time is it in Paris\r")
        await screen.until("Allow mcp__clock__get_current_time?")
        assert screen.text().count("Europe/Paris") == 1  # the arguments once: on the call's line
        screen.child.send("y")
        text = await screen.until("It is late.")
        lines = screen.lines()
        assert any(line.strip() == '"timezone": "Europe/Paris",' for line in lines), text
        assert any(line.strip().startswith('"datetime": "') for line in lines), text
        assert any(line.strip().startswith('"is_dst":') for line in lines), text
        assert any(line.strip() == "}" for line in lines), text  # the whole object, to its end
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_help_is_complete(provider, db_path: Path, workspace: Path, width: int):
    screen = started(provider, db_path, workspace, width, rows=80)
    try:
        await at_prompt(screen)
        screen.child.send("/help\r")
        text = await screen.until("recall earlier messages")
        shown = " ".join(text.split())
        for line in HELP.splitlines():
            words = " ".join(line.replace("[bold]", "").replace("[/]", "").split())
            assert words in shown, words  # nothing eaten as markup: `[N [files|conversation|both]]` too
        assert "/rewind [N [files|conversation|both]]" in text
        # Every line of it indented: a description wraps under itself, never back at the left edge.
        lines = text.splitlines()
        shown_help = lines[next(i for i, line in enumerate(lines) if line.startswith("Commands")) :]
        shown_help = shown_help[: next(i for i, line in enumerate(shown_help) if "recall earlier messages" in line) + 1]
        assert all(line.startswith("  ") or line in ("Commands", "Keys") for line in shown_help if line), shown_help
        assert all(len(line) <= width for line in screen.lines())
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_retries_are_one_line_updated_in_place(provider, db_path: Path, workspace: Path, width: int):
    wait = {"retry-after": "1.5"}
    provider.add(
        Reply(text="x", fault=Fault.http(503, headers=wait, body={"error": {"message": "overloaded " * 20}})),
        Reply(text="x", fault=Fault.http(503, headers=wait, body={"error": {"message": "overloaded " * 20}})),
        Reply(text="Here at last."),
    )
    screen = started(provider, db_path, workspace, width, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("hello\r")
        await screen.until("attempt 1 of 4")
        first = [line for line in screen.lines() if "↻" in line]
        assert len(first) == 1 and len(first[0]) <= width, first
        await screen.until("attempt 2 of 4")
        second = [line for line in screen.lines() if "↻" in line]
        assert len(second) == 1 and "attempt 1" not in second[0], second  # the same line, updated
        text = await screen.until("Here at last.")
        after = [line for line in text.splitlines() if "↻" in line]
        assert len(after) == 1 and after[0].startswith("↻ retried 2 times (of 4 allowed) after: http_503"), after
        assert len(after[0]) <= width
    finally:
        screen.kill()


async def test_a_request_that_cannot_pass_is_not_retried(provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="x", fault=Fault.http(501, body={"error": {"message": "not an LLM"}})))
    screen = started(provider, db_path, workspace, 100, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("hello\r")
        text = await screen.until("HTTP 501")
        assert "↻" not in text and len(provider.requests) == 1
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_usage_and_context(provider, db_path: Path, workspace: Path, width: int):
    (workspace / "AGENTS.md").write_text("Keep it short.\n")
    provider.add(Reply(text="One.", usage=(1200, 40)), Reply(text="Two.", usage=(1500, 60)))
    screen = started(provider, db_path, workspace, width, "--yes", rows=50)
    try:
        await at_prompt(screen)
        for prompt, answer in (("first question", "One."), ("second question", "Two.")):
            screen.child.send(prompt + "\r")
            await screen.until(answer)
            await screen.until(
                lambda _t, said=answer: (row := _prompt_row(screen)) is not None and row > row_of(screen, said)
            )
        screen.child.send("/usage\r")
        text = await screen.until("compactions included")
        rows = {
            line.split()[0]: line.split()
            for line in text.splitlines()
            if line.strip()[:1].isdigit() or "session " in line
        }
        assert rows["1"][:4] == ["1", "1,200", "40", "1,240"] and "first" in rows["1"]
        assert rows["2"][:4] == ["2", "1,500", "60", "1,560"] and "second" in rows["2"]
        assert rows["session"][:4] == ["session", "2,700", "100", "2,800"]
        screen.child.send("/context\r")
        text = await screen.until("the next request, before its prompt")
        assert "instructions AGENTS.md" in text and re.search(r"tools \(\d+\)", text)
        assert "history (4 messages)" in text and "a window of 32,768 tokens" in text
        assert all(len(line) <= width for line in screen.lines())
    finally:
        screen.kill()


# ------------------------------------------------------------------ Markdown


async def test_markdown_headings_flush_left_no_runs_of_blank_lines_and_the_fork_preview_rendered(
    provider, db_path: Path, workspace: Path
):
    answer = "# The title\n\n\n\nA paragraph with **bold** words.\n\n\n\n- one\n- two\n\n\nThe end."
    provider.add(Reply(text=answer, text_deltas=12, delay=0.02))
    screen = started(provider, db_path, workspace, 100, "--yes", rows=50)
    try:
        await at_prompt(screen)
        screen.child.send("write markdown\r")
        text = await screen.until("✓ done")
        lines = text.splitlines()
        title = row_of(screen, "The title")
        assert lines[title] == "The title"  # not centred
        end = row_of(screen, "The end.")
        block = lines[title : end + 1]
        assert all(block[i].strip() or block[i + 1].strip() for i in range(len(block) - 1)), block  # no 2 blank
        assert "A paragraph with bold words." in block and "**" not in text
        await screen.until(lambda _t: (row := _prompt_row(screen)) is not None and row > end)
        screen.child.send("/fork\r")
        text = await screen.until("Forked")
        shown = await screen.until(lambda t: t.count("A paragraph with bold words.") == 2)
        assert "**bold**" not in shown and "# The title" not in shown  # the preview rendered, as the answer was
    finally:
        screen.kill()


# ------------------------------------------------------------------ plans, a command's output, /diff


PLAN = [
    {"step": "Read calc.py and the tests that cover it", "status": "completed"},
    {
        "step": "Add a divide function that refuses a zero divisor with an error that says so, and document it",
        "status": "in_progress",
    },
    {"step": "Run the tests", "status": "pending"},
]


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_plan_is_shown_a_step_a_line(provider, db_path: Path, workspace: Path, width: int):
    provider.add(
        Reply(tool_calls=[ToolCall("update_plan", {"explanation": "Three steps", "plan": PLAN})]),
        Reply(text="On it."),
    )
    screen = started(provider, db_path, workspace, width, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("add divide\r")
        await screen.until("On it.")
        lines = screen.lines()
        heading = row_of(screen, "Plan  Three steps")
        end = row_of(screen, "☐ Run the tests")
        steps = [line.rstrip() for line in lines[heading + 1 : end + 1]]
        assert steps[0] == "  ☑ Read calc.py and the tests that cover it", steps
        long_step = "◐ Add a divide function that refuses a zero divisor with an error that says so, and document it"
        if width >= 90:  # whole on its line
            assert steps[1:] == ["  " + long_step, "  ☐ Run the tests"], steps
        else:  # wrapped at a word, under the step's first word
            assert len(steps) == 4 and steps[2].startswith("    ") and not steps[2].startswith("     "), steps
            assert " ".join(" ".join(steps[1:3]).split()) == long_step, steps
            assert steps[3] == "  ☐ Run the tests", steps
        assert "brown" in colours(screen, heading + 2) and "green" in colours(screen, heading + 1)  # pyte's yellow
        assert all(len(line) <= width for line in lines)
    finally:
        screen.kill()


COUNTING = "for i in 1 2 3 4 5 6 7 8; do echo counted $i; sleep 0.5; done"


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_running_commands_output_shows_as_it_comes_then_its_result(
    provider, db_path: Path, workspace: Path, width: int
):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": COUNTING})]), Reply(text="Counted."))
    screen = started(provider, db_path, workspace, width, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("count\r")
        await screen.until("│ counted 3")  # while it runs: its last lines, at the bottom
        live = [line.strip() for line in screen.lines() if "│ counted" in line]
        assert 1 <= len(live) <= 5 and live == sorted(live, key=lambda line: int(line.split()[-1])), live
        assert "Counted." not in screen.text() and "exit code" not in screen.text()
        text = await screen.until("Counted.")
        assert "│ counted" not in text  # gone with its result, which shows the output
        assert "counted 1" in text and "counted 8" in text
        assert all(len(line) <= width for line in screen.lines())
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_background_commands_output_comes_under_a_line_naming_it(
    provider, db_path: Path, workspace: Path, width: int
):
    command = "echo ready; sleep 1; printf 'tick one\\n\\033[31mtick two\\033[0m\\n'; sleep 300"
    provider.add(
        Reply(tool_calls=[ToolCall("run_command", {"command": command, "background": True})]),
        Reply(text=" ".join(f"waiting{i}" for i in range(40)), text_deltas=40, delay=0.1),
    )
    screen = started(provider, db_path, workspace, width, "--yes")
    try:
        await at_prompt(screen)
        screen.child.send("start it\r")
        await screen.until("│ tick two")
        lines = screen.lines()
        named = row_of(screen, "(in the background): echo ready")
        assert re.search(r"⎿ cmd_[0-9a-f]+ \(in the background\)", lines[named]), lines[named]
        assert lines[named + 1].strip() == "│ tick one" and lines[named + 2].strip() == "│ tick two"
        assert "red" not in colours(screen, named + 2)  # its escape sequences never reach the terminal
        text = await screen.until("✓ done")
        assert "waiting39" in text
        assert all(len(line) <= width for line in screen.lines())
    finally:
        screen.kill()


@pytest.mark.parametrize("width", WIDTHS)
async def test_diff_shows_the_changes_coloured_and_numbered(provider, db_path: Path, workspace: Path, width: int):
    (workspace / "calc.py").write_text(CALC)
    provider.add(
        Reply(
            tool_calls=[ToolCall("edit_file", {"path": "calc.py", "old_string": "def mul", "new_string": "def times"})]
        ),
        Reply(text="Renamed."),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.md", "content": "# Notes\n"})]),
        Reply(text="Noted."),
    )
    screen = started(provider, db_path, workspace, width, "--yes", rows=50)
    try:
        await at_prompt(screen)
        for prompt, answer in (("rename mul", "Renamed."), ("take notes", "Noted.")):
            screen.child.send(prompt + "\r")
            await screen.until(answer)
            await screen.until(
                lambda _t, said=answer: (row := _prompt_row(screen)) is not None and row > row_of(screen, said)
            )
        screen.child.send("/diff all\r")
        text = await screen.until("Changes of this session")
        await screen.until(lambda _t: (row := _prompt_row(screen)) is not None and row > row_of(screen, "notes.md"))
        lines = screen.lines()
        start = row_of(screen, "Changes of this session")
        shown = "\n".join(lines[start:])
        assert "calc.py  modified" in shown and "notes.md  added" in shown, shown
        removed, added = row_of(screen, "- def mul(a, b):"), row_of(screen, "+ def times(a, b):")
        assert re.match(r"^\s+9\s+- def mul\(a, b\):$", lines[removed]), lines[removed]
        assert re.match(r"^\s+9 \+ def times\(a, b\):$", lines[added]), lines[added]
        assert "red" in colours(screen, removed) and "green" in colours(screen, added)
        assert re.search(r"\[\d\] @@ -0,0 \+1 @@|\[\d\] @@ -0,0 \+1,1 @@", shown), shown
        screen.child.send("/diff\r")  # the last run's only
        await screen.until(lambda t: t.count("Changes of turn") == 1)
        await screen.until(
            lambda _t: (row := _prompt_row(screen)) is not None and row > row_of(screen, "Changes of turn")
        )
        last = "\n".join(screen.lines()[row_of(screen, "Changes of turn") :])
        assert "notes.md  added" in last and "calc.py" not in last, last
        assert all(len(line) <= width for line in screen.lines())
        assert text
    finally:
        screen.kill()
