"""cody/listChanges and cody/revertChanges: a run's changes hunk by hunk, and putting some of them back.

A run's changes are those from the checkpoint before it to the folder as the run left it (the `end`
state recorded when it ends: RunCheckpoints.ended); without a run, the session's changes from its
first checkpoint to the state its latest run left. The work (diffs, the match against the files as
they are now, the writes) is server/checkpoints/hunks.py's; here: which session and run, who may
revert now (as for a restore: not while a run of the session is active or queued, nor while another
server process runs a session of the folder), what a request may name, and the wire's types.

A revert is all or nothing: a chosen hunk whose lines are no longer what the run left (on disk, or in
the editor's buffer for an open file) fails the whole request (-32602, naming the files) and nothing
is written. Otherwise an `undo` checkpoint is recorded first (cody/restoreCheckpoint of it undoes the
revert), the model's next request is told which files changed, and its file tools must read them
again before changing them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ...protocol.wire import (
    ChangedFile,
    ChangeList,
    FileChange,
    Hunk,
    InvalidParams,
    ListChangesParams,
    RevertChangesParams,
    RevertResult,
)
from ..checkpoints.hunks import Conflict, FileChanges, Review, hunk_state, plan_revert, split_lines
from ..checkpoints.service import Checkpoints, Restored
from ..store.checkpoints import CheckpointRow
from ..store.records import SessionRecord
from ..tools.names import show, unescape
from .errors import SessionBusy


class ChangeReview:
    def __init__(self, owner: Any):
        # The core's checkpoints (checkpointing.RunCheckpoints, which makes this): its engine, how it
        # finds sessions, settings and a session's tools, and how a restore holds a session.
        self._owner = owner

    def _engine(self) -> Checkpoints:
        engine: Checkpoints = self._owner._engine()
        return engine

    async def _range(self, session: SessionRecord, run_id: str | None) -> tuple[CheckpointRow | None, str | None]:
        """The checkpoint the changes count from (None: the session has none) and the tree they count
        to (None: the folder now — the run is still going, or its end was not recorded)."""
        rows = self._engine().rows
        if run_id is None:
            runs = [r for r in await rows.listed(session.id, session.workspace_folder) if r.kind == "run"]
            if not runs:
                return None, None
            before, last = runs[0], runs[-1].run_id
        else:
            found, _ = await rows.run_rows(run_id)
            listed = found is not None and found.folder == session.workspace_folder
            if listed and found is not None and found.session_id != session.id:
                listed = await rows.prompt_position(session.id, run_id) is not None
            if found is None or not listed:
                raise InvalidParams(
                    f"run '{run_id}' is not a run of session '{session.id}' with a checkpoint "
                    "(cody/listCheckpoints lists the session's runs)"
                )
            before, last = found, run_id
        assert last is not None
        await self._owner.end_recorded(last)
        _, end = await rows.run_rows(last)
        return before, end.tree if end is not None else None

    # ------------------------------------------------------------------ listing

    async def begin_list(self, params: ListChangesParams) -> Callable[[], Awaitable[ChangeList]]:
        """cody/listChanges: the session looked up (in request order), then the listing."""
        self._engine()
        session = await self._owner._session(params.session_id)

        async def listing() -> ChangeList:
            before, end = await self._range(session, params.run_id)
            if before is None:
                return ChangeList([])
            files = await self._files(session, before, end)
            return ChangeList([await self._shown(session, f) for f in files], before.id)

        return listing

    async def _files(self, session: SessionRecord, before: CheckpointRow, end: str | None) -> list[FileChanges]:
        config = await self._owner._config_for(session.workspace_folder)
        return await Review(self._engine()).files(
            session.workspace_folder, before.tree, end, config.checkpoints.max_file_bytes
        )

    async def _shown(self, session: SessionRecord, file: FileChanges) -> ChangedFile:
        hunks = file.hunks
        states: list[str | None] = [None] * len(hunks)
        if hunks:
            editor = self._owner._tools(session.id).editor
            now = (await Review(self._engine()).current(session.workspace_folder, [file.path], editor))[file.path]
            text = now.text
            absent = now.doc is None and now.data is None  # (a file the run added, removed since: reverted)
            lines = split_lines(text) if text is not None else [] if absent else None
            old, new = file.old_lines, file.new_lines

            def states_of() -> list[str | None]:
                cache: dict[str, list[tuple[int, int, int]]] = {}
                return [hunk_state(old, new, lines, h, cache) for h in hunks]

            states = await asyncio.to_thread(states_of)
        return ChangedFile(
            show(file.path),
            file.status,
            file.binary,
            [
                Hunk(h.old_start, h.old_lines, h.new_start, h.new_lines, list(h.lines), state)  # type: ignore[arg-type]
                for h, state in zip(hunks, states, strict=True)
            ],
        )

    # ------------------------------------------------------------------ reverting

    async def begin_revert(self, params: RevertChangesParams) -> Reverting:
        """cody/revertChanges: checked and its session marked as being changed (in request order: a run
        sent behind waits for it); `Reverting.run()` does the work."""
        owner = self._owner
        self._engine()
        session = await owner._session(params.session_id)
        reason = owner._busy(session, True)
        if reason is None and session.id in owner._restoring:
            reason = f"session '{session.id}' is being restored already; wait for that restore to end"
        if reason is not None:
            raise SessionBusy(reason.replace("then restore", "then revert"))
        owner._restoring[session.id] = asyncio.Event()
        try:
            await owner._leased(session, "revert changes")
            await owner._no_other_process_in(session)
        except BaseException:
            owner._restored(session.id, held=False)
            raise

        return Reverting(self, session, params)

    async def _revert(self, session: SessionRecord, params: RevertChangesParams) -> RevertResult:
        owner = self._owner
        before, end = await self._range(session, params.run_id)
        if before is None:
            raise InvalidParams(f"session '{session.id}' has no checkpoint: there is nothing to revert")
        files = {f.path: f for f in await self._files(session, before, end)}
        chosen = _chosen(files, params)
        if not chosen:
            raise InvalidParams("nothing to revert: the run changed no file")
        tools = owner._tools(session.id)
        review = Review(self._engine())
        now = await review.current(session.workspace_folder, list(chosen), tools.editor)
        planned, conflicts = await asyncio.to_thread(plan_revert, files, chosen, now)
        if conflicts:
            names = ", ".join(show(p) for p in conflicts[:10]) + (
                f" and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
            )
            raise InvalidParams(
                f"cannot revert: the changes in {names} are no longer what the run left there (changed since, on "
                "disk or in the editor); nothing was reverted. cody/listChanges shows each hunk's state"
            )
        config = await owner._config_for(session.workspace_folder)
        try:
            undo, done = await review.revert(
                before, session.id, planned, config.checkpoints.max_file_bytes, tools.editor
            )
        except Conflict as exc:
            raise InvalidParams(f"the revert stopped: {exc}") from None
        await owner._restored_files(session, before, Restored(undo, done), tools)
        return RevertResult(undo.id, [FileChange(show(p), s) for p, s in done])  # type: ignore[arg-type]


@dataclass
class Reverting:
    """A cody/revertChanges taken in: `run()` does it (a cancelled caller does not stop it half way);
    `abort()` gives up one that never ran."""

    review: ChangeReview
    session: SessionRecord
    params: RevertChangesParams

    async def run(self) -> RevertResult:
        async def work() -> RevertResult:
            try:
                return await self.review._revert(self.session, self.params)
            finally:
                self.abort()

        return await asyncio.shield(asyncio.ensure_future(work()))

    def abort(self) -> None:
        self.review._owner._restored(self.session.id)


def _chosen(files: dict[str, FileChanges], params: RevertChangesParams) -> dict[str, list[int] | None]:
    """path → the hunks to put back (None: the whole file), as the request names them."""

    def whole_or_all(file: FileChanges) -> list[int] | None:
        return list(range(len(file.hunks))) if file.status == "modified" and file.hunks else None

    if params.files is None:
        return {path: whole_or_all(file) for path, file in files.items()}
    chosen: dict[str, list[int] | None] = {}
    for i, item in enumerate(params.files):
        path = _relative(item.path)
        file = files.get(path)
        if file is None:
            raise InvalidParams(
                f"files[{i}]: {item.path!r} is not a file the run changed (cody/listChanges lists them)"
            )
        if item.hunks is None:
            chosen[path] = whole_or_all(file)
            continue
        bad = [n for n in item.hunks if not 0 <= n < len(file.hunks)]
        if bad or not item.hunks:
            count = len(file.hunks)
            raise InvalidParams(
                f"files[{i}].hunks: {item.path} has {count} hunk{'s' if count != 1 else ''} (0 to {count - 1})"
                if count
                else f"files[{i}].hunks: {item.path} has no hunks (binary, added or deleted whole): leave 'hunks' out"
            )
        if file.status != "modified" or file.binary:
            chosen[path] = None
        else:
            chosen[path] = sorted(set(item.hunks) | set(chosen.get(path) or []))
    return chosen


def _relative(path: str) -> str:
    """A path of the folder as a client gives it (shown form, '/' between names), as git stores it."""
    parts = [p for p in unescape(path).strip("/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InvalidParams(f"'path' {path!r} must be a path relative to the workspace folder, with '/'")
    return "/".join(parts)
