"""The session database (SQLite through aiosqlite, WAL): one connection, and a repository per
concern.

- `sessions` (sessions.py): made, found, listed, updated, deleted;
- `messages` (messages.py): a session's history, paged for a client or as the model sees it,
  and compaction markers;
- `runs` (runs.py): a run's start and the commit of its turn, how runs ended;
- `rules` (rules.py): permission rules that last;
- `mcp_approvals` (mcp_approvals.py): the answers about a workspace's MCP servers;
- `leases` (leases.py): which server process runs a session;
- `checkpoints` (checkpoints.py): the checkpoints' rows, and what a restore or a fork does to a
  history.

Each writes through the one connection (connection.py): a change in one `BEGIN IMMEDIATE`
transaction, never half-applied. The schema is schema.py's.
"""

from __future__ import annotations

from pathlib import Path

from .checkpoints import CheckpointRows
from .connection import Database
from .leases import LeaseRows
from .mcp_approvals import McpApprovalRows
from .messages import MessageRows
from .rules import RuleRows
from .runs import RunRows
from .sessions import SessionRows


class Store:
    def __init__(self, db: Database):
        self.db = db
        self.path = db.path
        self.sessions = SessionRows(db)
        self.messages = MessageRows(db)
        self.runs = RunRows(db, self.messages)
        self.rules = RuleRows(db)
        self.mcp_approvals = McpApprovalRows(db)
        self.leases = LeaseRows(db)
        self.checkpoints = CheckpointRows(db, self.sessions)

    @classmethod
    async def open(cls, path: Path) -> Store:
        """The database at `path`, made or migrated (its directory and files the user's only)."""
        return cls(await Database.open(path))

    async def close(self) -> None:
        await self.db.close()
