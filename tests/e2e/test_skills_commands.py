"""Skills and custom slash commands through the LSP face (issue 35): the real server finds the
Agent Skills of the folder and of the user, gives the model only their names and descriptions, loads
a body with the `skill` tool, lets read_file read a user skill's folder, lists them (an invalid one
with its reason); it lists the custom commands with the built-in ones and expands `/review-pr 42`
from `.claude/commands/review-pr.md` in the model request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cody_lsp.testing.provider import Reply, ToolCall

from ..folders import write as put

pytestmark = pytest.mark.timeout(60)


def system(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


PDF_BODY = "To get a PDF's text run scripts/extract.sh FILE, then read the text.\nNever print whole PDFs."


async def test_skills_are_listed_described_loaded_and_an_invalid_one_skipped(
    wire_factory, provider, workspace: Path, tmp_path: Path
):
    home = tmp_path / "home"
    put(
        workspace,
        ".claude/skills/pdf-tools/SKILL.md",
        "---\nname: pdf-tools\ndescription: >\n  Extract text and tables from PDF files.\n  Use when a PDF is involved.\n"
        f"allowed-tools: Read Bash\n---\n# PDF tools\n\n{PDF_BODY}\n",
    )
    put(workspace, ".claude/skills/pdf-tools/scripts/extract.sh", 'pdftotext "$1" -\n')
    put(workspace, ".claude/skills/Bad_Skill/SKILL.md", "---\nname: Bad_Skill\ndescription: shouting\n---\nbody\n")
    put(workspace, ".agents/skills/nameless/SKILL.md", "no front matter here\n")
    user_skill = put(
        home,
        ".claude/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy the service to staging.\n---\nRun scripts/deploy.sh.\n",
    )
    put(home, ".claude/skills/deploy/scripts/deploy.sh", "echo deploying-to-staging\n")
    put(home, ".claude/skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: the user's own\n---\nx\n")
    provider.add(
        Reply(tool_calls=[ToolCall("skill", {"name": "pdf-tools"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": str(user_skill.parent / "scripts" / "deploy.sh")})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": str(home / ".bashrc")})]),
        Reply(text="ok"),
    )
    put(home, ".bashrc", "export SECRET_THING=1\n")
    wire = await wire_factory(HOME=str(home), CODY_APPROVALS="never")

    listed = (await wire.request("cody/listSkills", {}))["skills"]
    by_name = {s["name"]: s for s in listed}
    assert by_name["pdf-tools"] == {
        "name": "pdf-tools",
        "description": "Extract text and tables from PDF files. Use when a PDF is involved.",
        "path": str(workspace / ".claude/skills/pdf-tools/SKILL.md"),
        "source": "workspace",
        "valid": True,
        "shadows": [str(home / ".claude/skills/pdf-tools/SKILL.md")],  # the workspace's wins
    }
    assert by_name["Bad_Skill"]["valid"] is False and "lowercase" in by_name["Bad_Skill"]["reason"]
    assert by_name["nameless"]["valid"] is False and "front matter" in by_name["nameless"]["reason"]
    assert by_name["deploy"]["source"] == "user" and by_name["deploy"]["valid"] is True

    result, chunks = await wire.run("summarize report.pdf")
    assert result["status"] == "done"
    first = provider.requests[0]
    assert "skill" in offered(first)
    prompt = system(first)
    assert "- pdf-tools: Extract text and tables from PDF files. Use when a PDF is involved." in prompt
    assert "- deploy: Deploy the service to staging." in prompt
    assert "Bad_Skill" not in prompt and "the user's own" not in prompt
    assert PDF_BODY not in prompt  # only the description, until the skill is loaded
    loaded, script, outside = [c for c in chunks if c["type"] == "tool_result"]
    assert loaded["ok"] and PDF_BODY in loaded["content"] and ".claude/skills/pdf-tools" in loaded["content"]
    assert script["ok"] and "echo deploying-to-staging" in script["content"]  # a user skill's folder
    assert not outside["ok"]  # the rest of the home folder stays out of reach


async def test_no_skills_no_skill_tool_and_skills_off(wire_factory, provider, workspace: Path):
    put(workspace, ".github/skills/lint/SKILL.md", "---\nname: lint\ndescription: Lint the code.\n---\nrun ruff\n")
    provider.add(Reply(text="one"))
    off = await wire_factory(CODY_SKILLS="off")
    assert await off.request("cody/listSkills", {}) == {"skills": [], "enabled": False}
    await off.run("hi")
    assert "skill" not in offered(provider.requests[0]) and "# Skills" not in system(provider.requests[0])


async def test_a_custom_command_is_listed_and_expanded_in_the_model_request(
    wire_factory, provider, workspace: Path, tmp_path: Path
):
    put(
        workspace,
        ".claude/commands/review-pr.md",
        "---\ndescription: Review a pull request\nargument-hint: <number>\n---\n"
        "Review pull request #$ARGUMENTS: read its diff (gh pr diff $1) and list the problems.\n",
    )
    put(workspace, ".github/prompts/review-pr.prompt.md", "shadowed by .claude/commands\n")
    put(workspace, ".github/prompts/explain.prompt.md", "---\nmodel: small-model\n---\nExplain this code simply.\n")
    provider.add(Reply(text="Reviewed."), Reply(text="Explained."))
    wire = await wire_factory()

    listed = (await wire.request("cody/listCommands", {}))["commands"]
    builtins = [c["name"] for c in listed if c["source"] == "builtin"]
    assert builtins == ["compact", "go", "rewind", "fork"]
    custom = {c["name"]: c for c in listed if c["source"] != "builtin"}
    assert custom["review-pr"] == {
        "name": "review-pr",
        "description": "Review a pull request",
        "argumentHint": "<number>",
        "source": "workspace",
        "path": str(workspace / ".claude/commands/review-pr.md"),
        "shadows": [str(workspace / ".github/prompts/review-pr.prompt.md")],
    }
    assert custom["explain"]["description"] == "Explain this code simply."

    result = await wire.request("cody/run", {"command": {"name": "review-pr", "arguments": "42"}})
    assert result["status"] == "done"
    [user] = [m for m in provider.requests[0]["messages"] if m["role"] == "user"]
    assert user["content"] == "Review pull request #42: read its diff (gh pr diff 42) and list the problems."
    page = await wire.request("cody/getSession", {"sessionId": result["sessionId"]})
    assert page["session"]["title"] == "/review-pr 42"
    assert [m["content"] for m in page["messages"] if m["role"] == "user"] == ["/review-pr 42"]  # as typed

    # Expanded again for the next message (an edit counts at once); the arguments after a body without them.
    await wire.request(
        "cody/run", {"sessionId": result["sessionId"], "command": {"name": "explain", "arguments": "a.py"}}
    )
    assert provider.requests[1]["messages"][-1]["content"] == "Explain this code simply.\n\nARGUMENTS: a.py"
    assert provider.requests[1]["model"] == "small-model"  # the command's `model`, for its run

    error = await wire.error_of("cody/run", {"command": {"name": "nope"}})
    assert error.code == -32602 and "unknown command /nope" in error.message and "/review-pr" in error.message
