"""Fixtures of the CLI tests (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_support import PROMPT, Terminal, cli_env


@pytest.fixture
async def chat(provider, db_path: Path, workspace: Path):
    """Start `cody-lsp chat` in a pty (in `workspace`, unless -w is among the arguments) and
    wait for its prompt; every chat started is stopped at the end."""
    started: list[Terminal] = []

    async def start(*extra: str, env: dict[str, str] | None = None, workspace_arg: bool = True) -> Terminal:
        args = ["chat", *(["--workspace", str(workspace)] if workspace_arg else []), *extra]
        term = Terminal(args, env or cli_env(provider, db_path), workspace)
        started.append(term)
        await term.expect(PROMPT)
        return term

    yield start
    for term in started:
        term.kill()
