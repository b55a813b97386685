"""Tool specs, OpenAI schemas and :func:`run_tool` dispatch with argument checking.

Every call's arguments are validated against the tool's schema (:func:`validate_args`:
types, required, no unknown names, number ranges, string lengths) before the tool
runs; whatever a tool returns has the server's secrets redacted and is capped.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...secrets import env_secrets, redact_all
from . import background, code_nav, files, plan, skill_tool, web
from .schema import SchemaError, check, describe
from .workspace import ToolConfig, ToolError, ToolHandler, ToolResult, cap_text

# Limits of the arguments a model may send (SECURITY.md, "Tool arguments are validated").
MAX_PATH_CHARS = 4096
MAX_PATTERN_CHARS = 1000
MAX_COMMAND_CHARS = 32_000  # one exec argument may not exceed 128 KiB (4-byte characters included)
MAX_TEXT_CHARS = 2_000_000  # content, old_string, new_string
MAX_LINE = 1_000_000_000
MAX_TIMEOUT = 3600  # seconds; a longer timeout is refused, one above the configured maximum is lowered to it


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its model-facing schema and its handler."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object
    mutating: bool  # changes something: not offered in the read-only modes; asked about unless `policy` says
    handler: ToolHandler
    # Its default policy, when not the one `mutating` implies (ask for a tool that changes things,
    # else allow): web_fetch reads, but reaches out (ask); stop_command ends what the agent started (allow).
    policy: str | None = None
    # It bounds its own result (web_fetch: CODY_WEB_FETCH_MAX_BYTES), over the usual cap.
    bounds_result: bool = False
    # False: offered only when a run has a use for it (`skill`: when there are skills; agent/skills.py).
    always_offered: bool = True


def _params(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _string(description: str, max_length: int = MAX_PATH_CHARS) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, "description": description}


def _integer(description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": MAX_LINE, "description": description}


_PATH = "Path relative to the workspace root (absolute paths must be inside the workspace)."
_DIR = "Directory to search, relative to the workspace root. Default: the root."

_SPECS = [
    ToolSpec(
        "read_file",
        "Read a text file. Each line is prefixed with its line number and a tab. "
        "For large files pass start_line/end_line (1-based, inclusive).",
        _params(
            ["path"],
            path=_string(_PATH),
            start_line=_integer("First line to show (1-based). Default: 1."),
            end_line=_integer("Last line to show (inclusive). Default: end of file."),
        ),
        False,
        skill_tool.read_file,  # and the user's skill folders of the run (skill_tool.py)
    ),
    ToolSpec(
        "list_dir",
        "List a directory: entries sorted by name, directories end with '/', symlinks show their target.",
        _params([], path=_string("Directory relative to the workspace root. Default: '.'.")),
        False,
        files.list_dir,
    ),
    ToolSpec(
        "glob",
        "Find files and directories whose path matches a glob pattern, e.g. '**/*.py' (any depth) "
        "or 'src/*.ts'. Results are relative to the workspace root, sorted. Skips .git, "
        "node_modules, __pycache__ and .venv.",
        _params(
            ["pattern"], pattern=_string("Glob pattern relative to `path`.", MAX_PATTERN_CHARS), path=_string(_DIR)
        ),
        False,
        files.glob,
    ),
    ToolSpec(
        "grep",
        "Search file contents with a regular expression in RE2 syntax (Python's, without backreferences "
        "or lookaround). Prints 'path:line: text' for each matching line. Skips binary files, files over "
        "10 MB, .git, node_modules, __pycache__ and .venv.",
        _params(
            ["pattern"],
            pattern=_string("RE2 regex, e.g. 'def \\w+_handler'.", MAX_PATTERN_CHARS),
            path=_string("File or directory to search, relative to the workspace root. Default: the root."),
            include=_string("Only search files whose name matches this glob, e.g. '*.py'.", MAX_PATTERN_CHARS),
        ),
        False,
        files.grep,
    ),
    ToolSpec(
        "write_file",
        "Create or overwrite a file with the given content (parent directories are created). "
        "Prefer edit_file for changing part of an existing file.",
        _params(
            ["path", "content"], path=_string(_PATH), content=_string("The complete new file content.", MAX_TEXT_CHARS)
        ),
        True,
        files.write_file,
    ),
    ToolSpec(
        "edit_file",
        "Replace one exact occurrence of old_string with new_string in a file. old_string must "
        "match the file exactly (whitespace included) and occur exactly once; include enough "
        "surrounding lines to make it unique. Do not include the line-number prefixes of read_file.",
        _params(
            ["path", "old_string", "new_string"],
            path=_string(_PATH),
            old_string=_string("Exact text to replace.", MAX_TEXT_CHARS),
            new_string=_string("Replacement text.", MAX_TEXT_CHARS),
        ),
        True,
        files.edit_file,
    ),
    ToolSpec(
        "run_command",
        "Run a shell command (sh) in the workspace root, with no stdin. Returns the exit code "
        "and the combined stdout/stderr. Long-running commands are killed at the timeout.",
        _params(
            ["command"],
            command=_string("Shell command line.", MAX_COMMAND_CHARS),
            timeout={
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT,
                "description": "Timeout in seconds (lowered to the configured maximum, 120 s by default).",
            },
            sandbox={
                "type": "boolean",
                "description": "false: ask the user to run it outside the sandbox (only after the sandbox "
                "refused something the command needs; give the reason).",
            },
            reason=_string(
                "With sandbox false: why the command must run outside the sandbox (shown to the user).", 1000
            ),
            background={
                "type": "boolean",
                "description": "true: run it in the background (a dev server, a watcher): returns its id at once; "
                "then command_output, stop_command.",
            },
        ),
        True,
        background.run_command,  # shell.run_command, or a background command
    ),
    ToolSpec(
        "command_output",
        "A background command's new output since the last read, and whether it still runs.",
        _params(
            ["id"],
            id=_string("Its id (cmd_…).", 100),
            wait_seconds={
                "type": "number",
                "minimum": 0,
                "maximum": background.MAX_WAIT,
                "description": "First wait up to this long for it to end.",
            },
        ),
        False,
        background.command_output,
    ),
    ToolSpec(
        "stop_command",
        "Stop a background command and what it started.",
        _params(["id"], id=_string("Its id (cmd_…).", 100)),
        True,
        background.stop_command,
        policy="allow",
    ),
    ToolSpec("update_plan", plan.DESCRIPTION, plan.PARAMETERS, False, plan.update_plan),
    ToolSpec(
        "web_fetch",
        web.DESCRIPTION,
        _params(
            ["url"],
            url=_string("An http(s) URL.", 8192),
            max_bytes={"type": "integer", "minimum": 1, "maximum": 100_000_000, "description": "Text to return."},
        ),
        False,
        web.web_fetch,
        policy="ask",
        bounds_result=True,
    ),
    ToolSpec(
        "skill",
        "Load a skill: its instructions for a kind of task, and the folder of its other files (scripts, "
        "references). Call it with a skill's name from the system message's list before doing a task "
        "that matches its description.",
        _params(["name"], name=_string("The skill's name, as listed.", 64)),
        False,
        skill_tool.run_skill,
        always_offered=False,
    ),
]

_SPECS.append(
    ToolSpec("code_nav", code_nav.DESCRIPTION, code_nav.parameters(MAX_PATH_CHARS, MAX_LINE), False, code_nav.code_nav)
)

TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in _SPECS}
# Built-in tools offered only to runs that can use them (the core decides: core/code_nav.py for code_nav).
ON_DEMAND = frozenset({"code_nav"})


def openai_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's entry of a request's ``tools=`` list."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
    }


@functools.cache
def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI ``tools=`` list for all tools offered to every run (cached; do not mutate)."""
    return [openai_schema(s) for s in TOOLS.values() if s.name not in ON_DEMAND]


