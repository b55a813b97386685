"""The terminal's checkpoints (issue 20): `/rewind` and `/fork` in `cody-lsp chat`, and
`cody-lsp sessions fork`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cody_lsp.client import CodyClient
from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT, cli_env, cody, user_messages


async def answer(term, text: str) -> None:
    """Type an answer once the question reads keys (a key sent before prompt_toolkit reads is lost)."""
    await asyncio.sleep(0.3)
    await term.ready()
    term.send_line(text)


def writes(name: str) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall("write_file", {"path": f"{name}.txt", "content": f"{name}\n"})]),
        Reply(text=f"Wrote {name}."),
    ]


async def test_rewind_lists_the_turns_and_restores_one_then_fork_goes_on_in_a_new_session(
    chat, provider, db_path: Path, workspace: Path
):
    provider.add(*writes("first"), *writes("second"))
    term = await chat("--yes")
    for name in ("first", "second"):
        term.send_line(f"write {name}")
        await term.expect(f"Wrote {name}.")
        await term.expect(PROMPT)
    term.send_line("/rewind")
    await term.expect("1  write first")
    await term.expect("first.txt (added)")  # what changed from turn 1 to turn 2
    await term.expect("2  write second")
    await term.expect("second.txt (added)")  # … and from turn 2 to now
    await term.expect("Go back to which one? (a number; Enter: none) ")
    await answer(term, "2")
    await term.expect("Restore both, only the files, or only the conversation? (b/f/c, Enter: both) ")
    await answer(term, "b")
    await term.expect("Rewound")
    await term.expect(PROMPT)
    assert not (workspace / "second.txt").exists() and (workspace / "first.txt").exists()

    provider.add(Reply(text="After the rewind."))
    term.send_line("what now")
    await term.expect("After the rewind.")
    await term.expect(PROMPT)
    first, note, now = user_messages(provider.requests[-1])
    assert (first, now) == ("write first", "what now") and "second.txt (deleted)" in note  # told of the files

    term.send_line("/rewind 1 files")
    await term.expect("first.txt (deleted)")
    await term.expect(PROMPT)
    assert not (workspace / "first.txt").exists()

    provider.add(Reply(text="In the fork."))
    term.send_line("/fork 3")  # 1: "write first", 2: the undo of the rewind, 3: "what now" (the fork ends before it)
    await term.expect("Forked")
    await term.expect(PROMPT)
    term.send_line("in the fork")
    await term.expect("In the fork.")
    await term.expect(PROMPT)
    assert [m for m in user_messages(provider.requests[-1]) if not m.startswith("[The user restored")] == [
        "write first",
        "in the fork",
    ]
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_sessions_fork(provider, db_path: Path, workspace: Path):
    env = cli_env(provider, db_path)
    provider.add(*writes("one"), *writes("two"))
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        first = await client.run("one", workspace_folder=workspace)
        await client.run("two", session_id=first.session_id)
        listing = await client.list_checkpoints(first.session_id)
    code, out, err = await cody(
        ["sessions", "fork", first.session_id[:12], "--position", str(listing.checkpoints[1].position)], env, workspace
    )
    assert code == 0, err
    assert out.startswith(f"forked {first.session_id} into ses_") and "(4 messages)" in out
    forked = out.split(" into ")[1].split(":")[0]
    async with await CodyClient.spawn(env=env, workspace_folders=[workspace]) as client:
        page = await client.get_session(forked)
    assert page.session.title.endswith(" (fork)") and [m.content for m in page.messages][0] == "one"
    code, out, err = await cody(["sessions", "fork", first.session_id, "--position", "1"], env, workspace)
    assert code == 2 and "not the position of a run's prompt" in err
