"""The session database (database.py): sessions, runs, messages, rules, compactions, in SQLite (WAL)."""
