"""Tool arguments from a hostile model: validated against the schema, never a crash.

The arguments are what `json.loads` makes of the model's text, so NaN, Infinity,
1e999 (infinity), 5000-digit integers, booleans for numbers and lone surrogates
all arrive here. The fuzz at the end throws arbitrary JSON at every tool.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cody_lsp.server.tools import TOOLS, ToolConfig, ToolError, ToolResult, run_tool, shell
from cody_lsp.server.tools.code_nav import OPERATIONS, NavAnswer, NavQuery
from cody_lsp.server.tools.registry import MAX_PATH_CHARS, validate_args
from cody_lsp.server.tools.schema import describe, unsupported


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    return Path(os.path.realpath(root))


def test_every_tool_schema_is_fully_checked():
    for spec in TOOLS.values():
        assert unsupported(spec.parameters) == [], spec.name
        for name, prop in spec.parameters["properties"].items():
            if prop["type"] == "string":
                assert "maxLength" in prop, (spec.name, name)
            if prop["type"] in ("integer", "number"):
                assert "maximum" in prop, (spec.name, name)


BAD_LINES = [
    float("nan"),
    float("inf"),
    float("-inf"),
    json.loads("1e999"),
    True,
    False,
    10**5000,
    -(10**5000),
    1.5,
    0,
    -1,
    "3",
    [],
    {},
]


@pytest.mark.parametrize("value", BAD_LINES, ids=lambda v: describe(v)[:30])
async def test_bad_line_numbers_are_refused_clearly(ws, value):
    r = await run_tool("read_file", {"path": "a.txt", "start_line": value}, ws)
    assert not r.ok
    assert r.content.startswith("argument 'start_line' of read_file must be an integer between 1 and 1000000000, got ")


async def test_integral_floats_are_integers(ws):
    assert validate_args(TOOLS["read_file"], {"path": "a.txt", "start_line": 2.0}) == {"path": "a.txt", "start_line": 2}
    r = await run_tool("read_file", {"path": "a.txt", "start_line": 2.0, "end_line": 2}, ws)
    assert r.ok and "two" in r.content and "one" not in r.content


def test_huge_integers_are_described_not_printed():
    assert describe(10**5000) == "an integer of about 5001 digits"
    with pytest.raises(ToolError) as info:
        validate_args(TOOLS["read_file"], {"path": "a", "end_line": 10**5000})
    assert "5001 digits" in str(info.value)


@pytest.mark.parametrize(
    "raw", ["NaN", "Infinity", "-Infinity", "1e999", "0", "-5", "true", '"10"', "1e9999999", "5000"]
)
async def test_timeout_must_be_a_sane_number_and_nothing_runs_otherwise(ws, raw):
    args = json.loads(f'{{"command": "touch ran", "timeout": {raw}}}')
    r = await run_tool("run_command", args, ws)
    assert not r.ok
    assert r.content.startswith(
        "argument 'timeout' of run_command must be a number greater than 0 and at most 3600, got "
    )
    assert not (ws / "ran").exists()


async def test_shell_refuses_a_non_finite_timeout_itself(ws):
    """Defense in depth: run_command called directly cannot lose its time limit either."""
    for value in (float("nan"), float("inf"), True, -1):
        with pytest.raises(ToolError, match="'timeout' must be a number of seconds greater than 0"):
            await shell.run_command(ws, {"command": "touch ran", "timeout": value}, ToolConfig())
    assert not (ws / "ran").exists()


async def test_timeout_above_the_configured_maximum_is_lowered(ws):
    r = await run_tool("run_command", {"command": "sleep 5", "timeout": 3600}, ws, ToolConfig(command_timeout=0.2))
    assert not r.ok and "timed out after 0.2 s" in r.content


async def test_strings_too_long_or_not_unicode(ws):
    r = await run_tool("read_file", {"path": "x" * (MAX_PATH_CHARS + 1)}, ws)
    assert not r.ok and "must be a string of at most 4,096 characters, got 4,097 characters" in r.content
    r = await run_tool("write_file", {"path": "a\ud800b.txt", "content": "x"}, ws)
    assert not r.ok and "is not valid Unicode text (a lone surrogate '\\ud800' at character 1)" in r.content
    r = await run_tool("run_command", {"command": "echo a\0b"}, ws)
    assert not r.ok and "NUL character" in r.content
    r = await run_tool("run_command", {"command": "x" * 40_000}, ws)
    assert not r.ok and "at most 32,000 characters" in r.content


async def test_unknown_and_odd_names_are_shown_escaped_and_short(ws):
    r = await run_tool("read_file", {"path": "a.txt", "\ud800" + "k" * 500: 1}, ws)
    assert not r.ok and r.content.startswith("unknown argument '\\ud800kkk") and len(r.content) < 200
    r = await run_tool("no\nsuch\ud800tool", {}, ws)
    assert not r.ok and r.content.startswith("unknown tool 'no\\nsuch\\ud800tool'")
    r.content.encode("utf-8")  # valid text for the store and the wire


async def test_non_object_arguments(ws):
    for args in ([1, 2], "path", 3, 10**5000, float("nan"), True):
        r = await run_tool("read_file", args, ws)
        assert not r.ok and r.content.startswith("arguments for read_file must be a JSON object, got ")


# --------------------------------------------------------------------------- fuzz

_SURROGATE_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=30)
_NUMBERS = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, 5e-324, -0.0, 2**63, 2**64 + 1]),
    # 5000-digit integers (made by a map: hypothesis cannot print them in a strategy's repr)
    st.sampled_from([5000, -5000, 4301]).map(lambda digits: (10 ** abs(digits)) * (1 if digits > 0 else -1)),
)
_SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, _SURROGATE_TEXT)
JSON = st.recursive(
    _SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_SURROGATE_TEXT, children, max_size=4)),
    max_leaves=12,
)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


_DEEP = st.integers(min_value=1, max_value=5000).map(_nested)
_PATHS = st.one_of(
    st.sampled_from(
        [
            "a.txt",
            ".",
            "..",
            "sub/new.txt",
            "../outside/secret.txt",
            "../outside/new.txt",
            "/etc/passwd",
            "/tmp",
            "sub/../../outside/x",
            "~",
            "a.txt\0",
            "a\ud800.txt",
            "",
        ]
    ),
    st.integers(4000, 5000).map(lambda n: "x" * n),
    _SURROGATE_TEXT,
)
# Commands are never arbitrary text (that would run it): a few harmless ones, or junk of other types.
_COMMANDS = st.one_of(st.sampled_from(["true", "echo hi", "exit 3", "printf '%s' x", "echo x > inside.txt"]), _NUMBERS)


def _values_for(name: str) -> st.SearchStrategy:
    special = {
        "path": _PATHS,
        "command": _COMMANDS,
        "pattern": st.one_of(st.sampled_from(["*", "**/*.txt", "o", "[", "(", "a{1,3}"]), _SURROGATE_TEXT),
        "include": st.one_of(st.sampled_from(["*.txt", "*"]), _SURROGATE_TEXT),
        "timeout": st.one_of(_NUMBERS, st.sampled_from([0.01, 0.5, 2])),
        "old_string": st.one_of(st.sampled_from(["one", "two\n", "one\ntwo"]), _SURROGATE_TEXT),
        "start_line": st.one_of(_NUMBERS, st.integers(-2, 5)),
        "end_line": st.one_of(_NUMBERS, st.integers(-2, 5)),
        "plan": st.lists(
            st.fixed_dictionaries(
                {"step": _SURROGATE_TEXT, "status": st.sampled_from(["pending", "in_progress", "completed", "done"])}
            ),
            max_size=4,
        ),
        "name": st.one_of(st.sampled_from(["pdf", "nope"]), _SURROGATE_TEXT),  # skill
        "operation": st.one_of(st.sampled_from(OPERATIONS), _SURROGATE_TEXT),
        "line": st.one_of(_NUMBERS, st.integers(-2, 5)),
        "character": st.one_of(_NUMBERS, st.integers(-2, 5)),
        "query": st.one_of(st.sampled_from(["one", "two", "ne"]), _SURROGATE_TEXT),
    }
    if name == "command":
        return special[name]  # never arbitrary text
    if name == "operation":  # mostly valid: the fuzz is for what the operations do with the rest
        return st.one_of(st.sampled_from(OPERATIONS), st.sampled_from(OPERATIONS), special[name])
    return st.one_of(special.get(name, _SURROGATE_TEXT), JSON, _DEEP)


def _arguments(tool: str) -> st.SearchStrategy:
    params = TOOLS[tool].parameters
    props, required = params["properties"], params["required"]
    complete = st.fixed_dictionaries(
        {k: _values_for(k) for k in required}, optional={k: _values_for(k) for k in props if k not in required}
    )
    partial = st.fixed_dictionaries({}, optional={k: _values_for(k) for k in props})
    extra = st.dictionaries(_SURROGATE_TEXT, JSON, min_size=1, max_size=2)
    with_extra = st.builds(lambda a, b: {**b, **a}, complete, extra)
    others = JSON if tool != "run_command" else st.one_of(_SCALARS.filter(lambda v: not isinstance(v, str)), _DEEP)
    if tool == "code_nav":  # a question that passes the validator, about places in and out of the folder
        places = st.sampled_from(
            ["a.txt", "a.txt", "a.txt", "sub", "missing.py", "../outside/secret.txt", "/etc/passwd"]
        )
        asked = st.fixed_dictionaries(
            {
                "operation": st.sampled_from(OPERATIONS),
                "path": places,
                "line": st.integers(1, 3),
                "character": st.integers(1, 5),
                "query": st.sampled_from(["one", "o"]),
            }
        )
        rest = st.one_of(complete, partial, with_extra, others)
        return st.booleans().flatmap(lambda valid: asked if valid else rest)  # half of them pass the validator
    return st.one_of(complete, complete, complete, partial, with_extra, others)


def _snapshot(root: Path) -> dict[str, float]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            found[path] = os.lstat(path).st_mtime
    return found


# Tools whose success needs what the fuzz does not make: a background command started in this
# session, a page served; the fuzz must still get past the validator to them (a tool error).
STATEFUL = {"command_output", "stop_command", "web_fetch"}
VALIDATOR = ("argument ", "arguments for ", "missing required argument", "unknown argument")


async def _one_skill(name: str) -> ToolResult:
    """The run's skills for the `skill` tool: one, `pdf` (any other name is not there)."""
    return ToolResult(True, "the skill's text") if name == "pdf" else ToolResult(False, f"no skill {name[:20]!r}")


