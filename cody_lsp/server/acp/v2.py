"""ACP v2 (the draft, pinned in pinned/v2/): what a client that asks for it gets, as a translation of the v1 face.

A client whose `initialize` asks for `protocolVersion` 2 or more gets 2 (the highest this agent
speaks); one asking for 1 (or 0) gets v1, unchanged. v2 reaches the same core through the same
routes (v2_routes.py adapts them); this module says how v1's messages become v2's — light, for
`initialize` is answered before anything heavy is imported:

- `initialize`: `info` and `capabilities` (`session.prompt`, `session.mcp` {stdio, http},
  `session.delete`); `authMethods` with `type: "agent"` and `methodId` when the model is not
  configured (then `auth/login` says what to set, `auth/logout` answers `{}`).
- `session/update`s (`V2Stream.translate`): message chunks carry a `messageId` (one per message: a
  change of kind starts a new one); a prompt taken in from the queue, and each prompt of a replay, is
  a whole `user_message`; `tool_call` is the first `tool_call_update` of its id; a `diff` is
  `{changes: [{operation: add | modify, path, fileType: "text"}], patch: {format: "git_patch", text}}`;
  commands carry `type: "command"` and an input `{type: "text", hint}`; a config option's `id` is
  `configId`; `plan` is `plan_update` `{plan: {type: "items", planId, entries}}`;
  `current_mode_update` is not sent (modes are the `mode` config option: `config_option_update`).
- `session/request_permission`: `title` (what is asked), `subject` `{type: "tool_call", toolCall}`.
- `state_update`s: `running` when a turn starts, `requires_action` while a permission is asked,
  `idle` with the `stopReason` when it ends (`error` with the error for a turn that failed).
"""

from __future__ import annotations

import itertools
from typing import Any

PROTOCOL_VERSION = 2
ACCEPTED = (1, 2)

_ids = itertools.count(1)


def negotiated(asked: Any) -> int:
    """The version a client gets: 2 for 2 or more (the highest this agent speaks), else 1."""
    return 2 if isinstance(asked, int) and not isinstance(asked, bool) and asked >= 2 else 1


UNKNOWN_CLIENT = {"name": "unknown", "version": "unknown"}


def lenient(params: Any) -> Any:
    """`initialize` params asking for a version newer than 2 were written for a schema this agent
    does not know: a missing or malformed `info` (required by v2) is taken as unknown, as the
    official SDK does; a v2 request without it is refused (-32602)."""
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), int):
        return params
    info = params.get("info")
    named = isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
    if params["protocolVersion"] > PROTOCOL_VERSION and not named:
        return {**params, "info": UNKNOWN_CLIENT}
    return params


def new_message_id() -> str:
    return f"msg_acp_{next(_ids)}"


def initialize_answer(v1: dict[str, Any]) -> dict[str, Any]:
    """The v2 `initialize` result, from the v1 one (initialize.answer): the same capabilities, in v2's shape."""
    caps = v1["agentCapabilities"]
    prompt: dict[str, Any] = {"embeddedContext": {}}
    if caps["promptCapabilities"].get("image"):
        prompt["image"] = {}
    info = v1["agentInfo"]
    methods = [
        {"type": "agent", "methodId": m["id"], "name": m["name"], "description": m.get("description")}
        for m in v1["authMethods"]
    ]
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "info": {"name": info["name"], "title": info["title"], "version": info["version"]},
        "capabilities": {"session": {"prompt": prompt, "mcp": {"stdio": {}, "http": {}}, "delete": {}}},
        "authMethods": methods,
    }


def mcp_servers_v1(servers: Any) -> list[dict[str, Any]]:
    """v2's MCP server configurations (each with its `type`, `args` and `env` optional) as v1's."""
    out = []
    for index, server in enumerate(servers if isinstance(servers, list) else []):
        kind = server.get("type")
        if kind not in ("stdio", "http"):
            from ...protocol.wire import InvalidParams

            raise InvalidParams(
                f"'mcpServers[{index}].type' {kind!r} is not a transport this agent advertises: 'stdio' or 'http'"
            )
        if kind == "stdio":
            out.append(
                {
                    "name": server["name"],
                    "command": server["command"],
                    "args": server.get("args") or [],
                    "env": server.get("env") or [],
                }
            )
        else:
            out.append(
                {"type": "http", "name": server["name"], "url": server["url"], "headers": server.get("headers") or []}
            )
    return out


