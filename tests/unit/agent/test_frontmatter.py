"""The one strict front-matter reader of the Markdown files a workspace brings (agent/frontmatter.py:
agent files, skills, slash commands): what Claude Code's, Copilot's and the Agent Skills' files
use reads; anything else is refused with its line, never guessed at. The readers over it:
test_agent_files.py, test_workflow_files.py; the wire: tests/e2e/test_subagents.py,
tests/e2e/test_skills_commands.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cody_lsp.server.agent.frontmatter import MAX_DEPTH, MAX_FRONT_MATTER, FrontMatterError, split

pytestmark = pytest.mark.timeout(60)


def test_the_forms_agent_files_use():
    doc = split(
        "\ufeff---\r\n"
        "name: code-reviewer   # a comment\n"
        'description: "Reviews code.\\nUse it after edits: always."\n'
        "tools: Read, Grep, Glob\n"
        "model: 'it''s'\n"
        "flow: [read_file, \"grep, quoted\", 'it''s']\n"
        "empty:\n"
        "block:\n"
        "  - one\n"
        "  - 'two'\n"
        "folded: >\n"
        "  a long\n"
        "  line\n"
        "\n"
        "  next\n"
        "literal: |\n"
        "  l1\n"
        "    l2\n"
        "nested:\n"
        "  color: blue\n"
        "# a comment line\n"
        "---\r\n"
        "\n"
        "# The body\r\n"
        "Do this.\n",
        required=True,
    )
    assert doc.present
    assert doc.values == {
        "name": "code-reviewer",
        "description": "Reviews code.\nUse it after edits: always.",
        "tools": "Read, Grep, Glob",
        "model": "it's",
        "flow": ["read_file", "grep, quoted", "it's"],
        "empty": "",
        "block": ["one", "two"],
        "folded": "a long line\nnext\n",
        "literal": "l1\n  l2\n",
        "nested": {"color": "blue"},
    }
    assert doc.body == "\n# The body\nDo this.\n"  # line ends made \n; the readers strip it


def test_the_shapes_skills_and_commands_use():
    text = (
        "---\n"
        "name: pdf-tools  # a comment\n"
        "description: >-\n  Extract text\n  and tables.\n"
        "literal: |\n  line one\n  line two\n"
        'allowed-tools: [Read, "Bash(git:*)"]\n'
        "tools:\n  - read\n  - 'edit it'\n"
        'metadata:\n  author: ada\n  version: "1.0"\n'
        "quoted: 'it''s'\n"
        "folded: a\n  b\n"
        "---\n# Body\n"
    )
    front = split(text)
    assert front.present and front.body == "# Body\n"
    assert front.values == {
        "name": "pdf-tools",
        "description": "Extract text and tables.",
        "literal": "line one\nline two\n",
        "allowed-tools": ["Read", "Bash(git:*)"],
        "tools": ["read", "edit it"],
        "metadata": {"author": "ada", "version": "1.0"},
        "quoted": "it's",
        "folded": "a b",
    }


def test_a_file_without_front_matter_is_all_body_unless_one_is_required():
    assert split("no front matter\r\nat all\n") == split("\ufeffno front matter\nat all\n")
    front = split("no front matter\nat all\n")
    assert (front.present, front.values, front.body) == (False, {}, "no front matter\nat all\n")
    with pytest.raises(FrontMatterError, match=r"^the file does not start with front matter \(a first line"):
        split("no front matter\n", required=True)
    assert split("---\nname: x\n...\nbody").values == {"name": "x"}  # `...` ends it too
    assert split("---\n---\nbody") == split("---\n# only a comment\n\n---\nbody")


def test_yaml_values_read_as_yaml_means_them():
    values = split(
        "---\n"
        "plain: a value with: a colon, a#hash and 'quotes' # and a comment\n"
        "long: Use this agent when\n"
        "  the user asks,\n"
        "\n"
        "  then review.  # a comment ends it\n"
        "  # and a comment line is no text\n"
        'escapes: "tab\\t nul\\0 space\\ slash\\/ \\u00e9 \\ud83d\\ude00 \\b\\f"\n'
        "trailing: [a, 'b',]\n"
        "empty_list: []\n"
        "numbers:\n  - -1\n  - 2  # two\n"
        "keep: |+\n  kept\n"
        "strip: >-\n  folded\n   more indented\n  back\n"
        "header_comment: | # literal\n  x\n"
        "tab_in_text: |\n  \tindented by a tab after the block's indentation\n"
        "mcp-servers:\n"
        "  custom-mcp:\n"
        "    type: 'local'\n"
        "    args: ['--arg1', '--arg2']\n"
        "    env:\n"
        "      TOKEN: ${{ secrets.TOKEN }}\n"
        "\n"
        '    tools: ["*"]\n'
        "after: x\n"
        "---\n"
    ).values
    assert values == {
        "plain": "a value with: a colon, a#hash and 'quotes'",
        "long": "Use this agent when the user asks,\nthen review.",
        "escapes": "tab\t nul\0 space slash/ é 😀 \b\f",
        "trailing": ["a", "b"],
        "empty_list": [],
        "numbers": ["-1", "2"],
        "keep": "kept\n",
        "strip": "folded\n more indented\nback",
        "header_comment": "x\n",
        "tab_in_text": "\tindented by a tab after the block's indentation\n",
        "mcp-servers": {
            "custom-mcp": {
                "type": "local",
                "args": ["--arg1", "--arg2"],
                "env": {"TOKEN": "${{ secrets.TOKEN }}"},
                "tools": ["*"],
            }
        },
        "after": "x",
    }
    assert split("---\nname: x\n  more\n---\n").values == {"name": "x more"}  # a plain value over two lines


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nname: x\n", "the front matter has no end (no closing '---' line after it)"),
        ("---\nname: a\nname: b\n---\n", "line 3: the key 'name' is given twice"),
        ("---\nm:\n  a: 1\n  a: 2\n---\n", "line 4: the key 'a' is given twice"),
        ("---\n  name: a\n---\n", "line 2: an indented line that belongs to no key"),
        ("---\njust text\n---\n", "line 2: not a `key: value` line"),
        ("---\n- a\n---\n", "line 2: not a `key: value` line"),
        ("---\nname: &anchor x\n---\n", "line 2: a value starting with '&' (anchors, aliases, tags"),
        ("---\nname: *alias\n---\n", "line 2: a value starting with '*' (anchors, aliases, tags"),
        ("---\nname: !!str x\n---\n", "line 2: a value starting with '!' (anchors, aliases, tags"),
        ("---\nname: {a: 1}\n---\n", "line 2: a value starting with '{' (anchors, aliases, tags and flow mappings"),
        ("---\nm:\n  k: *alias\n---\n", "line 3: a value starting with '*'"),
        ("---\nl:\n  - &a x\n---\n", "line 3: a value starting with '&'"),
        ('---\nname: "open\n---\n', "line 2: a quoted value without its closing quote"),
        ("---\nname: 'open\n---\n", "line 2: a quoted value without its closing quote"),
        ("---\nname: 'open\n  more'\n---\n", "line 2: a quoted value without its closing quote"),
        ('---\nname: "x"\n  more\n---\n', "line 3: an indented line after the quoted value of 'name'"),
        ('---\nname: "x" y\n---\n', "line 2: text after a quoted value"),
        ('---\nname: "\\q"\n---\n', "line 2: a double-quoted value with an escape that does not read"),
        ('---\nname: "\\ud83d alone"\n---\n', "line 2: a double-quoted value with an escape that does not read"),
        ('---\nname: "\\u00"\n---\n', "line 2: a double-quoted value with an escape that does not read"),
        ("---\ntools: [a, b\n---\n", "line 2: a list without its closing bracket"),
        ("---\ntools: [a, , b]\n---\n", "line 2: a list item that is empty or not a plain value"),
        ("---\ntools: [[a], b]\n---\n", "line 2: a list item that is empty or not a plain value"),
        ("---\ntools: [{a: 1}]\n---\n", "line 2: a list item that is empty or not a plain value"),
        ("---\ntools: [a #b, c]\n---\n", "line 2: a comment inside a list"),
        ("---\ntools: [a b c d\n---\n", "line 2: a list without its closing bracket"),
        ("---\ntools: ['a' b]\n---\n", "line 2: a list item not followed by a comma or the closing bracket"),
        ("---\ntools: [a] b\n---\n", "line 2: text after a list"),
        ("---\ntools: [a]\n  b\n---\n", "line 3: an indented line after the list of 'tools'"),
        ("---\ntools:\n  - a\n  b\n---\n", "line 4: a list line that does not start with '- '"),
        ("---\ntools:\n  -a\n---\n", "line 3: a list line that does not start with '- '"),
        ("---\ntools:\n  - a\n    - b\n---\n", "line 4: a list line not at the indentation of the list's first"),
        ("---\ntools:\n  - a\n  -\n---\n", "line 4: an empty list item"),
        ("---\ntools:\n  - [a]\n---\n", "line 3: a list item that is a list or a mapping"),
        ("---\ntools:\n  - - a\n---\n", "line 3: a list item that is a list or a mapping"),
        ("---\nhandoffs:\n  - label: x\n    agent: y\n---\n", "line 3: a list item that is a list or a mapping"),
        ("---\nname: x\n  sub: y\n---\n", "line 3: an indented `key: value` line after the value of 'name'"),
        ("---\nname: x # c\n  more\n---\n", "line 3: an indented line after the comment that ended the value"),
        ("---\nm:\n    a: 1\n  b: 2\n---\n", "line 4: a line indented less than the keys before it"),
        ("---\nm:\n  a: 1\n    b: 2\n---\n", "line 4: an indented `key: value` line after the value of 'a'"),
        ("---\nname:\tx\n\tmore: y\n---\n", "line 3: a tab in the indentation"),
        ("---\nm:\n\ta: 1\n---\n", "line 3: a tab in the indentation"),
        ("---\nm:\n  \ta: 1\n---\n", "line 3: a tab in the indentation"),
        ("---\nl:\n  - a\n  \t- b\n---\n", "line 4: a tab in the indentation"),
        ("---\nb: |2\n  x\n---\n", "line 2: a block scalar's header must be |, |-, |+, >, >- or >+"),
        ("---\nb: | x\n---\n", "line 2: a block scalar's header must be"),
    ],
)
def test_what_does_not_read_is_refused_with_its_line(text: str, message: str):
    for required in (False, True):
        with pytest.raises(FrontMatterError) as info:
            split(text, required=required)
        assert str(info.value).startswith(message)
        assert "\n" not in str(info.value)  # one line, never the file's text


def test_the_block_is_bounded():
    with pytest.raises(FrontMatterError, match=f"longer than {MAX_FRONT_MATTER:,} characters"):
        split("---\n" + "".join(f"k{i}: {'x' * 100}\n" for i in range(MAX_FRONT_MATTER // 100)) + "---\n")
    with pytest.raises(FrontMatterError, match="line 102: more than 100 keys"):
        split("---\n" + "".join(f"k{i}: v\n" for i in range(101)) + "---\n")
    with pytest.raises(FrontMatterError, match="line 102: more than 100 keys"):  # nested keys count too
        split("---\n" + "".join(f"k{i}:\n  a: v\n" for i in range(51)) + "---\n")
    nested = "".join(f"{' ' * 2 * level}k{level}:\n" for level in range(MAX_DEPTH))  # the block, and MAX_DEPTH in it
    assert split(f"---\n{nested}{' ' * 2 * MAX_DEPTH}last: x\n---\n").present
    deeper = nested + f"{' ' * 2 * MAX_DEPTH}k:\n{' ' * 2 * (MAX_DEPTH + 1)}last: x\n"
    with pytest.raises(FrontMatterError, match=f"line {MAX_DEPTH + 3}: mappings nested more than {MAX_DEPTH} deep"):
        split(f"---\n{deeper}---\n")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "k:",
                "key: v",
                "  - a",
                "-",
                "  x: 1",
                "\t",
                "'",
                '"',
                "[",
                "]",
                ",",
                "#",
                "|",
                ">",
                "&",
                "\\u",
                " ",
                "...",
                "---",
            ]
        )
        | st.text(max_size=12),
        max_size=12,
    )
)
def test_any_block_reads_or_is_refused_with_one_line(lines: list[str]):
    text = "---\n" + "\n".join(lines) + "\n---\nbody"
    try:
        front = split(text)
    except FrontMatterError as exc:
        assert "\n" not in str(exc) and str(exc)
    else:
        assert front.present
