"""Permission rules that last (`permission_rules`): an "allow always" answer, or an ACP client's
"reject always", for a session or for every session of a folder."""

from __future__ import annotations

from .connection import Database
from .records import RuleRecord

RULE_COLUMNS = (
    "id, tool_name, scope, workspace_folder, created_at, session_id, command_prefix, decision, sandboxed, domain"
)


class RuleRows:
    def __init__(self, db: Database):
        self._db = db

    async def add(self, rule: RuleRecord) -> None:
        await self._db.transaction(
            [
                (
                    f"INSERT INTO permission_rules ({RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rule.id,
                        rule.tool_name,
                        rule.scope,
                        rule.workspace_folder,
                        rule.created_at,
                        rule.session_id,
                        rule.command_prefix,
                        rule.decision or "allow",
                        1 if rule.sandboxed else 0,
                        rule.domain,
                    ),
                )
            ]
        )

    async def listed(
        self, *, folder: str | None = None, session_id: str | None = None, tool_name: str | None = None
    ) -> list[RuleRecord]:
        """Rules, oldest first. With `session_id`: the rules that apply to that session (its own,
        and the folder rules of `folder`, which must then be its folder); else with `folder`: every
        rule given in that folder; with neither: all. `tool_name` narrows to one tool."""
        where, args = [], []
        if session_id is not None:
            where.append("(session_id = ? OR (scope = 'folder' AND workspace_folder = ?))")
            args += [session_id, folder]
        elif folder is not None:
            where.append("workspace_folder = ?")
            args.append(folder)
        if tool_name is not None:
            where.append("tool_name = ?")
            args.append(tool_name)
        sql = f"SELECT {RULE_COLUMNS} FROM permission_rules"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = await (await self._db.connection.execute(sql + " ORDER BY created_at, id", args)).fetchall()
        return [
            RuleRecord(
                rule_id,
                tool,
                scope,
                folder,
                created,
                session,
                prefix,
                "deny" if decision == "deny" else None,
                True if sandboxed else None,
                domain,
            )
            for rule_id, tool, scope, folder, created, session, prefix, decision, sandboxed, domain in rows
        ]  # decision absent: allow; sandboxed absent: as the command is

    async def delete(self, rule_id: str) -> bool:
        cur = await self._db.connection.execute("SELECT 1 FROM permission_rules WHERE id = ?", (rule_id,))
        if await cur.fetchone() is None:
            return False
        await self._db.transaction([("DELETE FROM permission_rules WHERE id = ?", (rule_id,))])
        return True
