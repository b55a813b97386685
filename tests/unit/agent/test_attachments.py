"""The parts of attachments and problems that need no server: which problems are new, how a
problem reads, images in the size estimate, which models take images."""

from __future__ import annotations

import json

from cody_lsp.protocol.wire import Diagnostic, Position, Range
from cody_lsp.server.agent.attachments import fence, takes_images
from cody_lsp.server.agent.budget import IMAGE_TOKENS, TokenBudget, json_tokens, raw_tokens
from cody_lsp.server.agent.compaction import summary_request
from cody_lsp.server.agent.problems import MAX_SHOWN, new_problems, problems_note


def problem(line: int, message: str, severity: int | None = 1, source: str | None = None) -> Diagnostic:
    return Diagnostic(Range(Position(line, 0), Position(line, 3)), message, severity, None, source)


def test_new_problems_are_the_errors_and_warnings_that_were_not_there():
    before = [problem(1, "old", 2), problem(5, "twice"), problem(9, "a hint", 4)]
    after = [
        problem(3, "old", 2),  # moved by the edit: the same problem
        problem(6, "twice"),
        problem(7, "twice"),  # a second one of the same: new
        problem(2, "fresh", None),  # no severity: an error
        problem(8, "info", 3),  # neither an error nor a warning
    ]
    assert [(p.range.start.line, p.message) for p in new_problems(before, after)] == [(2, "fresh"), (7, "twice")]
    assert len(new_problems(None, after)) == 4  # nothing known before: every error and warning


def test_the_note_lists_them_capped():
    many = [problem(i, f"problem {i}", source="ruff") for i in range(MAX_SHOWN + 3)]
    note = problems_note("app.py", many)
    lines = note.splitlines()
    assert lines[0] == "New problems in app.py (reported by the editor):"
    assert lines[1] == "- line 1:1: error: problem 0 (ruff)"
    assert lines[-1] == "…and 3 more" and len(lines) == MAX_SHOWN + 2
    assert problems_note("app.py", []) == ""


def test_an_image_counts_as_a_fixed_number_of_tokens():
    def message(data: str) -> dict:
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + data}}
        return {"role": "user", "content": [{"type": "text", "text": "x" * 400}, image]}

    small, large = raw_tokens(message("AAAA")), raw_tokens(message("A" * 400_000))
    assert small == large and IMAGE_TOKENS < small < IMAGE_TOKENS + 200
    assert json_tokens(json.dumps([message("A" * 1000)] * 2)) <= 2 * small + 1  # two images in one request


def test_a_summary_request_reads_images_as_placeholders():
    rows = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    ]
    request = summary_request(None, rows, TokenBudget(32_768, 4_096), None)
    body = request[1]["content"]
    assert "User: what is this?\n[image]" in body and "base64" not in body


def test_which_models_take_images():
    assert takes_images("gpt-4o-mini", "auto") and takes_images("openai/claude-sonnet-4-5", "auto")
    assert not takes_images("o3-mini", "auto") and not takes_images("deepseek-chat", "auto")
    assert takes_images("deepseek-chat", "on") and not takes_images("gpt-4o", "off")


def test_a_fence_is_longer_than_any_run_of_backticks():
    assert fence("plain") == "```" and fence("a ```` b") == "`````"
