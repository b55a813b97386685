"""The terminal chat (issue 36): `/lsp`, code_nav answered by a real pylsp the backend starts, `/diff`
(each hunk numbered, with the lines' numbers) and `/undo-hunks` (one of two hunks put back, the
user's later edit kept)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT

PYLSP = str(Path(sys.executable).parent / "pylsp")
BEFORE = "".join(f"line {i}\n" for i in range(1, 31))


async def test_lsp_code_nav_diff_and_undo_hunks_in_the_chat(chat, provider, workspace: Path, db_path: Path):
    folder = db_path.parent / "xdg-config" / "cody-lsp"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(f'[language_servers.pylsp]\ncommand = ["{PYLSP}"]\nextensions = [".py"]\n')
    (workspace / "lib.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    (workspace / "app.py").write_text("from lib import greet\n\nprint(greet('x'))\n")
    (workspace / "notes.txt").write_text(BEFORE)
    term = await chat("--yes")
    term.send_line("/lsp")
    listed = await term.expect(PROMPT)
    assert "pylsp" in listed and "idle" in listed and ".py" in listed

    provider.add(
        Reply(
            tool_calls=[
                ToolCall("code_nav", {"operation": "definition", "path": "app.py", "line": 3, "query": "greet"})
            ]
        ),
        Reply(text="It is defined in lib.py."),
    )
    term.send_line("where is greet defined?")
    await term.expect("It is defined in lib.py.")
    await term.expect(PROMPT)
    (tool,) = [m["content"] for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool.splitlines()[1] == "lib.py:1:5: def greet(name):" and "language server pylsp" in tool

    middle = "".join(f"line {i}\n" for i in range(5, 26))
    provider.add(
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file",
                    {
                        "path": "notes.txt",
                        "old_string": middle,
                        "new_string": middle.replace("line 5\n", "five\n").replace("line 25\n", "twenty-five\n"),
                    },
                )
            ]
        ),
        Reply(text="Changed two lines."),
    )
    term.send_line("change notes")
    await term.expect("Changed two lines.")
    await term.expect(PROMPT)
    after_run = (workspace / "notes.txt").read_text()
    (workspace / "notes.txt").write_text(after_run.replace("line 15\n", "line 15 (mine)\n"))  # the user's edit

    term.send_line("/diff")
    shown = await term.expect(PROMPT)
    assert "notes.txt" in shown and "[1] @@ -2,7 +2,7 @@" in shown and "[2] @@ -22,7 +22,7 @@" in shown
    assert re.search(r"\b5\s+- line 5\b", shown) and re.search(r"\b5 \+ five\b", shown)
    assert re.search(r"\b25 \+ twenty-five\b", shown) and "mine" not in shown

    term.send_line("/undo-hunks 2")
    await term.expect("Undone")
    await term.expect(PROMPT)
    now = (workspace / "notes.txt").read_text()
    assert "five\n" in now and "twenty-five" not in now and "line 25\n" in now and "line 15 (mine)\n" in now
    term.send_line("/diff")
    again = await term.expect(PROMPT)
    assert "[2] @@ -22,7 +22,7 @@ · reverted" in again
    term.send_line("/exit")
    assert await term.exit_status() == 0
