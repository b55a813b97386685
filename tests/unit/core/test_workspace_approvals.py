"""The user's answers about what a workspace would start (core/workspace_approvals.py, under the MCP
servers', hooks' and language servers' approvals): kept per folder for the exact definition, each
kind apart, and a question asked once however many runs wait for it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from cody_lsp.protocol.wire import PermissionParams
from cody_lsp.server.core.workspace_approvals import (
    ALLOWED,
    DENIED,
    ProgramApprovals,
    WorkspaceApprovals,
    kept_decision,
)
from cody_lsp.server.store.database import Store

pytestmark = pytest.mark.timeout(30)


def test_what_each_answer_keeps():
    assert [kept_decision(o) for o in ("allow", "allow_always", "deny", "cancelled")] == [None, ALLOWED, DENIED, DENIED]


async def test_an_answer_is_kept_for_its_folder_its_kind_and_its_exact_definition(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    try:
        servers, hooks = WorkspaceApprovals[bool](store), WorkspaceApprovals[str](store, "hook:")
        await servers.keep("/ws", "lint", "fp1", ALLOWED, {"server": "lint", "command": "x"})
        assert await servers.decided("/ws", "lint", "fp1") == ALLOWED
        assert await servers.decided("/ws", "lint", "fp2") is None  # a changed definition: not answered
        assert await servers.decided("/other", "lint", "fp1") is None
        assert await hooks.decided("/ws", "lint", "fp1") is None  # another kind's answers are apart
        await hooks.keep("/ws", "lint", "fp1", DENIED, {})
        assert await hooks.decided("/ws", "lint", "fp1") == DENIED
        assert await store.mcp_approvals.get("/ws", "hook:lint") == ("fp1", DENIED)
        assert await servers.revoke("/ws", "lint") and not await servers.revoke("/ws", "lint")
        assert await servers.decided("/ws", "lint", "fp1") is None and await hooks.decided("/ws", "lint", "fp1")
    finally:
        await store.close()


async def test_a_question_is_asked_once_and_a_cancelled_waiter_does_not_withdraw_it(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    try:
        approvals = WorkspaceApprovals[str](store)
        asked = 0
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def ask() -> str:
            nonlocal asked
            asked += 1
            return await answer

        first = asyncio.ensure_future(approvals.ask_once("/ws", "fp", ask))
        second = asyncio.ensure_future(approvals.ask_once("/ws", "fp", ask))
        other = asyncio.ensure_future(approvals.ask_once("/ws", "fp-other", lambda: asyncio.sleep(0, "its own")))
        await asyncio.sleep(0.01)
        first.cancel()
        answer.set_result("once")
        assert await second == "once" and await other == "its own" and asked == 1
        assert first.cancelled()
        assert await approvals.ask_once("/ws", "fp", lambda: asyncio.sleep(0, "asked again")) == "asked again"
    finally:
        await store.close()


@dataclass(frozen=True)
class Program:
    name: str
    command: str

    def fingerprint(self) -> str:
        return f"fp-{self.command}"

    def shown(self) -> dict[str, str]:
        return {"server": self.name, "command": self.command}


@dataclass
class Run:
    folder: str = "/ws"
    run_id: str = "run_1"
    session_id: str | None = "ses_1"


async def test_a_program_starts_as_the_user_answers_and_the_answer_is_kept(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    try:
        asked: list[PermissionParams] = []
        answers = iter(["allow", "allow_always", "deny"])
        can_ask = True

        async def asker(run: object, params: PermissionParams) -> str:
            asked.append(params)
            return next(answers)

        approvals = ProgramApprovals[Program](
            store,
            asker,
            lambda: can_ask,
            tool_name="language_server",
            prefix="language_server:",
            what="language server",
        )
        lint, fmt = Program("lint", "ruff"), Program("fmt", "black")
        assert await approvals.approve(Run(), lint)  # allow: this run only, nothing kept
        assert await approvals.decided("/ws", lint) is None
        params = asked[0]
        assert (params.tool_call_id, params.tool_name, params.args) == (
            "language_server_lint",
            "language_server",
            {"server": "lint", "command": "ruff"},
        )
        assert params.options is not None and params.options.outcomes == ["allow", "allow_always", "deny"]
        assert await approvals.approve(Run(), lint) and await approvals.decided("/ws", lint) == ALLOWED
        assert not await approvals.approve(Run(), fmt) and await approvals.decided("/ws", fmt) == DENIED
        assert await approvals.approve(Run(), lint) and not await approvals.approve(Run(), fmt)  # not asked again
        assert len(asked) == 3
        assert await store.mcp_approvals.get("/ws", "language_server:lint") == ("fp-ruff", ALLOWED)
        can_ask = False  # a changed definition is a new one; a client that cannot answer is not asked
        assert not await approvals.approve(Run(), Program("lint", "ruff --fix")) and len(asked) == 3
        assert await approvals.revoke("/ws", "fmt") and await approvals.decided("/ws", fmt) is None
    finally:
        await store.close()


async def test_a_failed_question_starts_nothing_and_keeps_nothing(tmp_path: Path):
    store = await Store.open(tmp_path / "s.db")
    try:

        async def broken(run: object, params: PermissionParams) -> str:
            raise ConnectionError("the client went away")

        approvals = ProgramApprovals[Program](
            store, broken, lambda: True, tool_name="mcp_server", prefix="", what="MCP server"
        )
        assert not await approvals.approve(Run(), Program("x", "y"))
        assert await approvals.decided("/ws", Program("x", "y")) is None
        nobody = ProgramApprovals[Program](
            store, None, lambda: True, tool_name="mcp_server", prefix="", what="MCP server"
        )
        assert not await nobody.approve(Run(), Program("x", "y"))
    finally:
        await store.close()
