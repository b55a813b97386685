"""The chat's /help and the README say the same: every command, and what Ctrl+C does."""

from __future__ import annotations

import re
from pathlib import Path

from cody_lsp.client import chat

README = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")


def help_commands() -> set[str]:
    return set(re.findall(r"^  (/[a-z]+)", chat.HELP, re.M))


def readme_commands() -> set[str]:
    section = README.split("**Chat commands**", 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"^\| `(/[a-z]+)", section, re.M))


def test_every_command_of_help_is_in_the_readme_and_back():
    assert help_commands() == readme_commands()
    assert {"/queue", "/compact"} <= readme_commands()


def test_every_command_of_help_is_one_the_chat_knows():
    source = Path(chat.__file__).read_text(encoding="utf-8")
    for command in help_commands():
        assert f'"{command}"' in source, f"{command} is in /help but the chat does not handle it"


def test_help_and_readme_agree_on_ctrl_c():
    said = [" ".join(text.split()) for text in (chat.HELP, README)]
    for text in said:
        assert "Ctrl+C during a run interrupts it (the messages queued behind it go on; a second Ctrl+C," in text
        assert "stops waiting for it); at the prompt Ctrl+C clears the line" in text
