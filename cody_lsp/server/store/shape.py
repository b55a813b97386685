"""Whether a session database has the shape this version of cody-lsp made: standard library only
(the early start, server/lsp/early_sessions.py, checks it too before reading).

`PRAGMA user_version` says which migrations ran, but anything can be written into the file
afterwards by another program: a `sessions` *view* that recurses forever in place of the table
(same user_version) made every read spin and the server stop answering. So, on opening, each of
the store's tables must be a plain table with exactly its columns, and no trigger may exist (the
store makes none: a trigger would run code of the file's author at every write). Anything else
is refused with a message that says what is wrong and what to do; nothing is read from such a
file. (What the check cannot see — a read that is merely very slow — the read deadline of
store/deadline.py stops.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Each table of the store and its columns at queries.SCHEMA_VERSION (schema.MIGRATIONS makes
# them; tests/unit/store/test_store_shape.py keeps the two equal).
TABLES: dict[str, frozenset[str]] = {
    "sessions": frozenset(
        "id title model workspace_folder created_at updated_at message_count input_tokens output_tokens "
        "total_tokens context_tokens calibration restored mode instructions plan".split()
    ),
    "messages": frozenset(
        "session_id position role content tool_calls tool_call_id tool_name kind run_id created_at ok for_model "
        "error compaction reasoning model_content attachments subagent".split()
    ),
    "runs": frozenset("id session_id status error usage owner started_at ended_at".split()),
    "permission_rules": frozenset(
        "id tool_name scope workspace_folder session_id command_prefix created_at decision sandboxed domain".split()
    ),
    "mcp_approvals": frozenset("workspace_folder server fingerprint decision definition created_at".split()),
    "session_leases": frozenset("session_id owner taken_at".split()),
    "checkpoints": frozenset("id workspace_folder session_id kind run_id undoes tree skipped created_at".split()),
    "checkpoint_messages": frozenset(
        "checkpoint_id position role content tool_calls tool_call_id tool_name kind run_id created_at ok for_model "
        "error compaction model_content attachments reasoning subagent".split()
    ),
}

# One row per column of each schema object (tables, views, triggers; their SQL), read without
# evaluating any view: pragma_table_info only prepares it.
SHAPE_QUERY = (
    "SELECT m.type, m.name, m.sql, c.name FROM sqlite_master AS m "
    "LEFT JOIN pragma_table_info(m.name) AS c "
    "WHERE m.type IN ('table', 'view', 'trigger') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
)


def shape_problem(rows: Iterable[Any]) -> str | None:
    """What is wrong with the schema `SHAPE_QUERY` read (None: nothing), in words for the user."""
    kinds: dict[str, str] = {}
    virtual: set[str] = set()
    columns: dict[str, set[str]] = {}
    triggers: list[str] = []
    for kind, name, sql, column in rows:
        if kind == "trigger":
            triggers.append(str(name))
            continue
        kinds[name] = kind
        if kind == "table" and isinstance(sql, str) and sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            virtual.add(name)
        if column is not None:
            columns.setdefault(name, set()).add(column)
    for table, expected in TABLES.items():
        kind = kinds.get(table)
        if kind is None:
            return f"it has no `{table}` table"
        if kind != "table" or table in virtual:
            return f"its `{table}` is a {'virtual table' if kind == 'table' else kind}, not the table cody-lsp made"
        found = columns.get(table, set())
        if found != expected:
            missing, extra = sorted(expected - found), sorted(found - expected)
            said = "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(extra)}" if extra else "",
                )
                if part
            )
            return f"its `{table}` table does not have the columns cody-lsp made ({said[:300]})"
    if triggers:
        return f"it has a trigger cody-lsp never makes (`{triggers[0][:100]}`), which would run at every write"
    return None


def refusal(path: object, problem: str) -> str:
    """The message of a database `shape_problem` refused."""
    return (
        f"the session database {path} is not as cody-lsp made it: {problem}. Another program changed it (its "
        "schema version is this cody-lsp's); nothing is read from it: move it away to keep it for inspection "
        "(cody-lsp then makes a new one), or set CODY_DB to another file"
    )