class EchoNavigator:
    """code_nav's sources, for the fuzz: every question answered with the place it asked about."""

    max_results = 5

    async def ask(self, query: NavQuery) -> NavAnswer:
        uri = Path(query.path or query.folder).as_uri()
        start = {"line": query.line, "character": query.column}
        return NavAnswer([{"uri": uri, "range": {"start": start, "end": start}}], "the fuzz", "utf-16")


@pytest.mark.parametrize("tool", list(TOOLS))
def test_fuzz_tool_arguments(tool):
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(os.path.realpath(tmp))
        ws = sandbox / "ws"
        (ws / "sub").mkdir(parents=True)
        (ws / "a.txt").write_text("one\ntwo\n")
        (sandbox / "outside").mkdir()
        (sandbox / "outside" / "secret.txt").write_text("top secret\n")
        before_outside = _snapshot(sandbox / "outside")
        before_root = sorted(os.listdir("/"))
        before_etc = os.lstat("/etc/passwd").st_mtime
        outcomes: set[bool] = set()

        @settings(
            max_examples=60 if tool == "run_command" else 120,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(args=_arguments(tool))
        def check(args):
            config = ToolConfig(command_timeout=5, skills=_one_skill, navigator=EchoNavigator())
            result = asyncio.run(run_tool(tool, args, ws, config))
            outcomes.add(result.ok if tool not in STATEFUL else not result.content.startswith(VALIDATOR))
            assert isinstance(result, ToolResult) and isinstance(result.ok, bool)
            assert isinstance(result.content, str)
            result.content.encode("utf-8")  # storable and sendable
            assert "top secret" not in result.content
            numbers = [v for v in args.values()] if isinstance(args, dict) else []
            if any(isinstance(v, float) and not math.isfinite(v) for v in numbers):
                assert not result.ok  # a non-finite number never gets through

        check()
        assert outcomes == {True, False}  # the fuzz reached the tools, not only the validator
        assert _snapshot(sandbox / "outside") == before_outside
        assert sorted(os.listdir(sandbox)) == ["outside", "ws"]
        assert sorted(os.listdir("/")) == before_root
        assert os.lstat("/etc/passwd").st_mtime == before_etc
