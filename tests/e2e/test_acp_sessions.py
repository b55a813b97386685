"""Sessions through the ACP face: load (with its replay), resume, list, close, delete — across
restarts, across processes sharing the database, and sessions the LSP face made."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cody_lsp.testing.provider import Reply, ToolCall


def opened(workspace: Path, session: str) -> dict:
    return {"sessionId": session, "cwd": str(workspace), "mcpServers": []}


async def test_load_after_a_restart_replays_the_whole_conversation(acp, provider, workspace: Path):
    (workspace / "a.txt").write_text("alpha\n")
    provider.add(
        Reply(reasoning="Read it first.", text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "a.txt"})]),
        Reply(reasoning="It is alpha.", text="It says alpha."),
        Reply(text="word " * 300, text_deltas=300, delay=0.03),
    )
    first = await acp()
    session = await first.new_session(workspace)
    assert await first.prompt(session, "what is in a.txt?") == {"stopReason": "end_turn"}
    turn = first.prompt(session, "talk")
    await first.wait_event(lambda e: e["event"] == "update" and "word" in str(e["params"]["update"]))
    await first.cancel(session)
    assert await turn == {"stopReason": "cancelled"}
    assert await first.close() == 0

    second = await acp()
    loaded = await second.call("loadSession", opened(workspace, session))
    assert loaded["configOptions"][0]["currentValue"] == "scripted-model"
    await second.wait_event(lambda e: e["event"] == "update" and "available_commands" in str(e["params"]["update"]))
    replay = second.updates(session)
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds[:7] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_thought_chunk",
        "agent_message_chunk",
    ]
    assert replay[0]["content"]["text"] == "what is in a.txt?"
    assert replay[1]["content"]["text"] == "Read it first."
    assert replay[3]["kind"] == "read" and replay[3]["rawInput"] == {"path": "a.txt"}
    assert replay[4]["status"] == "completed" and "alpha" in replay[4]["content"][-1]["content"]["text"]
    assert replay[5]["content"]["text"] == "It is alpha."
    assert replay[6]["content"]["text"] == "It says alpha."
    assert replay[7] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "talk"}}
    assert replay[8]["sessionUpdate"] == "agent_message_chunk" and replay[8]["content"]["text"].startswith("word")
    # ^ what the cancelled turn had streamed (kept for display), marked as such, then its marker, as text
    assert replay[8]["_meta"] == {"cody": {"partial": True}}
    assert "_meta" not in replay[6]  # a finished answer is not
    assert "interrupted by the user" in replay[9]["content"]["text"]
    assert kinds[-1] == "available_commands_update"  # after the answer
    # The loaded session goes on where it was: its history reaches the model.
    provider.add(Reply(text="Still alpha."))
    assert await second.prompt(session, "and now?") == {"stopReason": "end_turn"}
    assert "It says alpha." in str(provider.requests[-1]["messages"])
    assert "Read it first." not in str(provider.requests[-1])  # the reasoning is shown, never sent back


async def test_load_replays_the_diffs_of_the_edits(acp, provider, workspace: Path):
    """A loaded session shows its edits as diffs, as the live turn did: an edit_file as the text it
    replaced and its replacement, a write_file that created its file as the new file; an overwrite,
    whose text before is not kept, only as its result; a failed edit has no diff."""
    (workspace / "app.py").write_text("import os\nprint('hi')\n")
    (workspace / "old.txt").write_text("before\n")
    calls = [
        ToolCall("edit_file", {"path": "app.py", "old_string": "print('hi')", "new_string": "print('hello')"}),
        ToolCall("write_file", {"path": "sub/new.txt", "content": "fresh\n"}),
        ToolCall("write_file", {"path": "old.txt", "content": "after\n"}),
        ToolCall("edit_file", {"path": "app.py", "old_string": "not there", "new_string": "x"}),
    ]
    provider.add(Reply(tool_calls=calls), Reply(text="Edited."))
    first = await acp()
    session = await first.new_session(workspace)
    await first.policy("allow_once")
    assert await first.prompt(session, "edit") == {"stopReason": "end_turn"}
    live = first.results(session)
    assert [u["content"][0]["type"] for u in live] == ["diff", "diff", "diff", "content"]
    assert await first.close() == 0

    second = await acp()
    await second.call("loadSession", opened(workspace, session))
    done = second.results(session)
    assert [u["status"] for u in done] == ["completed", "completed", "completed", "failed"]
    assert done[0]["content"][0] == {
        "type": "diff",
        "path": str(workspace / "app.py"),
        "oldText": "print('hi')\n",  # whole lines: no "No newline at end of file" for a file that has one
        "newText": "print('hello')\n",
    }
    assert done[1]["content"][0] == {
        "type": "diff",
        "path": str(workspace / "sub" / "new.txt"),
        "oldText": None,
        "newText": "fresh\n",
    }
    assert [c["type"] for c in done[2]["content"]] == ["content"]  # overwrote: no diff
    assert "overwrote" in done[2]["content"][0]["content"]["text"]
    assert [c["type"] for c in done[3]["content"]] == ["content"]
    # Each call followed by its own update, as live.
    ids = [u["toolCallId"] for u in live]
    order = [(u["sessionUpdate"], u["toolCallId"]) for u in second.updates(session) if "toolCallId" in u]
    assert order == [(kind, i) for i in ids for kind in ("tool_call", "tool_call_update")]


async def test_a_session_made_in_the_lsp_face_is_listed_and_loaded_here(acp, wire_factory, provider, workspace: Path):
    (workspace / "b.txt").write_text("beta\n")
    provider.add(Reply(tool_calls=[ToolCall("read_file", {"path": "b.txt"})]), Reply(text="It says beta."))
    lsp = await wire_factory()
    result, _chunks = await lsp.run("read b.txt", workspaceFolder=str(workspace))
    client = await acp()
    listed = await client.call("listSessions", {"cwd": str(workspace)})
    assert [s["sessionId"] for s in listed["sessions"]] == [result["sessionId"]]
    assert listed["sessions"][0]["title"] == "read b.txt"
    await client.call("loadSession", opened(workspace, result["sessionId"]))
    texts = [u["content"]["text"] for u in client.updates(result["sessionId"]) if u["sessionUpdate"].endswith("_chunk")]
    assert "read b.txt" in texts and "It says beta." in texts
    # And the other way round: a turn made here is in the LSP face's history.
    provider.add(Reply(text="From ACP."))
    await client.prompt(result["sessionId"], "hello from acp")
    page = await lsp.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert [m["content"] for m in page["messages"]][-2:] == ["hello from acp", "From ACP."]


async def test_reject_always_is_a_rule_that_holds_after_a_restart_and_in_the_lsp_face(
    acp, wire_factory, provider, workspace: Path
):
    """ACP's reject_always keeps a refusal rule of the session in the database: a restarted agent
    refuses the tool without asking, so does the LSP face, which lists the rule (decision deny)
    and can revoke it — then the tool is asked about again."""
    (workspace / "app.py").write_text("print('hi')\n")
    edit = ToolCall("edit_file", {"path": "app.py", "old_string": "print('hi')", "new_string": "print('bye')"})
    provider.add(Reply(tool_calls=[edit]), Reply(text="No."))
    first = await acp()
    session = await first.new_session(workspace)
    await first.policy("reject_always")
    assert await first.prompt(session, "one") == {"stopReason": "end_turn"}
    assert len(first.of("permission")) == 1
    assert await first.close() == 0

    provider.add(Reply(tool_calls=[edit]), Reply(text="Still no."))
    second = await acp()
    await second.call("loadSession", opened(workspace, session))
    await second.policy("allow_once")
    assert await second.prompt(session, "two") == {"stopReason": "end_turn"}
    assert second.of("permission") == []
    assert second.results(session)[-1]["status"] == "failed"
    assert "always reject" in provider.requests[-1]["messages"][-1]["content"]
    assert (workspace / "app.py").read_text() == "print('hi')\n"

    lsp = await wire_factory(capabilities={"permissions": True})
    [rule] = (await lsp.request("cody/listPermissionRules", {"sessionId": session}))["rules"]
    assert (rule["toolName"], rule["scope"], rule["decision"], rule["sessionId"]) == (
        "edit_file",
        "session",
        "deny",
        session,
    )
    provider.add(Reply(tool_calls=[edit]), Reply(text="No again."))
    await lsp.run("three", sessionId=session)
    assert lsp.permission_requests == []
    assert (workspace / "app.py").read_text() == "print('hi')\n"
    assert (await lsp.request("cody/revokePermissionRule", {"ruleId": rule["id"]}))["revoked"] is True
    provider.add(Reply(tool_calls=[edit]), Reply(text="Done."))
    await lsp.run("four", sessionId=session)
    assert len(lsp.permission_requests) == 1
    assert (workspace / "app.py").read_text() == "print('bye')\n"


async def test_list_pages_with_a_cursor_and_filters_by_folder(acp, tmp_path: Path, workspace: Path):
    other = tmp_path / "other"
    other.mkdir()
    client = await acp()
    made = [await client.new_session(workspace) for _ in range(55)]
    await client.new_session(other)
    first = await client.call("listSessions", {"cwd": str(workspace)})
    assert len(first["sessions"]) == 50 and "nextCursor" in first
    second = await client.call("listSessions", {"cwd": str(workspace), "cursor": first["nextCursor"]})
    assert len(second["sessions"]) == 5 and "nextCursor" not in second
    listed = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert sorted(listed) == sorted(made)
    assert all(s["cwd"] == str(workspace) for s in first["sessions"])
    everything = await client.call("listSessions", {})
    assert str(other) in {s["cwd"] for s in everything["sessions"]}
    error = await client.error_of("listSessions", {"cursor": "not-a-cursor"})
    assert error.code == -32602


async def test_resume_does_not_replay(acp, provider, workspace: Path):
    provider.add(Reply(text="One."), Reply(text="Two."))
    first = await acp()
    session = await first.new_session(workspace)
    await first.prompt(session, "one")
    second = await acp()
    resumed = await second.call("resumeSession", {"sessionId": session, "cwd": str(workspace)})
    assert resumed["configOptions"][0]["id"] == "model"
    await second.wait_event(lambda e: e["event"] == "update")
    assert [u["sessionUpdate"] for u in second.updates(session)] == ["available_commands_update"]
    assert await second.prompt(session, "two") == {"stopReason": "end_turn"}


async def test_load_in_another_folder_is_refused(acp, tmp_path: Path, workspace: Path):
    client = await acp()
    session = await client.new_session(workspace)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    error = await client.error_of("loadSession", opened(elsewhere, session))
    assert error.code == -32602 and "'cwd'" in error.message


async def test_close_ends_the_turn_and_the_session_stays(acp, provider, workspace: Path):
    provider.add(Reply(text="word " * 300, text_deltas=300, delay=0.03))
    client = await acp()
    session = await client.new_session(workspace)
    turn = client.prompt(session, "talk")
    await client.wait_event(lambda e: e["event"] == "update" and "word" in str(e["params"]["update"]))
    assert await client.call("closeSession", {"sessionId": session}) == {}
    assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
    listed = await client.call("listSessions", {"cwd": str(workspace)})
    assert session in [s["sessionId"] for s in listed["sessions"]]
    assert "configOptions" in await client.call("loadSession", opened(workspace, session))


async def test_delete_is_seen_by_every_process_sharing_the_database(acp, provider, workspace: Path):
    provider.add(Reply(text="One."))
    one, two = await acp(), await acp()
    session = await one.new_session(workspace)
    await one.prompt(session, "one")
    assert "configOptions" in await two.call("loadSession", opened(workspace, session))
    assert await one.call("deleteSession", {"sessionId": session}) == {}
    listed = await two.call("listSessions", {"cwd": str(workspace)})
    assert session not in [s["sessionId"] for s in listed["sessions"]]
    for op, params in [
        ("loadSession", opened(workspace, session)),
        ("resumeSession", {"sessionId": session, "cwd": str(workspace)}),
        ("prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        ("deleteSession", {"sessionId": session}),
    ]:
        error = await two.error_of(op, params)
        assert error.code == -32002, (op, error)


async def test_compact_command(acp, provider, workspace: Path):
    provider.add(Reply(text="One."), Reply(text="Two."), Reply(text="A summary of the talk."))
    client = await acp()
    session = await client.new_session(workspace)
    await client.prompt(session, "one")
    await client.prompt(session, "two")
    assert await client.prompt(session, "/compact") == {"stopReason": "end_turn"}
    told = client.updates(session, "agent_message_chunk")[-1]["content"]["text"]
    assert told.startswith("Compacted the conversation: "), told


async def test_the_model_is_a_config_option(acp, provider, workspace: Path):
    provider.add(Reply(text="One."))
    client = await acp()
    made = await client.call("newSession", {"cwd": str(workspace), "mcpServers": []})
    option, _mode = made["configOptions"]
    assert option["category"] == "model" and option["currentValue"] == "scripted-model"
    session = made["sessionId"]
    error = await client.error_of(
        "setSessionConfigOption", {"sessionId": session, "configId": "model", "value": "nope"}
    )
    assert error.code == -32602 and "'value'" in error.message
    error = await client.error_of("setSessionConfigOption", {"sessionId": session, "configId": "mode", "value": "x"})
    assert error.code == -32602 and "'value' must be one of 'code', 'ask', 'plan'" in error.message
    error = await client.error_of("setSessionConfigOption", {"sessionId": session, "configId": "x", "value": "x"})
    assert error.code == -32602 and "'configId'" in error.message
    changed = await client.call(
        "setSessionConfigOption", {"sessionId": session, "configId": "model", "value": "scripted-model"}
    )
    assert changed["configOptions"][0]["currentValue"] == "scripted-model"
    await client.prompt(session, "one")
    assert provider.requests[-1]["model"] == "scripted-model"


async def test_the_endpoints_models_are_offered_once_it_lists_them(acp, provider, workspace: Path):
    """The endpoint's models (GET /v1/models) join the session's and the environment's in the
    model option, after the first answer: a config_option_update tells each open session; the
    next sessions have them from the start, and a listed model can be chosen and is used."""
    provider.models = ["scripted-model", "big-model", "bad\u0007id", "x" * 300, "small-model"]
    client = await acp()
    first = await client.new_session(workspace)
    await client.wait_event(
        lambda e: e["event"] == "update" and e["params"]["update"]["sessionUpdate"] == "config_option_update"
    )
    [update] = client.updates(first, "config_option_update")
    option, mode = update["configOptions"]
    assert mode["id"] == "mode" and mode["currentValue"] == "code"
    assert [o["value"] for o in option["options"]] == ["scripted-model", "big-model", "small-model"]
    assert option["currentValue"] == "scripted-model"
    made = await client.call("newSession", {"cwd": str(workspace), "mcpServers": []})
    assert [o["value"] for o in made["configOptions"][0]["options"]] == ["scripted-model", "big-model", "small-model"]
    changed = await client.call(
        "setSessionConfigOption", {"sessionId": first, "configId": "model", "value": "big-model"}
    )
    assert changed["configOptions"][0]["currentValue"] == "big-model"
    provider.add(Reply(text="Big."))
    await client.prompt(first, "hello")
    assert provider.requests[-1]["model"] == "big-model"
    assert client.updates(made["sessionId"], "config_option_update") == []  # told once, to the sessions open then


async def test_an_endpoint_without_a_listing_leaves_the_models_as_they_are(acp, provider, workspace: Path):
    provider.models = []
    client = await acp()
    session = await client.new_session(workspace)
    provider.add(Reply(text="One."))
    await client.prompt(session, "one")
    assert client.updates(session, "config_option_update") == []
