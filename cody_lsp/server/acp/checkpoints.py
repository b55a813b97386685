"""Checkpoints in the ACP face (issue 20): the `/rewind` and `/fork` slash commands.

ACP v1 has no methods for checkpoints, so a client reaches them the way it reaches `/compact`: a
prompt that is only the command. `/rewind` lists the session's checkpoints, numbered from 1
(`cody/listCheckpoints`), each with its turn's prompt and the files changed since; `/rewind N
[files|conversation|both]` restores checkpoint N (`cody/restoreCheckpoint`, both by default; the
restore records an undo checkpoint first, listed last, which `/rewind` of its number restores);
`/fork [N]` makes a new session holding the turns before checkpoint N's (all of them when absent;
`cody/forkSession`), which the client opens from its session list. The answer is told as the
agent's text; the prompt ends `end_turn`. The command is taken in request order like a prompt:
a prompt sent behind a restore waits for it. Bad arguments are -32602 saying what to type; a
busy session -32600 (the core's SessionBusy).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...protocol.wire import (
    CheckpointInfo,
    ForkSessionParams,
    InvalidParams,
    ListCheckpointsParams,
    RestoreCheckpointParams,
    RestoreResult,
)
from .updates import text_update

if TYPE_CHECKING:
    from ..core.api import RunManager
    from .client_port import AcpClient

MODES = {"files": "files", "conversation": "conversation", "both": "both"}
PROMPT_SHOWN = 60  # characters of a turn's prompt in the listing
FILES_SHOWN = 6  # changed files named per checkpoint (then "and N more")

COMMANDS = [
    {
        "name": "rewind",
        "description": "List the turns with what rewinding to each restores; /rewind N [files|conversation|both] "
        "goes back to turn N (a restore can be undone: it is listed too)",
        "input": {"hint": "N [files|conversation|both], or nothing to list the turns"},
    },
    {
        "name": "fork",
        "description": "Start a new session holding this one's turns before turn N (all of them); files are not touched",
        "input": {"hint": "N, or nothing for the whole conversation"},
    },
]


def command(text: str) -> tuple[str, list[str]] | None:
    """The checkpoint command a prompt is (its name, its arguments), or None."""
    words = text.split()
    if words and words[0] in ("/rewind", "/fork"):
        return words[0][1:], words[1:]
    return None


def available(manager: RunManager) -> bool:
    return manager.checkpoints_on


Wait = Callable[[], Awaitable[Any]]
Cancelled = Callable[[], Awaitable[None]] | None


async def run_command(
    client: AcpClient, manager: RunManager, session_id: str, name: str, args: list[str]
) -> tuple[Wait, Cancelled]:
    """Take the command in (in request order: the session looked up, a restore marked as under
    way): what then does the rest and tells the answer, and what undoes the taking in when the
    prompt is cancelled before that."""
    if name == "rewind" and not args:
        return await _listing(client, manager, session_id), None
    if name == "rewind":
        return await _restore(client, manager, session_id, args)
    return await _fork(client, manager, session_id, args), None


def _tell(client: AcpClient, session_id: str, text: str) -> dict[str, Any]:
    client.update(session_id, text_update("agent_message_chunk", text))
    return {"stopReason": "end_turn"}


async def _listing(client: AcpClient, manager: RunManager, session_id: str) -> Wait:
    listing = await manager.begin_list_checkpoints(ListCheckpointsParams(session_id))

    async def wait() -> Any:
        found = await listing()
        if found.unavailable:
            return _tell(client, session_id, f"Checkpoints are off on this server: {found.unavailable}.")
        if not found.checkpoints:
            return _tell(client, session_id, "No checkpoints in this session yet: one is recorded before each turn.")
        prompts = await _prompts(manager, session_id, found.checkpoints)
        lines = ["Checkpoints of this session (the files as they were before each turn):", ""]
        listed = found.checkpoints
        for number, info in enumerate(listed, 1):
            lines.append(f"{number}. {_what(info, prompts)} — {_restores(listed[number - 1 :])}; {_changed(info)}")
        lines += [
            "",
            "`/rewind N` goes back to checkpoint N: the files it names are put back as they were then, and "
            "the conversation ends before its turn; `/rewind N files` or `/rewind N conversation` does only "
            "one of them; `/fork N` starts a new session with the turns before N.",
        ]
        return _tell(client, session_id, "\n".join(lines))

    return wait


async def _pick(manager: RunManager, session_id: str, word: str, command: str) -> tuple[str, int | None]:
    """Checkpoint number `word` of the session's list: its id and its run's prompt position."""
    listed = await manager.listed_checkpoints(session_id)
    if not listed:
        raise InvalidParams(f"{command}: this session has no checkpoints yet (one is recorded before each turn)")
    if not word.isdigit() or not 1 <= int(word) <= len(listed):
        raise InvalidParams(
            f"{command} {word}: there is no checkpoint {word}; say a number from 1 to {len(listed)} "
            "(/rewind lists them)"
        )
    return listed[int(word) - 1]


async def _restore(client: AcpClient, manager: RunManager, session_id: str, args: list[str]) -> tuple[Wait, Cancelled]:
    mode = MODES.get(args[1].lower()) if len(args) > 1 else "both"
    if mode is None or len(args) > 2:
        raise InvalidParams("/rewind N [files|conversation|both]: say what to restore after the number")
    checkpoint_id, _position = await _pick(manager, session_id, args[0], "/rewind")
    params = RestoreCheckpointParams(checkpoint_id, mode, session_id)  # type: ignore[arg-type]
    work = await manager.begin_restore_checkpoint(params)

    async def wait() -> Any:
        result = await work.run()
        listed = await manager.listed_checkpoints(session_id)
        undo = next((n for n, (c, _p) in enumerate(listed, 1) if c == result.undo_checkpoint_id), None)
        return _tell(client, session_id, _restored(args[0], mode, result, undo))

    async def cancelled() -> None:
        work.abort()

    return wait, cancelled


def _restored(number: str, mode: str, result: RestoreResult, undo: int | None) -> str:
    done = []
    if mode != "conversation":
        files = ", ".join(f"{c.path} ({c.status})" for c in result.files)
        done.append(f"{len(result.files)} file(s) restored" + (f": {files}" if files else ""))
    if result.conversation is not None:
        done.append(
            f"the conversation now ends before that turn ({result.conversation.position} messages; "
            "the later ones are no longer sent to the model — load the session again to see it as it is)"
        )
    lines = [f"Rewound to checkpoint {number}: {'; '.join(done)}."]
    lines += [f"- {n.path} not restored: {n.reason}" for n in result.not_restored or []]
    lines += [f"- {s.path} left alone: {s.size:,} bytes, over the size cap" for s in result.skipped or []]
    if undo is not None:
        lines.append(f"To undo: `/rewind {undo}`.")
    return "\n".join(lines)


async def _fork(client: AcpClient, manager: RunManager, session_id: str, args: list[str]) -> Wait:
    if len(args) > 1:
        raise InvalidParams("/fork [N]: one checkpoint number, or nothing for the whole conversation")
    position = None
    if args:
        _checkpoint_id, position = await _pick(manager, session_id, args[0], "/fork")
        if position is None:
            raise InvalidParams(f"/fork {args[0]}: checkpoint {args[0]} is a restore's, not a turn's; pick a turn")
    forked = await manager.fork_session(ForkSessionParams(session_id, position))

    async def wait() -> Any:
        return _tell(
            client,
            session_id,
            f"Forked into a new session, {forked.id} ({forked.title!r}, {forked.message_count} messages); "
            "files are not touched. Open it from the session list to go on there; this session is unchanged.",
        )

    return wait


async def _prompts(manager: RunManager, session_id: str, listed: list[CheckpointInfo]) -> dict[int, str]:
    """The text of each listed turn's prompt, by its history position."""
    found: dict[int, str] = {}
    for info in listed:
        if info.position is not None:
            message = await manager.message_at(session_id, info.position)
            if message is not None:
                found[info.position] = message.content or ""
    return found


