"""What the server and the chat keep on disk is the user's only (SECURITY.md, "Files on disk"):
under umask 022 the state directory is 0700 and the session database, its -wal and -shm, and the
chat's history 0600 — also when an older cody-lsp left them 0755/0644."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply

from ..conftest import server_env
from .cli_support import PROMPT, cli_env


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)  # the server inherits it
    yield
    os.umask(previous)


def default_env(provider, state: Path) -> dict[str, str]:
    env = server_env(provider, state / "unused.db", XDG_STATE_HOME=str(state))
    del env["CODY_DB"]  # the default place: $XDG_STATE_HOME/cody-lsp/sessions.db
    return env


async def a_run(env: dict[str, str], provider, workspace: Path) -> None:
    provider.add(Reply(text="stored"))
    client = await CodyClient.spawn(env=env, workspace_folders=[workspace])
    try:
        stream = client.stream("a prompt nobody else may read")
        assert [c async for c in stream][-1]["type"] == "done"
        db = Path(env.get("CODY_DB") or Path(env["XDG_STATE_HOME"]) / "cody-lsp" / "sessions.db")
        for suffix in ("", "-wal", "-shm"):  # while the server holds the database open
            assert mode(Path(f"{db}{suffix}")) == 0o600, suffix
    finally:
        await client.close()


async def test_a_new_state_directory_and_database_are_private(umask_022, provider, tmp_path: Path, workspace: Path):
    env = default_env(provider, tmp_path / "state")
    await a_run(env, provider, workspace)
    assert mode(tmp_path / "state" / "cody-lsp") == 0o700


async def test_files_an_older_version_left_readable_are_made_private(
    umask_022, provider, tmp_path: Path, workspace: Path
):
    folder = tmp_path / "state" / "cody-lsp"
    folder.mkdir(parents=True, mode=0o755)
    other = sqlite3.connect(folder / "sessions.db")  # another process holds it open: its -wal and -shm exist
    other.execute("PRAGMA journal_mode = WAL")
    other.execute("CREATE TABLE IF NOT EXISTS unrelated (x)")
    other.execute("INSERT INTO unrelated VALUES (1)")
    other.commit()
    try:
        for suffix in ("", "-wal", "-shm"):
            assert mode(folder / f"sessions.db{suffix}") == 0o644
        await a_run(default_env(provider, tmp_path / "state"), provider, workspace)
        assert mode(folder) == 0o700
    finally:
        other.close()


async def test_a_database_named_by_cody_db_in_a_new_directory(umask_022, provider, tmp_path: Path, workspace: Path):
    env = server_env(provider, tmp_path / "mine" / "deeper" / "sessions.db")
    await a_run(env, provider, workspace)
    assert mode(tmp_path / "mine" / "deeper") == 0o700


async def test_the_chat_history_is_private(umask_022, chat, provider, db_path: Path, workspace: Path):
    provider.add(Reply(text="Noted."))
    term = await chat("--yes", env=cli_env(provider, db_path))
    term.send_line("a prompt typed in the chat")
    await term.expect("Noted.")
    await term.expect(PROMPT)
    term.send_line("/exit")
    assert await term.exit_status() == 0
    history = db_path.parent / "chat-history"
    assert "a prompt typed in the chat" in history.read_text()
    assert mode(history) == 0o600
