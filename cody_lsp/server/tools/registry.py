"""Tool specs, OpenAI schemas and :func:`run_tool` dispatch with argument checking."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from . import files, shell
from .workspace import ToolConfig, ToolError, ToolResult, cap_text

Handler = Callable[[Path, dict, ToolConfig], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its model-facing schema and its handler."""

    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    mutating: bool  # needs approval before running (write_file, edit_file, run_command)
    handler: Handler


def _params(required: list[str], **props: dict) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _s(description: str) -> dict:
    return {"type": "string", "description": description}


def _i(description: str) -> dict:
    return {"type": "integer", "minimum": 1, "description": description}


_PATH = "Path relative to the workspace root (absolute paths must be inside the workspace)."
_DIR = "Directory to search, relative to the workspace root. Default: the root."

_SPECS = [
    ToolSpec(
        "read_file",
        "Read a text file. Each line is prefixed with its line number and a tab. "
        "For large files pass start_line/end_line (1-based, inclusive).",
        _params(
            ["path"],
            path=_s(_PATH),
            start_line=_i("First line to show (1-based). Default: 1."),
            end_line=_i("Last line to show (inclusive). Default: end of file."),
        ),
        False,
        files.read_file,
    ),
    ToolSpec(
        "list_dir",
        "List a directory: entries sorted by name, directories end with '/', symlinks show their target.",
        _params([], path=_s("Directory relative to the workspace root. Default: '.'.")),
        False,
        files.list_dir,
    ),
    ToolSpec(
        "glob",
        "Find files and directories whose path matches a glob pattern, e.g. '**/*.py' (any depth) "
        "or 'src/*.ts'. Results are relative to the workspace root, sorted. Skips .git, "
        "node_modules, __pycache__ and .venv.",
        _params(["pattern"], pattern=_s("Glob pattern relative to `path`."), path=_s(_DIR)),
        False,
        files.glob,
    ),
    ToolSpec(
        "grep",
        "Search file contents with a Python regular expression. Prints 'path:line: text' for "
        "each matching line. Skips binary files, .git, node_modules, __pycache__ and .venv.",
        _params(
            ["pattern"],
            pattern=_s("Python regex, e.g. 'def \\w+_handler'."),
            path=_s("File or directory to search, relative to the workspace root. Default: the root."),
            include=_s("Only search files whose name matches this glob, e.g. '*.py'."),
        ),
        False,
        files.grep,
    ),
    ToolSpec(
        "write_file",
        "Create or overwrite a file with the given content (parent directories are created). "
        "Prefer edit_file for changing part of an existing file.",
        _params(["path", "content"], path=_s(_PATH), content=_s("The complete new file content.")),
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
            path=_s(_PATH),
            old_string=_s("Exact text to replace."),
            new_string=_s("Replacement text."),
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
            command=_s("Shell command line."),
            timeout={
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Timeout in seconds (cannot exceed the configured maximum, 120 s by default).",
            },
        ),
        True,
        shell.run_command,
    ),
]

TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in _SPECS}


@functools.cache
def tool_schemas() -> list[dict]:
    """OpenAI ``tools=`` list for all tools (cached; do not mutate)."""
    return [
        {
            "type": "function",
            "function": {"name": s.name, "description": s.description, "parameters": s.parameters},
        }
        for s in TOOLS.values()
    ]


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _type_name(value: object) -> str:
    names = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def _check_args(spec: ToolSpec, args: object) -> dict:
    """Validate ``args`` against the spec's schema; returns a cleaned copy."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {spec.name} must be a JSON object, got {_type_name(args)}")
    props, required = spec.parameters["properties"], spec.parameters["required"]
    valid = ", ".join(props)
    clean = {}
    for key, value in args.items():
        if key not in props:
            raise ToolError(f"unknown argument '{key}' for {spec.name}; valid arguments: {valid}")
        if value is None and key not in required:
            continue  # explicit null for an optional argument = not given
        expected = props[key]["type"]
        if isinstance(value, float) and expected == "integer" and value.is_integer():
            value = int(value)
        if isinstance(value, bool) and expected != "boolean" or not isinstance(value, _JSON_TYPES[expected]):
            raise ToolError(
                f"argument '{key}' of {spec.name} must be {'an' if expected[0] in 'aeiou' else 'a'} "
                f"{expected}, got {_type_name(value)} {value!r:.60}"
            )
        clean[key] = value
    missing = [k for k in required if k not in clean]
    if missing:
        raise ToolError(
            f"missing required argument{'s' if len(missing) > 1 else ''} for {spec.name}: "
            + ", ".join(f"'{k}' ({props[k]['type']})" for k in missing)
        )
    return clean


async def run_tool(name: str, args: dict, root: Path, config: ToolConfig = ToolConfig()) -> ToolResult:  # noqa: B008 - frozen
    """Run tool ``name``; every tool-level problem becomes ``ToolResult(ok=False)``.

    Only ``asyncio.CancelledError`` propagates.
    """
    spec = TOOLS.get(name)
    if spec is None:
        return ToolResult(False, f"unknown tool '{name}'; available tools: {', '.join(TOOLS)}")
    try:
        real_root = Path(os.path.realpath(root))
        result = await spec.handler(real_root, _check_args(spec, args), config)
    except ToolError as e:
        result = ToolResult(False, str(e))
    except FileNotFoundError as e:
        result = ToolResult(False, f"{name} failed: file not found: {e.filename}")
    except PermissionError as e:
        result = ToolResult(False, f"{name} failed: permission denied: {e.filename}")
    except Exception as e:
        result = ToolResult(False, f"{name} failed with {type(e).__name__}: {e}")
    return ToolResult(result.ok, cap_text(result.content, config.max_result_chars))