def _what(info: CheckpointInfo, prompts: dict[int, str]) -> str:
    if info.kind == "undo":
        return f"before the restore of {info.created_at} (restoring it undoes that restore)"
    text = " ".join((prompts.get(info.position, "") if info.position is not None else "").split())
    if len(text) > PROMPT_SHOWN:
        text = text[: PROMPT_SHOWN - 1] + "…"
    return f"before “{text}”"


def _changed(info: CheckpointInfo) -> str:
    """What its turn (or its restore) changed: from it to the next checkpoint listed."""
    if not info.changes:
        return "its turn changed no file"
    files = ", ".join(f"{c.path} ({c.status})" for c in info.changes[:FILES_SHOWN])
    more = f" and {len(info.changes) - FILES_SHOWN} more" if len(info.changes) > FILES_SHOWN else ""
    return f"its turn changed {files}{more}"


RESTORED = {"added": "removed", "deleted": "recreated", "modified": "put back"}


def restored_files(since: list[CheckpointInfo]) -> list[tuple[str, str]]:
    """What rewinding to `since[0]` does to each file (path, removed | recreated | put back): the
    files changed from it to the folder now (each checkpoint's changes run to the next one's), a
    file made and deleted again since left out. Sorted by path."""
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for info in since:
        for change in info.changes:
            first.setdefault(change.path, change.status)
            last[change.path] = change.status
    done = []
    for path in sorted(first):
        existed, exists = first[path] != "added", last[path] != "deleted"
        if existed or exists:
            status = "modified" if existed and exists else ("deleted" if existed else "added")
            done.append((path, RESTORED[status]))
    return done


def _restores(since: list[CheckpointInfo]) -> str:
    """What `/rewind N` would restore, said for the listing."""
    files = restored_files(since)
    if not files:
        return "rewinding here restores no file (the folder is as it was)"
    shown = ", ".join(f"{path} ({what})" for path, what in files[:FILES_SHOWN])
    more = f" and {len(files) - FILES_SHOWN} more" if len(files) > FILES_SHOWN else ""
    return f"rewinding here restores {len(files)} file(s): {shown}{more}"
