"""Checkpoints: the state of a workspace folder recorded before each run, and put back on request.

A layer between the store and the core: it uses the file tools' confinement (tools/) and the
session store (store/checkpoints.py); the core (core/) decides when to record and who may restore.
No pygls, no wire types.

- git.py: running git with nothing of the user's git configuration, hooks or repository;
- ignores.py: the user's ignore rules as git would apply them to the folder;
- shadow.py: a folder's shadow store (its own git directory, index and refs) — snapshots, diffs;
- restore.py: writing a folder's files back through the confinement;
- service.py: `Checkpoints` — record, list, diff, restore, housekeeping.
"""
