"""The command sandbox at the terminal (issue 23): `run` offers "sandboxed in this folder" as the
panel does, and the rule it makes runs the folder's later commands sandboxed without asking; a
command that asks to leave the sandbox shows its reason; the chat's header says when this
machine has no sandbox (simulated with a seccomp filter)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..sandboxing import SUPPORT, Place, needs_landlock, outside_tmp, without_landlock
from .cli_support import PROMPT, Terminal, cli_env

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def place() -> Iterator[Place]:
    with outside_tmp() as p:
        yield p


def env_for(provider, place: Place, **extra: str) -> dict[str, str]:
    return cli_env(provider, place.db, HOME=str(place.home), **extra)


def command(text: str, **args: object) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": text, **args})])


@needs_landlock
async def test_run_offers_the_sandboxed_folder_rule_and_it_holds(provider, place: Place) -> None:
    provider.add(
        command('echo 1 > "$HOME/one.txt"; echo 1 > one.txt'),
        command('echo 2 > "$HOME/two.txt"; echo 2 > two.txt'),
        Reply(text="Both ran."),
    )
    term = Terminal(["run", "write twice"], env_for(provider, place), place.folder, dimensions=(50, 240))
    try:
        await term.expect("Allow run_command?")
        await term.expect("Yes, and run every command of this folder sandboxed, without asking (s)")
        term.child.send("s")  # one key, no Enter
        await term.expect("always sandboxed in this folder, without asking")
        before = await term.expect("Both ran.")
        assert "Allow" not in before  # the second command was not asked about
        assert "cannot create" in before  # the output is cut to a line here: the files say the rest
        assert await term.exit_status() == 0
    finally:
        term.kill()
    assert (place.folder / "one.txt").exists() and (place.folder / "two.txt").exists()
    assert not (place.home / "one.txt").exists() and not (place.home / "two.txt").exists()


@needs_landlock
async def test_a_command_leaving_the_sandbox_shows_why(provider, place: Place) -> None:
    provider.add(
        command("touch ~/.cache-me", sandbox=False, reason="the build tool caches in my home"),
        Reply(text="Asked."),
    )
    env = env_for(provider, place, CODY_TOOL_POLICY="run_command=sandboxed")
    term = Terminal(["run", "build"], env, place.folder, dimensions=(50, 240))
    try:
        before = await term.expect("Allow run_command?")
        assert "outside the sandbox" in before and "reason: the build tool caches in my home" in before
        # Right after the question (matched above): yes or no, this call only, no "always".
        question = await term.expect("v. View the whole command")
        assert [line.strip() for line in question.splitlines() if line.strip()] == ["1. Yes (y)", "n. No"], question
        term.child.send("y")
        await term.expect("Asked.")
        assert await term.exit_status() == 0
    finally:
        term.kill()
    assert (place.home / ".cache-me").exists()


async def test_the_chat_header_says_when_there_is_no_sandbox(provider, place: Place) -> None:
    if not SUPPORT.seccomp:
        pytest.skip("the fallback is simulated with a seccomp filter, which this machine lacks")
    env = env_for(provider, place, CODY_TOOL_POLICY="run_command=sandboxed")
    args = ["chat", "--workspace", str(place.folder)]
    term = Terminal(args, env, place.folder, dimensions=(50, 240), wrap=without_landlock)
    try:
        header = " ".join((await term.expect(PROMPT)).split())  # as one line, however it wrapped
        assert "no command sandbox here (" in header and "asked about instead" in header
        assert "no Landlock" in header
        term.send_line("/exit")
        assert await term.exit_status() == 0
    finally:
        term.kill()
