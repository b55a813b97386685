"""`cody-lsp chat` steers (issue 11): a line typed while a run goes is sent as `next` and
reaches the model at its next step, /queue lists what waits, Ctrl+C interrupts the running
run and what is queued goes on."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall

from .cli_support import PROMPT, user_messages

GATE = "while [ ! -e go ]; do sleep 0.02; done; echo released"


async def test_a_line_typed_during_a_run_reaches_the_model_at_its_next_step(chat, provider, workspace: Path):
    provider.add(Reply(tool_calls=[ToolCall("run_command", {"command": GATE})]), Reply(text="Tests pass; README read."))
    term = await chat("--yes")
    term.send_line("run the tests")
    await term.expect("run_command")
    term.send_line("also read the README")
    await term.expect("» queued for the model's next step: also read the README")
    # Said when sent; /queue (cody/listQueued, in the session's request order) shows the server
    # has it queued: the tool's end is let go only then, or a loaded machine may end the step first.
    term.send_line("/queue")
    await term.expect("next also read the README")
    (workspace / "go").touch()
    await term.expect("› also read the README")  # it entered the run
    await term.expect("Tests pass; README read.")
    await term.expect(PROMPT)
    assert user_messages(provider.requests[1]) == ["run the tests", "also read the README"]
    assert provider.requests[1]["messages"][-2]["role"] == "tool"  # right after the tool's result
    term.send_line("/exit")
    assert await term.exit_status() == 0


async def test_queue_lists_and_ctrl_c_interrupts_while_the_queue_goes_on(chat, provider):
    provider.add(Reply(text="never", first_byte_delay=60), Reply(text="The queued one ran."))
    term = await chat("--yes")
    term.send_line("think hard")
    await provider.wait_for_requests(1)
    term.send_line("then this")
    await term.expect("» queued for the model's next step: then this")
    term.send_line("/queue")
    await term.expect("next then this")
    term.send_line("/mode plan")  # not run during a run, and said so (not kept for later)
    await term.expect("/mode was not run: during a run only /queue, /plan, /jobs and /stop work")
    term.child.send("\x03")
    await term.expect("cancelled")  # the running run was interrupted …
    await term.expect("› then this")  # … and the queued message started its own run
    await term.expect("The queued one ran.")
    await term.expect(PROMPT)
    await term.ready()
    assert user_messages(provider.requests[1])[-1] == "then this"
    assert "interrupted" in user_messages(provider.requests[1])[-2]
    term.send_line("/queue")
    await term.expect("Nothing is queued.")
    term.send_line("/exit")
    assert await term.exit_status() == 0
