"""Checkpoints in the run core: the one before each run, and cody/listCheckpoints, diffCheckpoint,
restoreCheckpoint and forkSession.

Before a run's turn: the note of the files a restore put back (if any) joins the history, for the
model's next request; then the folder's state is recorded (`Recording`) while the model's first
step streams — the run's first tool waits for it (`Recording.ready`), and so does the run's end, so
the `checkpoint` chunk always comes after `session_start` and before the first `tool_call` and the
terminal chunk. A checkpoint that cannot be recorded (git failed, the folder went away) is logged;
the run goes on.

A restore is refused (-32002, session busy) while a run of its session is active or queued or the
session is being compacted or restored, and a restore of files while a run of another session of
the same folder is active. Other server processes on the same database count: a restore, and a
fork, take the session's lease (store.leases.take, as a run does) and are refused while another
process holds it; a restore holds it until it has ended, so no run of another process starts in
the middle; a files restore is refused while another process holds the lease of a session of the
same folder. After a files restore, the conflict check of the session's file tools
treats the restored files as changed (they must be read again before an edit), and the model's next
request says which they were.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ...config import ServerConfig
from ...protocol.wire import (
    CheckpointCreated,
    CheckpointDiff,
    CheckpointInfo,
    CheckpointList,
    DiffCheckpointParams,
    FileChange,
    ForkSessionParams,
    InvalidParams,
    ListCheckpointsParams,
    NotRestored,
    RestoreCheckpointParams,
    RestoredConversation,
    RestoreMode,
    RestoreResult,
    SkippedFile,
)
from ..checkpoints.service import Checkpoints, Refused, Restored, UnknownPath
from ..checkpoints.shadow import Change, FolderGone
from ..store.checkpoints import CheckpointRow, CheckpointRows
from ..store.leases import describe_holder
from ..store.records import SessionRecord
from ..tools import ToolConfig
from ..tools.names import show, unescape
from .change_review import ChangeReview
from .errors import SessionBusy
from .events import RunEventStream

log = logging.getLogger(__name__)

MAX_TITLE = 200
NOTE_FILES = 50  # files named in the note to the model; the rest counted
FORK_SUFFIX = " (fork)"
CLOSE_TIMEOUT = 5.0  # seconds the recording checkpoints get when the server closes


def note_text(checkpoint_id: str, files: list[tuple[str, str]]) -> str:
    """What the model is told, before its next request, about the files restores put back."""
    shown = [f"{show(path)} ({status})" for path, status in files[:NOTE_FILES]]
    more = f", and {len(files) - NOTE_FILES} more" if len(files) > NOTE_FILES else ""
    return (
        f"[The user restored files of the workspace to a checkpoint ({checkpoint_id}): {', '.join(shown)}{more}. "
        "Their content may not be what you read or wrote before: read them again before you change them.]"
    )


@dataclass
class Recording:
    """The checkpoint of one run, being recorded."""

    task: asyncio.Task[CheckpointRow | None]
    events: RunEventStream
    send_chunk: bool
    sent: bool = False
    run_id: str = ""
    session_id: str = ""
    # Records the folder as the run leaves it (RunCheckpoints._record_end), once; its task.
    end: Callable[[Recording], asyncio.Task[CheckpointRow | None]] | None = None
    ending: asyncio.Task[CheckpointRow | None] | None = None
    tools_ran: bool = False  # its first tool waited for it (`ready` before `finished`)
    # The editor's open documents as the run started (path → text): one the run left as it found
    # it is not the run's change, unsaved edits and all (the checkpoint before it is the disk).
    open_at_start: dict[str, str] = field(default_factory=dict)
    finishing: bool = False

    async def finished(self) -> CheckpointRow | None:
        """The run is ending: wait for its checkpoint (its chunk goes out), then record the folder as
        the run leaves it — before its terminal chunk, so the user's edits after it are never counted
        as the run's (a cancelled run does not wait: its end is recorded in the background). A run
        that ran no tool changed nothing: its end is its checkpoint (no snapshot)."""
        self.finishing = True
        row = await self.ready()
        if row is not None and self.end is not None:
            try:
                await asyncio.shield(self.end(self))
            except asyncio.CancelledError:
                pass  # recorded all the same, in the background
        return row

    async def ready(self) -> CheckpointRow | None:
        """Wait for it (the run's first tool, and the run's end, do); its chunk goes out once."""
        if not self.finishing:
            self.tools_ran = True
        try:
            row = await asyncio.shield(self.task)
        except asyncio.CancelledError:
            if not self.task.done():
                raise  # the run was cancelled while waiting: its end waits again
            row = None
        if row is not None and self.send_chunk and not self.sent:
            self.sent = True
            self.events.emit(CheckpointCreated(row.id))
        return row


class RunCheckpoints:
    def __init__(
        self,
        engine: Checkpoints | str,
        *,
        session: Callable[[str], Awaitable[SessionRecord]],
        config_for: Callable[[str], Awaitable[ServerConfig]],
        tools: Callable[[str], ToolConfig],
        forget: Callable[[str], None],
        busy: Callable[[SessionRecord, bool], str | None],
        wants_chunk: Callable[[], bool],
        hold: Callable[[str], Awaitable[None]],
        let_go: Callable[[str], None],
        folder_holders: Callable[[str], Awaitable[list[tuple[str, str]]]],
    ):
        # The engine, or why checkpoints are off (no git).
        self.engine = engine if isinstance(engine, Checkpoints) else None
        self.unavailable = engine if isinstance(engine, str) else None
        self._session = session
        self._config_for = config_for
        self._tools = tools
        self._forget = forget
        self._busy = busy
        self._wants_chunk = wants_chunk
        # The session lease (RunManager._hold/_let_go): SessionBusy while another server process
        # holds it; and the sessions of a folder other processes hold (store.leases.held_in).
        self._hold = hold
        self._let_go = let_go
        self._folder_holders = folder_holders
        self._restoring: dict[str, asyncio.Event] = {}  # sessions being restored; runs wait for them
        self._recording: set[asyncio.Task[CheckpointRow | None]] = set()
        # The folder as each run left it, being recorded (run id → its task): a run's changes end there.
        self._ending: dict[str, asyncio.Task[CheckpointRow | None]] = {}
        # cody/listChanges and cody/revertChanges (change_review.py).
        self.changes = ChangeReview(self)

    # ------------------------------------------------------------------ runs

    async def before_turn(self, session: SessionRecord, run_id: str) -> None:
        """A run's turn begins: wait for a restore of its session to end, then write the note of
        restored files the model has not been told of yet into the history."""
        restoring = self._restoring.get(session.id)
        if restoring is not None:
            await restoring.wait()
        if self.engine is None:
            return
        rows = self.engine.rows
        pending = await rows.pending_note(session.id)
        if pending is not None:
            raw, checkpoint_id, files = pending
            await rows.commit_note(session.id, run_id, raw, note_text(checkpoint_id, files))
            self._forget(session.id)

    def start(
        self, session: SessionRecord, run_id: str, config: ServerConfig, events: RunEventStream
    ) -> Recording | None:
        """Record the folder's state as the checkpoint of `run_id`, in the background."""
        engine = self.engine
        if engine is None:
            return None

        async def record() -> CheckpointRow | None:
            try:
                return await engine.record(
                    session.workspace_folder, session.id, run_id, config.checkpoints.max_file_bytes
                )
            except Exception as exc:
                log.warning("no checkpoint before run %s: %s: %s", run_id, type(exc).__name__, exc)
                return None

        task = asyncio.ensure_future(record())
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        end = functools.partial(self._record_end, engine, max_file_bytes=config.checkpoints.max_file_bytes)
        editor = self._tools(session.id).editor
        opened = {f.path: f.text for f in editor.open_files()} if editor is not None else {}
        return Recording(
            task, events, self._wants_chunk(), run_id=run_id, session_id=session.id, end=end, open_at_start=opened
        )

    async def close(self) -> None:
        """At the end: the checkpoints being recorded get a moment to be written (a cancelled run
        did not wait for its own), then housekeeping stops."""
        if self._recording:
            await asyncio.wait(list(self._recording), timeout=CLOSE_TIMEOUT)
        if self.engine is not None:
            await self.engine.close()

    def ended(self, config: ServerConfig, recording: Recording | None = None) -> None:
        """A run ended: the folder as it left it is recorded (in the background: its changes are those
        up to there, hunks.py), then housekeeping once the server is idle (with that folder's cap)."""
        engine = self.engine
        if engine is None:
            return
        if recording is not None and recording.end is not None:
            recording.end(recording)
        engine.request_housekeeping(config.checkpoints.store_max_bytes)

    def _record_end(
        self, engine: Checkpoints, recording: Recording, *, max_file_bytes: int
    ) -> asyncio.Task[CheckpointRow | None]:
        if recording.ending is not None:
            return recording.ending
        from ..checkpoints.hunks import record_end

        editor = self._tools(recording.session_id).editor  # its documents as the run leaves them
        # The documents the run (or the user meanwhile) changed in the editor: those in the state it
        # left. One it left as it found it is as on disk at its start, for the run's changes: an
        # unsaved edit of the user's from before the run is not the run's (nor every later run's).
        started = recording.open_at_start
        files = [f for f in editor.open_files() if started.get(f.path) != f.text] if editor is not None else []
        folders = list(editor.folders) if editor is not None else []

        async def record() -> CheckpointRow | None:
            try:
                before = await asyncio.shield(recording.task)
                if before is None:
                    return None
                if not recording.tools_ran:
                    return await record_end(engine, before, max_file_bytes, tree=before.tree)
                return await record_end(engine, before, max_file_bytes, files, folders)
            except Exception as exc:
                log.warning("the state a run left was not recorded: %s: %s", type(exc).__name__, exc)
                return None

        task = recording.ending = asyncio.ensure_future(record())
        key = recording.run_id
        self._ending[key] = task
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        task.add_done_callback(lambda done: self._ending.pop(key, None) if self._ending.get(key) is done else None)
        return task

    async def end_recorded(self, run_id: str) -> None:
        """Wait for the state the run left to be recorded, if it is being recorded."""
        task = self._ending.get(run_id)
        if task is not None:
            await asyncio.shield(task)

    # ------------------------------------------------------------------ methods

    def _engine(self) -> Checkpoints:
        if self.engine is None:
            raise SessionBusy(f"checkpoints are off on this server: {self.unavailable}")
        return self.engine

    async def _row(self, checkpoint_id: str) -> CheckpointRow:
        row = await self._engine().rows.get(checkpoint_id)
        if row is None:
            raise InvalidParams(
                f"unknown checkpoint '{checkpoint_id}': it does not exist or was pruned; "
                "cody/listCheckpoints lists a session's checkpoints"
            )
        return row

    async def begin_list(self, params: ListCheckpointsParams) -> Callable[[], Awaitable[CheckpointList]]:
        """cody/listCheckpoints: the session looked up (in request order), then the listing."""
        session = await self._session(params.session_id)
        engine = self.engine
        if engine is None:
            unavailable = CheckpointList([], self.unavailable)

            async def nothing() -> CheckpointList:
                return unavailable

            return nothing

        async def listing() -> CheckpointList:
            config = await self._config_for(session.workspace_folder)
            found = await engine.listing(session.id, session.workspace_folder, config.checkpoints.max_file_bytes)
            return CheckpointList([_info(row, changes) for row, changes in found])

        return listing

    async def listed(self, session_id: str) -> list[tuple[str, int | None]]:
        """The checkpoints the session lists, oldest first, as (id, its run's prompt position or
        None for an undo checkpoint): the rows only, without their changes (no git)."""
        engine = self._engine()
        session = await self._session(session_id)
        return [(row.id, row.position) for row in await engine.rows.listed(session.id, session.workspace_folder)]

    async def begin_diff(self, params: DiffCheckpointParams) -> Callable[[], Awaitable[CheckpointDiff]]:
        """cody/diffCheckpoint: the checkpoint looked up (in request order), then the diff."""
        engine = self._engine()
        row = await self._row(params.checkpoint_id)
        path = None if params.path is None else _relative(params.path)

        async def diff() -> CheckpointDiff:
            config = await self._config_for(row.folder)
            try:
                return CheckpointDiff(await engine.diff(row, path, config.checkpoints.max_file_bytes))
            except FolderGone:
                raise InvalidParams(
                    f"the workspace folder {row.folder} of checkpoint {row.id} does not exist"
                ) from None
            except UnknownPath:
                raise InvalidParams(
                    f"'path' {params.path!r} is neither in checkpoint {row.id} nor in the folder now "
                    "(paths are relative to the folder, with '/'; ignored and oversized files are in neither)"
                ) from None

        return diff

    async def begin_restore(self, params: RestoreCheckpointParams) -> Restore:
        """Take a restore in (in request order): checked, and its session marked as being restored
        (a run sent behind it waits for it). `Restore.run()` then does the work."""
        engine = self._engine()
        row = await self._row(params.checkpoint_id)
        session = await self._session(params.session_id or row.session_id)
        await self._check_listed(row, session)
        reason = self._busy(session, params.restore != "conversation")
        if reason is None and session.id in self._restoring:
            reason = f"session '{session.id}' is being restored already; wait for that restore to end"
        if reason is not None:
            raise SessionBusy(reason)
        if not os.path.isdir(row.folder):
            raise InvalidParams(f"the workspace folder {row.folder} of checkpoint {row.id} does not exist")
        self._restoring[session.id] = asyncio.Event()  # before any await: a run sent behind waits
        try:
            await self._leased(session, "restore")
            if params.restore != "conversation":
                await self._no_other_process_in(session)
        except BaseException:
            self._restored(session.id, held=False)
            raise
        return Restore(self, engine, row, session, params.restore)

    async def _leased(self, session: SessionRecord, doing: str) -> None:
        """Take the session's lease; SessionBusy, saying what to do, while another process holds it."""
        try:
            await self._hold(session.id)
        except SessionBusy as exc:
            raise SessionBusy(f"cannot {doing} now: {exc.message}") from None

    async def _no_other_process_in(self, session: SessionRecord) -> None:
        """A files restore: refused (the lease given back) while another server process runs a
        session of the same folder."""
        holders = await self._folder_holders(session.workspace_folder)
        others = [(sid, owner) for sid, owner in holders if sid != session.id]
        if others:
            self._let_go(session.id)
            sid, owner = others[0]
            raise SessionBusy(
                f"session '{sid}' of the same folder ({session.workspace_folder}) is being run by another "
                f"cody-lsp server ({describe_holder(owner)}): restoring files now would change them under it; "
                "wait for that run to end, or cancel it there, then restore"
            )

    async def _restore(
        self, engine: Checkpoints, row: CheckpointRow, session: SessionRecord, mode: RestoreMode
    ) -> RestoreResult:
        config = await self._config_for(row.folder)
        tools = self._tools(session.id)
        try:
            restored = await engine.restore(
                row,
                session.id,
                mode,
                config.checkpoints.max_file_bytes,
                tools.editor,
            )
        except Refused as exc:
            raise SessionBusy(str(exc)) from None
        except FolderGone:
            raise InvalidParams(f"the workspace folder {row.folder} of checkpoint {row.id} does not exist") from None
        if mode != "files":
            self._forget(session.id)
        if mode != "conversation":
            await self._restored_files(session, row, restored, tools)
        return RestoreResult(
            restored.undo.id,
            [FileChange(show(path), status) for path, status in restored.files],  # type: ignore[arg-type]
            RestoredConversation(restored.position) if restored.position is not None else None,
            [SkippedFile(show(p), size) for p, size in restored.skipped] or None,
            [NotRestored(show(p), why) for p, why in restored.not_restored] or None,
        )

    def _restored(self, session_id: str, *, held: bool = True) -> None:
        """A restore of the session is over (done, failed or never run): runs waiting for it go
        on, and its hold of the session's lease ends (once)."""
        done = self._restoring.pop(session_id, None)
        if done is not None:
            done.set()
            if held:
                self._let_go(session_id)

    async def _check_listed(self, row: CheckpointRow, session: SessionRecord) -> None:
        """The checkpoint must be one the session lists (its conversation is what a restore rewinds)."""
        if row.folder != session.workspace_folder:
            listed = False
        elif row.kind == "undo":
            listed = row.session_id == session.id
        else:
            assert row.run_id is not None
            listed = await self._engine().rows.prompt_position(session.id, row.run_id) is not None
        if not listed:
            raise InvalidParams(
                f"checkpoint '{row.id}' is not one of session '{session.id}' (cody/listCheckpoints lists them; "
                "the checkpoints of runs a conversation restore removed come back with its undo checkpoint)"
            )

    async def _restored_files(
        self, session: SessionRecord, row: CheckpointRow, restored: Restored, tools: ToolConfig
    ) -> None:
        """The model's next request says which files were restored; its file tools must read them
        again before changing them."""
        if not restored.files:
            return
        rows = self._engine().rows
        pending = await rows.pending_note(session.id)
        merged = dict(pending[2]) if pending is not None else {}
        merged.update(restored.files)
        await rows.set_pending_note(session.id, row.id, sorted(merged.items()))
        if tools.reads is not None:
            for path, _status in restored.files:
                tools.reads.restored(os.path.join(session.workspace_folder, path))

    async def fork(self, params: ForkSessionParams, new_id: str) -> SessionRecord:
        """A new session of the same folder with the source's history up to `position` (a run's
        prompt; all of it when absent). Files are not touched."""
        rows = self._engine().rows
        source = await self._session(params.session_id)
        await self._leased(source, "fork it")
        try:
            return await self._fork(rows, params, source, new_id)
        finally:
            self._let_go(source.id)

    async def _fork(
        self, rows: CheckpointRows, params: ForkSessionParams, source: SessionRecord, new_id: str
    ) -> SessionRecord:
        source = await self._session(source.id)  # as it is now that the lease is held
        count = source.message_count
        if params.position is not None:
            if not await rows.is_prompt(source.id, params.position):
                raise InvalidParams(
                    f"'position' {params.position} is not the position of a run's prompt in session "
                    f"'{source.id}' (cody/listCheckpoints gives each run's position)"
                )
            count = params.position
        title = source.title[: MAX_TITLE - len(FORK_SUFFIX)] + FORK_SUFFIX
        return await rows.fork(source, new_id, title, count)