def _quote(text: str, limit: int = 60) -> str:
    """A name from the model, safe to show: escaped, and cut at ``limit`` characters."""
    shown = text[:limit].encode("unicode_escape").decode("ascii")
    return shown + ("…" if len(text) > limit else "")


def validate_args(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """``args`` checked against ``spec.parameters``; a cleaned copy, or :class:`ToolError`
    saying what to send instead. Accepts anything ``json.loads`` can produce."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {spec.name} must be a JSON object, got {describe(args)}")
    props, required = spec.parameters["properties"], spec.parameters["required"]
    valid = ", ".join(props)
    clean = {}
    for key, value in args.items():
        if key not in props:
            raise ToolError(f"unknown argument '{_quote(str(key))}' for {spec.name}; valid arguments: {valid}")
        if value is None and key not in required:
            continue  # explicit null for an optional argument = not given
        try:
            clean[key] = check(value, props[key])
        except SchemaError as exc:
            raise ToolError(f"argument '{key}' of {spec.name} {exc}") from None
    missing = [k for k in required if k not in clean]
    if missing:
        raise ToolError(
            f"missing required argument{'s' if len(missing) > 1 else ''} for {spec.name}: "
            + ", ".join(f"'{k}' ({props[k]['type']})" for k in missing)
        )
    return clean


def _failure(name: str, exc: Exception) -> str:
    try:
        return f"{name} failed with {type(exc).__name__}: {exc}"
    except Exception:  # an exception whose message cannot be built (e.g. a 5000-digit integer in it)
        return f"{name} failed with {type(exc).__name__}"


def _valid_text(text: str) -> str:
    """``text`` as valid Unicode: lone surrogates (from undecodable bytes) become escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


async def run_tool(name: str, args: Any, root: Path, config: ToolConfig = ToolConfig()) -> ToolResult:  # noqa: B008 - frozen
    """Run tool ``name``; every tool-level problem becomes ``ToolResult(ok=False)``.

    Only ``asyncio.CancelledError`` propagates. The content has the server's secrets
    (:func:`~cody_lsp.secrets.env_secrets`) and their near-copies redacted.
    """
    spec = TOOLS.get(name)
    if spec is None:
        return ToolResult(False, f"unknown tool '{_quote(str(name))}'; available tools: {', '.join(TOOLS)}")
    try:
        clean = validate_args(spec, args)
        real_root = Path(os.path.realpath(root))
        handler = spec.handler
        if name == "run_command" and config.terminal is not None and not config.sandboxed:
            handler = config.terminal  # the client's terminal (an ACP client's terminal/*)
        result = await handler(real_root, clean, config)
    except ToolError as e:
        result = ToolResult(False, str(e))
    except FileNotFoundError as e:
        result = ToolResult(False, f"{name} failed: file not found: {e.filename}")
    except PermissionError as e:
        result = ToolResult(False, f"{name} failed: permission denied: {e.filename}")
    except Exception as e:
        result = ToolResult(False, _failure(name, e))
    content = redact_all(_valid_text(result.content), env_secrets(os.environ))
    if spec.bounds_result:
        return dataclasses.replace(result, content=content)
    return dataclasses.replace(result, content=cap_text(content, config.max_result_chars))
