"""A message sent with attachments while the session is busy (priority `next`): taken into the
active run at its boundary with its attachments, kept in the history as sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from cody_lsp.protocol.wire import Attachment
from cody_lsp.server.agent.history import attachment_record

from ..harness import answer, calls, close_stores, make_harness
from .test_steering import gate_tools, until

pytestmark = pytest.mark.timeout(20)


@pytest.fixture(autouse=True)
async def _close_stores():
    yield
    await close_stores()


async def test_a_next_message_brings_its_attachments_into_the_run(tmp_path: Path):
    h = await make_harness(tmp_path, steering=True)
    tool_started, tool_release = gate_tools(h, "1 failed")
    h.steps = [calls(("run_command", '{"command": "pytest"}')), answer("I see the failure")]
    active, active_task = h.start("run the tests")
    await tool_started.wait()
    terminal = Attachment("terminal", text="E   assert 1 == 2\n", name="pytest")
    steer, steer_task = h.start("this one", session_id=active.session_id, priority="next", attachments=[terminal])
    await until(lambda: h.queues() == [["this one"]], "the queued next message")
    tool_release.set()
    await active_task, await steer_task
    assert h.requests[1][-1] == {
        "role": "user",
        "content": "[Attachments: 1]\n\n[Attachment 1: terminal output (pytest)]\n```\nE   assert 1 == 2\n```"
        "\n\n[Message]\nthis one",
    }
    messages, _ = await h.store.messages.page(active.session_id or "", 100, None)
    taken = messages[3]
    assert (taken.role, taken.content, taken.attachments) == ("user", "this one", [attachment_record(terminal)])
    # The next run's model request reads it as the model read it then.
    h.steps = [answer("ok")]
    await h.run("more", session_id=active.session_id)
    assert h.requests[2][4] == h.requests[1][-1]
