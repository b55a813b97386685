"""The session database's schema: forward migrations, one per version (`PRAGMA user_version`)."""

from __future__ import annotations

# Forward migrations: MIGRATIONS[i] takes the schema from user_version i to i+1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id               TEXT PRIMARY KEY,
        title            TEXT,
        model            TEXT NOT NULL,
        workspace_folder TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        message_count    INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_folder ON sessions (workspace_folder, updated_at DESC, id DESC);
    CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, id DESC);
    CREATE TABLE messages (
        session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        position     INTEGER NOT NULL,
        role         TEXT NOT NULL,
        content      TEXT,
        tool_calls   TEXT,
        tool_call_id TEXT,
        tool_name    TEXT,
        kind         TEXT NOT NULL DEFAULT 'message',
        run_id       TEXT,
        created_at   TEXT NOT NULL,
        PRIMARY KEY (session_id, position)
    );
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        status      TEXT NOT NULL,
        error       TEXT,
        usage       TEXT,
        owner       TEXT,
        started_at  TEXT NOT NULL,
        ended_at    TEXT
    );
    CREATE INDEX runs_by_session ON runs (session_id);
    CREATE INDEX runs_running ON runs (status) WHERE status = 'running';
    """,
    # 1 → 2: whether a tool message's tool succeeded (NULL for other messages and old rows).
    """
    ALTER TABLE messages ADD COLUMN ok INTEGER;
    """,
    # 2 → 3: display-only messages (a failed turn that changed nothing: the model never
    # sees it) and why a stopped or failed turn ended (JSON {"code", "message"}).
    """
    ALTER TABLE messages ADD COLUMN for_model INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE messages ADD COLUMN error TEXT;
    """,
    # 3 → 4: approval rules that last ("allow always" answers; cody/listPermissionRules). A
    # session rule has its session_id; every rule has the folder it was given in.
    """
    CREATE TABLE permission_rules (
        id               TEXT PRIMARY KEY,
        tool_name        TEXT NOT NULL,
        scope            TEXT NOT NULL,
        workspace_folder TEXT NOT NULL,
        session_id       TEXT REFERENCES sessions (id) ON DELETE CASCADE,
        command_prefix   TEXT,
        created_at       TEXT NOT NULL
    );
    CREATE INDEX permission_rules_by_folder ON permission_rules (workspace_folder, tool_name);
    CREATE INDEX permission_rules_by_session ON permission_rules (session_id) WHERE session_id IS NOT NULL;
    """,
    # 4 → 5: a session's token usage (the sums of its runs' usage so far, filled in from them)
    # and context size; the calibration of its estimates (JSON {"reported", "raw"}); the
    # compaction markers' cut (JSON, see compaction.CompactionRecord).
    """
    ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN context_tokens INTEGER;
    ALTER TABLE sessions ADD COLUMN calibration TEXT;
    ALTER TABLE messages ADD COLUMN compaction TEXT;
    CREATE INDEX messages_compactions ON messages (session_id, position) WHERE kind = 'compaction';
    UPDATE sessions SET
        input_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.inputTokens')), 0) FROM runs
                        WHERE runs.session_id = sessions.id),
        output_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.outputTokens')), 0) FROM runs
                         WHERE runs.session_id = sessions.id),
        total_tokens = (SELECT COALESCE(SUM(json_extract(usage, '$.totalTokens')), 0) FROM runs
                        WHERE runs.session_id = sessions.id);
    """,
    # 5 → 6: the user's answers about workspace-defined MCP servers (server/core/mcp_approvals.py):
    # per folder and server name, for the exact definition answered (its fingerprint).
    """
    CREATE TABLE mcp_approvals (
        workspace_folder TEXT NOT NULL,
        server           TEXT NOT NULL,
        fingerprint      TEXT NOT NULL,
        decision         TEXT NOT NULL,
        definition       TEXT NOT NULL,
        created_at       TEXT NOT NULL,
        PRIMARY KEY (workspace_folder, server)
    );
    """,
    # 6 → 7: which server process runs a session now (a lease: taken by a run, released at its end,
    # broken when its holder died), so two processes never run one session at once.
    """
    CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        owner      TEXT NOT NULL,
        taken_at   TEXT NOT NULL
    );
    """,
    # 7 → 8: checkpoints (server/checkpoints/): what a folder's shadow store recorded before a run
    # (kind 'run') or before a restore (kind 'undo', with its copy of the session's history); a
    # run's prompt found by its run id; the files a restore put back, for the model's next request.
    """
    CREATE TABLE checkpoints (
        id               TEXT PRIMARY KEY,
        workspace_folder TEXT NOT NULL,
        session_id       TEXT NOT NULL,
        kind             TEXT NOT NULL,
        run_id           TEXT,
        undoes           TEXT,
        tree             TEXT NOT NULL,
        skipped          TEXT,
        created_at       TEXT NOT NULL
    );
    CREATE INDEX checkpoints_by_run ON checkpoints (run_id) WHERE run_id IS NOT NULL;
    CREATE INDEX checkpoints_by_session ON checkpoints (session_id, created_at);
    CREATE INDEX checkpoints_by_age ON checkpoints (created_at, id);
    CREATE TABLE checkpoint_messages (
        checkpoint_id TEXT NOT NULL REFERENCES checkpoints (id) ON DELETE CASCADE,
        position      INTEGER NOT NULL,
        role          TEXT NOT NULL,
        content       TEXT,
        tool_calls    TEXT,
        tool_call_id  TEXT,
        tool_name     TEXT,
        kind          TEXT NOT NULL,
        run_id        TEXT,
        created_at    TEXT NOT NULL,
        ok            INTEGER,
        for_model     INTEGER NOT NULL,
        error         TEXT,
        compaction    TEXT,
        PRIMARY KEY (checkpoint_id, position)
    );
    CREATE INDEX checkpoint_messages_prompts ON checkpoint_messages (run_id)
        WHERE run_id IS NOT NULL AND kind = 'message' AND role = 'user';
    CREATE INDEX messages_prompts ON messages (run_id) WHERE run_id IS NOT NULL AND kind = 'message' AND role = 'user';
    ALTER TABLE sessions ADD COLUMN restored TEXT;
    """,
    # 8 → 9: a rule that refuses the calls it covers ('deny': an ACP client's "reject always")
    # rather than letting them run without asking ('allow', every rule before).
    """
    ALTER TABLE permission_rules ADD COLUMN decision TEXT NOT NULL DEFAULT 'allow';
    """,
    # 9 → 10: an assistant message's reasoning (the model's `reasoning_content`), to show it again
    # (ACP's session/load); never sent back to the model.
    """
    ALTER TABLE messages ADD COLUMN reasoning TEXT;
    """,
    # 10 → 11: a user message sent with attachments: `content` is what the user typed,
    # `model_content` what the model read (JSON: a string, or content parts with images) and
    # `attachments` what was attached, as the history shows it (JSON, wire.Attachment objects);
    # a checkpoint's copy of the history keeps them too.
    """
    ALTER TABLE messages ADD COLUMN model_content TEXT;
    ALTER TABLE messages ADD COLUMN attachments TEXT;
    ALTER TABLE checkpoint_messages ADD COLUMN model_content TEXT;
    ALTER TABLE checkpoint_messages ADD COLUMN attachments TEXT;
    """,
    # 11 → 12: a rule that runs the commands it covers in the sandbox (1) rather than as they are.
    """
    ALTER TABLE permission_rules ADD COLUMN sandboxed INTEGER NOT NULL DEFAULT 0;
    """,
    # 12 → 13: a session's mode ("code", "ask" or "plan"), and the instruction files in effect
    # (JSON list of paths; NULL for sessions made before).
    """
    ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'code';
    ALTER TABLE sessions ADD COLUMN instructions TEXT;
    """,
    # 13 → 14: a checkpoint's copy of the history keeps each message's reasoning too, so undoing a
    # conversation restore brings the turns' thinking back with them.
    """
    ALTER TABLE checkpoint_messages ADD COLUMN reasoning TEXT;
    """,
    # 14 → 15: the tool message of a `task` call keeps what its subagent did (JSON: its agent and
    # messages, queries.transcript_record reads it); a checkpoint's copy of the history too.
    """
    ALTER TABLE messages ADD COLUMN subagent TEXT;
    ALTER TABLE checkpoint_messages ADD COLUMN subagent TEXT;
    """,
    # 15 → 16: a session's plan (the agent's update_plan: JSON {entries, explanation}), and a
    # web_fetch rule's domain (the host whose fetches it covers).
    """
    ALTER TABLE sessions ADD COLUMN plan TEXT;
    ALTER TABLE permission_rules ADD COLUMN domain TEXT;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