def config_options(options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v1's configuration options in v2's shape: `id` is `configId` (and a group's `group` `groupId`)."""
    out = []
    for option in options:
        moved = {("configId" if k == "id" else k): v for k, v in option.items()}
        choices = moved.get("options")
        if isinstance(choices, list):
            moved["options"] = [
                {("groupId" if k == "group" else k): v for k, v in choice.items()} if "group" in choice else choice
                for choice in choices
            ]
        out.append(moved)
    return out


def commands(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for command in listed:
        entry = {"type": "command", "name": command["name"], "description": command["description"]}
        hint = (command.get("input") or {}).get("hint")
        if isinstance(hint, str):
            entry["input"] = {"type": "text", "hint": hint}
        out.append(entry)
    return out


def git_patch(path: str, old: str | None, new: str) -> str:
    """The change as one `diff --git` section of Git's patch format, with absolute paths."""
    import difflib  # not at import: `initialize` imports this module

    before = (old or "").splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    lines = [f"diff --git {path} {path}\n"]
    if old is None:
        lines += ["new file mode 100644\n", "--- /dev/null\n"]
    else:
        lines.append(f"--- {path}\n")
    lines.append(f"+++ {path}\n")
    for line in list(difflib.unified_diff(before, after, n=3))[2:]:
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def content(items: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A tool call's content in v2: diffs as structured changes with a git patch."""
    if items is None:
        return None
    out = []
    for item in items:
        if item.get("type") == "diff":
            path, old = item["path"], item.get("oldText")
            change = {"operation": "add" if old is None else "modify", "path": path, "fileType": "text"}
            out.append(
                {
                    "type": "diff",
                    "changes": [change],
                    "patch": {"format": "git_patch", "text": git_patch(path, old, item["newText"])},
                }
            )
        else:
            out.append(item)
    return out


def tool_call(update: dict[str, Any]) -> dict[str, Any]:
    """A v1 `tool_call`, `tool_call_update` or permission `toolCall` as v2's tool call upsert."""
    out = {k: v for k, v in update.items() if k != "sessionUpdate"}
    if "content" in out:
        out["content"] = content(out["content"])
    return out


def permission(params: dict[str, Any]) -> dict[str, Any]:
    """A v1 `session/request_permission` as v2's: the question as `title`, the call as the `subject`."""
    call = tool_call(params["toolCall"])
    return {
        "sessionId": params["sessionId"],
        "title": f"{call.get('title') or 'Run this tool'}?",
        "subject": {"type": "tool_call", "toolCall": call},
        "options": params["options"],
    }


def state(name: str, **more: Any) -> dict[str, Any]:
    return {"sessionUpdate": "state_update", "state": name, **more}


class V2Stream:
    """One session's v1 updates as v2's, in order: the message ids of the messages being streamed."""

    def __init__(self) -> None:
        self._kind: str | None = None  # the kind of the last update
        self._message: str | None = None  # the message its chunks belong to

    def _message_id(self, kind: str) -> str:
        if self._kind != kind or self._message is None:
            self._message = new_message_id()
        self._kind = kind
        return self._message

    def user_message(self, blocks: list[dict[str, Any]], message_id: str | None = None) -> dict[str, Any]:
        self._kind, self._message = "user_message", None
        return {"sessionUpdate": "user_message", "messageId": message_id or new_message_id(), "content": blocks}

    def translate(self, update: dict[str, Any]) -> list[dict[str, Any]]:
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            return [{**update, "messageId": self._message_id(str(kind))}]
        self._kind = kind
        if kind == "user_message_chunk":
            return [self.user_message([update["content"]])]
        if kind in ("tool_call", "tool_call_update"):
            return [{"sessionUpdate": "tool_call_update", **tool_call(update)}]
        if kind == "plan":
            plan = {"type": "items", "planId": "plan", "entries": update["entries"]}
            return [{"sessionUpdate": "plan_update", "plan": plan}]
        if kind == "available_commands_update":
            return [{**update, "availableCommands": commands(update["availableCommands"])}]
        if kind == "config_option_update":
            return [{**update, "configOptions": config_options(update["configOptions"])}]
        if kind == "current_mode_update":
            return []  # v2 has no modes: the `mode` config option (config_option_update) says it
        return [update]  # session_info_update, usage_update, state_update, user_message
