"""The hunks of a change and putting some of them back over a file edited since (checkpoints/hunks.py)."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from cody_lsp.server.checkpoints.hunks import file_hunks, hunk_state, place, revert_hunks, split_lines

BEFORE = [f"line {i}\n" for i in range(1, 31)]


def changed(lines: list[str], **edits: str) -> list[str]:
    out = list(lines)
    for key, value in sorted(edits.items(), key=lambda kv: -int(kv[0][1:])):
        out[int(key[1:]) - 1] = value
    return out


def test_hunks_are_numbered_as_a_unified_diff_numbers_them():
    after = changed(BEFORE, l5="five\n", l25="twenty-five\n")
    hunks = file_hunks(BEFORE, after)
    assert len(hunks) == 2
    expected = [line for line in difflib.unified_diff(BEFORE, after, n=3) if line.startswith("@@")]
    shown = [f"@@ -{h.old_start},{h.old_lines} +{h.new_start},{h.new_lines} @@\n" for h in hunks]
    assert shown == expected
    assert hunks[0].lines == (" line 2", " line 3", " line 4", "-line 5", "+five", " line 6", " line 7", " line 8")


def test_one_of_two_hunks_reverted_while_the_users_later_edit_elsewhere_stays():
    after = changed(BEFORE, l5="five\n", l25="twenty-five\n")
    hunks = file_hunks(BEFORE, after)
    now = after[:15] + ["the user's own line\n"] + after[15:]  # an edit between the two hunks
    reverted = revert_hunks(BEFORE, after, now, [hunks[1]])
    assert reverted is not None
    assert reverted[4] == "five\n" and "line 25\n" in reverted and "twenty-five\n" not in reverted
    assert "the user's own line\n" in reverted
    cache: dict = {}
    assert [hunk_state(BEFORE, after, reverted, h, cache) for h in hunks] == ["applied", "reverted"]


def test_a_hunk_whose_lines_changed_since_is_refused():
    after = changed(BEFORE, l5="five\n", l25="twenty-five\n")
    hunks = file_hunks(BEFORE, after)
    now = changed(after, l25="twenty-five, edited by the user\n")
    assert revert_hunks(BEFORE, after, now, [hunks[1]]) is None
    assert revert_hunks(BEFORE, after, now, [hunks[0]]) is not None  # the other one still can
    assert hunk_state(BEFORE, after, now, hunks[1], {}) == "changed"


def test_added_and_deleted_lines_at_the_edges():
    after = ["new first\n", *BEFORE[2:], "new last"]  # two lines deleted at the top, one added at the end
    hunks = file_hunks(BEFORE, after)
    assert revert_hunks(BEFORE, after, after, hunks) == BEFORE
    assert place(after, after, [(0, 0)]) == [(0, 0)]


def test_split_lines_keeps_line_endings():
    assert split_lines("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    assert split_lines("") == []


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n"]), max_size=12)


@given(lines, lines)
def test_reverting_every_hunk_of_an_untouched_file_gives_the_file_before(old, new):
    hunks = file_hunks(old, new)
    assert revert_hunks(old, new, new, hunks) == old


@given(lines, lines, st.data())
def test_reverting_some_hunks_gives_what_applying_the_others_gives(old, new, data):
    hunks = file_hunks(old, new)
    if not hunks:
        return
    chosen = data.draw(st.lists(st.sampled_from(range(len(hunks))), unique=True, min_size=1))
    reverted = revert_hunks(old, new, new, [hunks[i] for i in chosen])
    expected = list(old)  # the file before, with only the hunks not chosen applied
    kept = [op for i, hunk in enumerate(hunks) if i not in chosen for op in hunk.ops]
    for op in sorted(kept, key=lambda op: -op.a1):
        expected[op.a1 : op.a2] = new[op.b1 : op.b2]
    assert reverted == expected
