"""The built-in demo scenario: a scripted model building a small todo CLI.

Three turns of one session, played by `ScriptedProvider` for `cody-lsp demo`:

1. "Create a small todo CLI…": write_file todo.py and README.md, run them with
   run_command, answer.
2. "Add a remove command…": read_file, three edit_file calls, run_command, answer.
3. "What did we build?": a plain answer that remembers the earlier turns.

The replies fit the prompts and what the tools really do in an empty folder
(the demo refuses a folder that already has these files). `delay` paces the
stream so it reads like a model typing; 0 plays it as fast as possible.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from .provider import Reply, ToolCall

__all__ = ["DemoTurn", "FILES", "demo_turns", "demo_script"]

# The files the scenario leaves in the workspace.
FILES = ("todo.py", "README.md", "todos.json")

TODO_PY = '''\
#!/usr/bin/env python3
"""A tiny todo list for the command line, kept in todos.json."""

import argparse
import json
from pathlib import Path

STORE = Path(__file__).with_name("todos.json")


def load():
    if STORE.exists():
        return json.loads(STORE.read_text())
    return []


def save(todos):
    STORE.write_text(json.dumps(todos, indent=2) + "\\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="add a todo")
    add.add_argument("text")
    commands.add_parser("list", help="show the todos")
    done = commands.add_parser("done", help="mark a todo as done")
    done.add_argument("number", type=int)
    args = parser.parse_args()

    todos = load()
    if args.command == "add":
        todos.append({"text": args.text, "done": False})
        save(todos)
        print(f"added #{len(todos)}: {args.text}")
    elif args.command == "list":
        if not todos:
            print("nothing to do")
        for number, todo in enumerate(todos, 1):
            mark = "x" if todo["done"] else " "
            print(f"{number}. [{mark}] {todo['text']}")
    elif args.command == "done":
        todos[args.number - 1]["done"] = True
        save(todos)
        print(f"done #{args.number}")


if __name__ == "__main__":
    main()
'''

README_MD = """\
# todo

A tiny todo list for the command line. Todos are kept in `todos.json` next to the script.

- `{py} todo.py add "Buy milk"` — add a todo
- `{py} todo.py list` — show the todos
- `{py} todo.py done 1` — mark todo 1 as done
"""

PARSER_OLD = """\
    done.add_argument("number", type=int)
    args = parser.parse_args()
"""
PARSER_NEW = """\
    done.add_argument("number", type=int)
    remove = commands.add_parser("remove", help="delete a todo")
    remove.add_argument("number", type=int)
    args = parser.parse_args()
"""
HANDLER_OLD = """\
            print(f"{number}. [{mark}] {todo['text']}")
    elif args.command == "done":
"""
HANDLER_NEW = """\
            print(f"{number}. [{mark}] {todo['text']}")
        if todos:
            left = sum(not todo["done"] for todo in todos)
            print(f"{left} of {len(todos)} still open")
    elif args.command == "remove":
        removed = todos.pop(args.number - 1)
        save(todos)
        print(f"removed #{args.number}: {removed['text']}")
    elif args.command == "done":
"""
README_OLD = "- `{py} todo.py done 1` — mark todo 1 as done\n"
README_NEW = README_OLD + "- `{py} todo.py remove 1` — delete todo 1\n"


@dataclass
class DemoTurn:
    """One user prompt and the model replies that answer it (one per model step)."""

    prompt: str
    replies: list[Reply] = field(default_factory=list)


def _deltas(text: str, per: int = 6) -> int:
    """Enough deltas that the text streams in pieces of about `per` characters."""
    return max(1, len(text) // per)


def demo_turns(python: str = "python3", delay: float = 0.02) -> list[DemoTurn]:
    """The scenario; `python` is the interpreter command its run_command calls use."""
    py = python
    pause = 0.4 if delay else 0.0  # the "model is thinking" pause before a reply starts

    def reply(text: str = "", reasoning: str = "", tools: list[ToolCall] | None = None) -> Reply:
        return Reply(
            text=text,
            text_deltas=_deltas(text),
            reasoning=reasoning,
            reasoning_deltas=_deltas(reasoning, 8),
            tool_calls=tools or [],
            delay=delay,
            first_byte_delay=pause,
        )

    def run(*commands: list[str]) -> str:
        return " && ".join(shlex.join([py, "todo.py", *c]) for c in commands)

    turn1 = DemoTurn(
        "Create a small todo CLI in Python with add, list and done commands; keep the todos in a JSON file.",
        [
            reply(
                reasoning="A small command-line app: argparse subcommands and a JSON file next to the "
                "script keep it free of dependencies.",
                text="I'll write `todo.py` with `add`, `list` and `done` commands, and a short README.",
                tools=[
                    ToolCall("write_file", {"path": "todo.py", "content": TODO_PY}, fragments=6),
                    ToolCall("write_file", {"path": "README.md", "content": README_MD.format(py=py)}, fragments=3),
                ],
            ),
            reply(
                text="Let me try it out.",
                tools=[
                    ToolCall(
                        "run_command",
                        {
                            "command": run(
                                ["add", "Try the cody demo"], ["add", "Write a README"], ["done", "2"], ["list"]
                            )
                        },
                    )
                ],
            ),
            reply(
                text="Done! I created:\n\n"
                "- `todo.py` — `add`, `list` and `done` commands; the todos are kept in `todos.json` "
                "next to the script.\n"
                "- `README.md` — how to use it.\n\n"
                "To try it I added two todos and marked the second one done; `list` shows both. "
                f"Run `{py} todo.py list` to see them.",
            ),
        ],
    )
    turn2 = DemoTurn(
        "Add a remove command, and make list say how many todos are still open.",
        [
            reply(
                reasoning="I should look at how the commands are parsed and handled before editing.",
                text="Let me look at the current code first.",
                tools=[ToolCall("read_file", {"path": "todo.py"})],
            ),
            reply(
                text="I'll add a `remove` subcommand, a summary line at the end of `list`, and document "
                "`remove` in the README.",
                tools=[
                    ToolCall("edit_file", {"path": "todo.py", "old_string": PARSER_OLD, "new_string": PARSER_NEW}),
                    ToolCall("edit_file", {"path": "todo.py", "old_string": HANDLER_OLD, "new_string": HANDLER_NEW}),
                    ToolCall(
                        "edit_file",
                        {
                            "path": "README.md",
                            "old_string": README_OLD.format(py=py),
                            "new_string": README_NEW.format(py=py),
                        },
                    ),
                ],
            ),
            reply(
                text="Now let me check it.",
                tools=[ToolCall("run_command", {"command": run(["remove", "2"], ["list"])})],
            ),
            reply(
                text="Added `remove`: `todo.py remove N` deletes todo N, and `list` now ends with how many "
                "todos are still open. To check it I removed the finished README todo — one todo is "
                "left, and it is still open. The README lists the new command too.",
            ),
        ],
    )
    turn3 = DemoTurn(
        "Thanks! What did we build, in one sentence?",
        [
            reply(
                text="A dependency-free Python todo CLI, `todo.py`, with `add`, `list`, `done` and `remove` "
                "commands that keeps its todos in `todos.json`, plus a README explaining how to use it.",
            ),
        ],
    )
    return [turn1, turn2, turn3]


def demo_script(python: str = "python3", delay: float = 0.02) -> list[Reply]:
    """Every reply of the scenario, in order: the provider's script."""
    return [r for turn in demo_turns(python, delay) for r in turn.replies]
