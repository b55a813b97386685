"""Reading the project instructions (server/agent/instructions.py), in-process: which files, in
which order, the cap and its note, text that is not UTF-8, what is never read (a symlink out of the
folder, a FIFO), the nested files and their marks; the system message they go in. (Through the
wire: tests/e2e/test_instructions.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cody_lsp.config import InstructionSettings
from cody_lsp.server.agent.instructions import (
    NestedInstructions,
    in_view,
    nested_block,
    nested_paths_in,
    read_instructions,
)
from cody_lsp.server.agent.turn import system_message
from cody_lsp.server.tools import ToolConfig

ON = InstructionSettings()
TOOLS_CONFIG = ToolConfig()


@pytest.fixture
def folder(workspace: Path) -> Path:
    return workspace


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "config" / "cody-lsp"  # absent unless a test writes it


def put(folder: Path, path: str, text: str | bytes) -> Path:
    file = folder / path
    file.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        file.write_bytes(text)
    else:
        file.write_text(text)
    return file


async def read(folder: Path, user_dir: Path, settings: InstructionSettings = ON):
    return await read_instructions(folder, settings, TOOLS_CONFIG, user_dir)


async def test_agents_md_alone_and_the_fallbacks_it_replaces(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", "Use tabs.\n")
    put(folder, "CLAUDE.md", "Use spaces.\n")
    found = await read(folder, user_dir)
    assert found.paths == ["AGENTS.md"]
    assert found.files[0].text == "Use tabs."


async def test_the_override_replaces_agents_md(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", "Use tabs.")
    put(folder, "AGENTS.override.md", "Use two spaces.")
    assert [(f.path, f.text) for f in (await read(folder, user_dir)).files] == [
        ("AGENTS.override.md", "Use two spaces.")
    ]


async def test_every_fallback_present_in_order_and_a_rules_folder(folder: Path, user_dir: Path):
    put(folder, ".windsurfrules", "windsurf")
    put(folder, ".clinerules/b.md", "cline b")
    put(folder, ".clinerules/a.md", "cline a")
    put(folder, ".clinerules/notes.txt", "not a rules file")
    put(folder, ".cursorrules", "cursor")
    put(folder, ".github/copilot-instructions.md", "copilot")
    put(folder, "CLAUDE.md", "claude")
    found = await read(folder, user_dir)
    assert found.paths == [
        "CLAUDE.md",
        ".github/copilot-instructions.md",
        ".cursorrules",
        ".clinerules/a.md",
        ".clinerules/b.md",
        ".windsurfrules",
    ]
    assert [f.text for f in found.files] == ["claude", "copilot", "cursor", "cline a", "cline b", "windsurf"]


async def test_the_users_file_comes_first_shown_from_home(folder: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    user_dir = tmp_path / ".config" / "cody-lsp"
    put(user_dir, "AGENTS.md", "Answer in French.")
    put(folder, "CLAUDE.md", "claude")
    found = await read(folder, user_dir)
    assert found.paths == ["~/.config/cody-lsp/AGENTS.md", "CLAUDE.md"]
    section = found.section()
    assert section.index("## ~/.config/cody-lsp/AGENTS.md\nAnswer in French.") < section.index("## CLAUDE.md\nclaude")


async def test_none_or_empty_files_give_no_section(folder: Path, user_dir: Path):
    assert (await read(folder, user_dir)).section() == ""
    put(folder, "AGENTS.md", "  \n\n")
    put(folder, "CLAUDE.md", "not read: AGENTS.md exists")
    found = await read(folder, user_dir)
    assert found.paths == [] and found.section() == ""


async def test_off_reads_nothing(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", "Use tabs.")
    assert (await read(folder, user_dir, InstructionSettings(enabled=False))).paths == []


async def test_the_cap_counts_every_file_cuts_with_a_note_and_names_what_is_left_out(folder: Path, tmp_path: Path):
    user_dir = tmp_path / "config"
    put(user_dir, "AGENTS.md", "u" * 40)
    put(folder, "CLAUDE.md", "c" * 100)
    put(folder, ".cursorrules", "never given")
    found = await read(folder, user_dir, InstructionSettings(max_bytes=100))
    assert [f.path for f in found.files] == [str(user_dir / "AGENTS.md"), "CLAUDE.md"]
    assert found.files[0].text == "u" * 40
    cut = found.files[1].text
    assert cut.startswith("c" * 60 + "\n[… CLAUDE.md is cut here: 40 more bytes of it are not shown")
    assert "CODY_INSTRUCTIONS_MAX_BYTES" in cut and "c" * 61 not in cut
    assert found.note is not None and ".cursorrules" in found.note
    assert found.note in found.section()


async def test_a_cut_never_splits_a_character(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", "é" * 10)  # 20 bytes
    text = (await read(folder, user_dir, InstructionSettings(max_bytes=5))).files[0].text
    assert text.startswith("éé\n[… AGENTS.md is cut here: 16 more bytes")


async def test_text_that_is_not_utf8_is_replaced_and_noted(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", b"Use \xff\xfe tabs.")
    text = (await read(folder, user_dir)).files[0].text
    assert text.startswith("Use \ufffd\ufffd tabs.")
    assert "[note: AGENTS.md is not valid UTF-8; undecodable bytes are shown as \ufffd]" in text


async def test_a_symlink_out_of_the_folder_and_a_fifo_are_never_read(folder: Path, tmp_path: Path, user_dir: Path):
    secret = put(tmp_path, "outside/secret.md", "the secret")
    (folder / "AGENTS.md").symlink_to(secret)
    assert (await read(folder, user_dir)).paths == []  # present but refused: no fallback either
    (folder / "AGENTS.md").unlink()
    os.mkfifo(folder / "AGENTS.md")  # opening a FIFO must not wait for a writer
    assert (await read(folder, user_dir)).paths == []
    (folder / "AGENTS.md").unlink()
    put(folder, "docs/rules.md", "inside")
    (folder / "AGENTS.md").symlink_to("docs/rules.md")  # a symlink inside is followed
    assert [(f.path, f.text) for f in (await read(folder, user_dir)).files] == [("AGENTS.md", "inside")]


async def test_a_huge_file_is_read_only_up_to_the_cap(folder: Path, user_dir: Path):
    with open(folder / "AGENTS.md", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse
        f.seek(0)
        f.write(b"Rules.")
    found = await read(folder, user_dir, InstructionSettings(max_bytes=1000))
    assert len(found.files[0].text) < 1300 and "is cut here" in found.files[0].text


async def test_nested_files_apply_below_their_directory_outermost_first(folder: Path):
    put(folder, "AGENTS.md", "root: given up front, never nested")
    put(folder, "src/AGENTS.md", "src rules")
    put(folder, "src/api/AGENTS.md", "api rules")
    put(folder, "src/api/AGENTS.override.md", "api override")
    put(folder, "src/api/handler.py", "")
    nested = NestedInstructions(folder, ON, TOOLS_CONFIG)
    found = await nested.for_path("src/api/handler.py")
    assert [(f.path, f.text) for f in found] == [
        ("src/AGENTS.md", "src rules"),
        ("src/api/AGENTS.override.md", "api override"),
    ]
    assert [f.path for f in await nested.for_path(str(folder / "src" / "new.py"))] == ["src/AGENTS.md"]  # absolute, new
    assert [f.path for f in await nested.for_path("src/AGENTS.md")] == []  # the file itself
    assert await nested.for_path("README.md") == []
    assert await nested.for_path("../elsewhere/x.py") == []
    assert (
        await NestedInstructions(folder, InstructionSettings(enabled=False), TOOLS_CONFIG).for_path(
            "src/api/handler.py"
        )
        == []
    )


async def test_nested_files_are_read_once_a_run(folder: Path):
    put(folder, "lib/AGENTS.md", "first")
    nested = NestedInstructions(folder, ON, TOOLS_CONFIG)
    assert [f.text for f in await nested.for_path("lib/a.py")] == ["first"]
    put(folder, "lib/AGENTS.md", "changed during the run")
    assert [f.text for f in await nested.for_path("lib/b.py")] == ["first"]
    assert [f.text for f in await NestedInstructions(folder, ON, TOOLS_CONFIG).for_path("lib/b.py")] == [
        "changed during the run"
    ]


async def test_marks_say_which_nested_files_the_model_has(folder: Path):
    put(folder, "src/api/AGENTS.md", "api rules")
    files = await NestedInstructions(folder, ON, TOOLS_CONFIG).for_path("src/api/x.py")
    block = nested_block(files)
    assert block == (
        "\n\n[Instructions from src/api/AGENTS.md, for the files under src/api/:]\napi rules\n[End of src/api/AGENTS.md]"
    )
    result = {"role": "tool", "tool_call_id": "c", "content": "1\tx = 1" + block}
    assert in_view("src/api/AGENTS.md", [result])
    assert not in_view("src/api/AGENTS.md", [{"role": "user", "content": block}])  # only what a tool gave
    assert nested_paths_in([{"role": "user", "content": "hi"}, result, result]) == ["src/api/AGENTS.md"]


async def test_the_instructions_end_the_system_message_after_the_modes_section(folder: Path, user_dir: Path):
    put(folder, "AGENTS.md", "Use tabs.")
    found = await read(folder, user_dir)
    plan = system_message(folder, "plan")["content"]
    assert system_message(folder, "plan", found)["content"] == plan + "\n\n" + found.section()
    assert found.section().startswith("# Instructions\n") and found.section().endswith("## AGENTS.md\nUse tabs.")
