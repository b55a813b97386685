"""The chat's /permissions: the rules that let tools run without asking, listed and revoked.

A rule is an "always" answer kept in the database (protocol.md, "Approval rules that last"):
for this session, or for every session of the folder. `/permissions` lists those that apply
here, numbered; `/permissions revoke N` (a number of that list, or a rule id) deletes one, and
`/permissions revoke all` every one listed. The next call a revoked rule covered is asked again.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..protocol.wire import PermissionRule
from .connection import CodyClient
from .render import print_table
from .sessions import format_time


def covers(rule: PermissionRule) -> str:
    """What a rule allows (or refuses: an ACP client's "reject always"), in words; a sandboxed
    rule says so."""
    if rule.command_prefix is not None:
        what = f"`{rule.command_prefix} …`"
    elif rule.domain is not None:
        what = f"fetches from {rule.domain}"
    else:
        what = "every command" if rule.tool_name == "run_command" else "every call"
    if rule.decision == "deny":
        return f"refuses {what}"
    return f"{what}, sandboxed" if rule.sandboxed else what


def where(rule: PermissionRule) -> str:
    return "this folder (every session)" if rule.scope == "folder" else "this session"


class PermissionRules:
    """/permissions of one chat: remembers its last list, so `revoke N` means what was shown."""

    USAGE = "usage: /permissions (lists the rules) · /permissions revoke N (a number of that list, a rule id, or all)"

    def __init__(self, console: Console, folder: Path):
        self.console = console
        self.folder = folder
        self.listed: list[PermissionRule] = []

    async def command(self, client: CodyClient, arg: str, session_id: str | None) -> None:
        action, _, target = arg.partition(" ")
        if not action:
            await self.show(client, session_id)
        elif action.lower() in ("revoke", "rm") and target.strip():
            await self.revoke(client, target.strip(), session_id)
        else:
            self.console.print(self.USAGE, markup=False)

    async def rules(self, client: CodyClient, session_id: str | None) -> list[PermissionRule]:
        """The rules that apply here: the session's own and the folder's."""
        if session_id is not None:
            return await client.list_permission_rules(session_id=session_id)
        rules = await client.list_permission_rules(workspace_folder=self.folder)
        return [rule for rule in rules if rule.scope == "folder"]

    async def show(self, client: CodyClient, session_id: str | None) -> None:
        self.listed = await self.rules(client, session_id)
        if not self.listed:
            self.console.print("[dim]No rule lets a tool run without asking here.[/]")
            return
        self.console.print("Tools allowed without asking [dim](/permissions revoke N removes one)[/]:")
        rows = [
            [str(i), covers(rule), rule.tool_name, where(rule), format_time(rule.created_at)]
            for i, rule in enumerate(self.listed, 1)
        ]
        print_table(self.console, ["#", "covers", "tool", "where", "since"], rows)

    async def revoke(self, client: CodyClient, target: str, session_id: str | None) -> None:
        if target.lower() == "all":
            chosen = self.listed or await self.rules(client, session_id)
        elif target.isdigit() and 1 <= int(target) <= len(self.listed):
            chosen = [self.listed[int(target) - 1]]
        else:
            found = [rule for rule in await self.rules(client, session_id) if rule.id == target]
            if not found:
                hint = " (/permissions lists them, numbered)" if not self.listed else ""
                self.console.print(f"[red]no rule {escape(target)} here[/]{hint}")
                return
            chosen = found
        if not chosen:
            self.console.print("[dim]No rule to revoke.[/]")
        for rule in chosen:
            gone = await client.revoke_permission_rule(rule.id)
            said = "revoked" if gone else "already gone"
            self.console.print(
                f"{said}: {escape(rule.tool_name)} {escape(covers(rule))} in {where(rule)} [dim]— asked again from now on[/]"
            )
        self.listed = [rule for rule in self.listed if rule not in chosen]