@dataclass
class Restore:
    """A cody/restoreCheckpoint taken in (`RunCheckpoints.begin_restore`): `run()` does it;
    `abort()` gives up one that never ran."""

    owner: RunCheckpoints
    engine: Checkpoints
    row: CheckpointRow
    session: SessionRecord
    mode: RestoreMode

    async def run(self) -> RestoreResult:
        """Do it; a cancelled caller does not stop it half way (files are being written)."""

        async def work() -> RestoreResult:
            try:
                return await self.owner._restore(self.engine, self.row, self.session, self.mode)
            finally:
                self.abort()

        return await asyncio.shield(asyncio.ensure_future(work()))

    def abort(self) -> None:
        self.owner._restored(self.session.id)


def _relative(path: str) -> str:
    """A path of the folder as a client gives it (shown form, '/' between names), as git stores it."""
    text = unescape(path).strip("/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InvalidParams(f"'path' {path!r} must be a path relative to the workspace folder, with '/'")
    return "/".join(parts)


def _info(row: CheckpointRow, changes: list[Change]) -> CheckpointInfo:
    return CheckpointInfo(
        row.id,
        "undo" if row.kind == "undo" else "run",  # an "end" row is never listed
        row.created_at,
        [FileChange(show(c.path), c.status) for c in changes],
        [SkippedFile(show(p), size) for p, size in row.skipped],
        run_id=row.run_id,
        position=row.position,
        undoes=row.undoes,
    )
