"""The user's answers about a workspace's MCP servers (`mcp_approvals`): per folder and server
name, for the exact definition answered (its fingerprint)."""

from __future__ import annotations

from .connection import Database, now


class McpApprovalRows:
    def __init__(self, db: Database):
        self._db = db

    async def get(self, folder: str, server: str) -> tuple[str, str] | None:
        """(fingerprint, decision) of the answer kept for a workspace's MCP server, if any."""
        cur = await self._db.connection.execute(
            "SELECT fingerprint, decision FROM mcp_approvals WHERE workspace_folder = ? AND server = ?",
            (folder, server),
        )
        row = await cur.fetchone()
        return (row[0], row[1]) if row is not None else None

    async def set(self, folder: str, server: str, fingerprint: str, decision: str, definition: str) -> None:
        await self._db.transaction(
            [
                (
                    "INSERT OR REPLACE INTO mcp_approvals "
                    "(workspace_folder, server, fingerprint, decision, definition, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (folder, server, fingerprint, decision, definition, now()),
                )
            ]
        )

    async def delete(self, folder: str, server: str) -> bool:
        if await self.get(folder, server) is None:
            return False
        await self._db.transaction(
            [("DELETE FROM mcp_approvals WHERE workspace_folder = ? AND server = ?", (folder, server))]
        )
        return True
