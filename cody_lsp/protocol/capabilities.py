"""What the server advertises in its `initialize` answer, importable before anything heavy.

`SERVER_CAPABILITIES` is the answer's `capabilities.experimental.cody`: the cody protocol's
version and the optional features this server serves (protocol.md, "Capabilities"); a client
uses only what is listed there. `cody_capabilities()` adds what depends on the machine (the
command sandbox). `initialize_result` is the whole answer: the LSP capabilities
of the features the server serves (the ones pygls would derive from them), which depend on the
client only through the position encodings it offers and the `willSave` notifications it
declares, plus cody's. The server answers `initialize` with it (server/lsp/language_server.py),
and so does the early start before the server is imported (server/lsp/early_initialize.py);
tests/unit/lsp/test_early_initialize.py checks the two against each other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .. import __version__

PROTOCOL_VERSION = 1
SERVER_NAME = "cody-lsp"

# initialize's result.capabilities.experimental.cody: the version, and the optional features served.
SERVER_CAPABILITIES: dict[str, Any] = {
    "protocolVersion": PROTOCOL_VERSION,
    "steering": True,
    "permissionRules": True,
    "usage": True,
    "compaction": True,
    # The editor's live state (protocol.md, "The editor's state"): open documents the tools see,
    # edits through workspace/applyEdit, work-done progress, configuration, cody/run activeDocument.
    "openDocuments": True,
    "workspaceEdits": True,
    "progress": True,
    "configuration": True,
    "activeDocument": True,
    # MCP servers' tools (protocol.md, "MCP servers"): cody/listMcpServers, cody/revokeMcpApproval,
    # `server` on tool_call/tool_result chunks, `toolPattern` in permission requests and answers.
    "mcp": True,
    # cody/getSession's `runs`: how each run of the page ended (status, tokens).
    "runEnds": True,
    # cody/requestPermission answers may carry `feedback` with a deny (given to the model).
    "denyFeedback": True,
    # cody/run `attachments` (files, a selection, problems, terminal text, images), given to the model.
    "attachments": True,
    # cody/diagnostics: after a tool changes a file, the server asks a client that declared
    # `diagnostics` for the file's new problems and gives them to the model.
    "diagnostics": True,
    # Project instructions (AGENTS.md, …) and session modes (protocol.md, "Instructions", "Modes").
    "instructions": True,
    "modes": ["code", "ask", "plan"],
    # cody/sessionChanged: a session this client follows changed in another server process
    # (its title, model or mode; e.g. an ACP client set its mode), for clients that declare it.
    "sessionChanges": True,
    # cody/listModels: the models the endpoint lists (a model picker; cody/updateSession sets one).
    "listModels": True,
    # cody/warmUp: a client's hint that a run is coming (the model client loads in the background).
    "warmUp": True,
    # cody/getSession marks a stopped answer's text (`partial` on its assistant message).
    "partialText": True,
    # The agent's plan (update_plan): the `plan` chunk for clients that declare `plans`, and
    # `plan` of cody/getSession's session.
    "plans": True,
    # Live output of running commands: the `tool_output` chunk for clients that declare `toolOutput`.
    "toolOutput": True,
    # run_command's `background`: cody/listBackgroundCommands, cody/stopBackgroundCommand.
    "backgroundCommands": True,
    # Hooks (protocol.md, "Hooks"): the `hook` chunk, to clients that declare `hooks`.
    "hooks": True,
    # Agent Skills: cody/listSkills, the `skill` tool (protocol.md, "Skills").
    "skills": True,
    # Custom slash commands: cody/listCommands, cody/run `command` (protocol.md, "Custom slash commands").
    "commands": True,
    # Subagents (protocol.md, "Subagents"): the `task` tool, chunks and permission requests of a child
    # marked with `parentToolCallId` (chunks: for clients that declare `subagents`), the `subagent`
    # transcript of a `task` call's tool message in cody/getSession, cody/listAgents.
    "subagents": True,
    # The code_nav tool (protocol.md, "Code navigation"): cody/languageFeature to clients that declare
    # `languageFeatures`, language servers the backend starts itself, cody/listLanguageServers,
    # cody/revokeLanguageServerApproval.
    "codeNav": True,
    # A run's changes hunk by hunk (protocol.md, "Reviewing changes"): cody/listChanges, cody/revertChanges.
    "changeReview": True,
    # Edit diffs (protocol.md, "Edit diffs"): `diff` on write_file/edit_file permission requests, and on
    # their tool_result chunks for clients that declare `editDiffs`; an edit that cannot apply, or a
    # write that changes nothing, is answered before anyone is asked.
    "editDiffs": True,
    # cody/getContext: what fills a session's context window (system prompt, instructions, tools, history).
    "contextReport": True,
}


def checkpoints_unavailable() -> str | None:
    """Why checkpoints cannot work here: no git to run (server/checkpoints/ checks its version later)."""
    import shutil

    if shutil.which("git") is None:
        return "no runnable git on the PATH: install git to get checkpoints"
    return None


def _checkpoints() -> dict[str, Any]:
    reason = checkpoints_unavailable()
    return {"checkpoints": True} if reason is None else {"checkpoints": False, "checkpointsUnavailable": reason}


# Checkpoints (protocol.md, "Checkpoints"): cody/listCheckpoints, diffCheckpoint, restoreCheckpoint,
# forkSession and the `checkpoint` chunk; false, with `checkpointsUnavailable` saying why, without git.
SERVER_CAPABILITIES.update(_checkpoints())


def sandbox_capability(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """`sandbox`: whether run_command's policy `sandboxed` runs commands in a sandbox here
    (`available`; else `reason`, and that policy asks instead), Landlock's `abi`, and what the
    `network` of a sandboxed command is by default ("blocked", "tcp-blocked", "open" where
    nothing here can block it, "allowed" by `CODY_SANDBOX_NETWORK=allow`)."""
    from ..landlock import support  # the kernel's, probed once (a few system calls)

    found = support()
    if not found.available:
        return {"available": False, "reason": found.reason}
    allowed = environ.get("CODY_SANDBOX_NETWORK", "").strip().lower() == "allow"
    return {"available": True, "abi": found.abi, "network": found.network(allowed)}


def cody_capabilities() -> dict[str, Any]:
    """initialize's `capabilities.experimental.cody`: the features, and what this machine offers."""
    return {**SERVER_CAPABILITIES, "sandbox": sandbox_capability()}


POSITION_ENCODINGS = ("utf-8", "utf-16", "utf-32")  # the ones pygls can count in
DEFAULT_POSITION_ENCODING = "utf-16"  # LSP's default, when the client offers none of them
INCREMENTAL_SYNC = 2  # TextDocumentSyncKind.Incremental


def position_encoding(offered: list[str]) -> str:
    """The encoding pygls agrees on: the first one the client offers that it supports."""
    return next((name for name in offered if name in POSITION_ENCODINGS), DEFAULT_POSITION_ENCODING)


def initialize_result(client: dict[str, Any]) -> dict[str, Any]:
    """The server's `initialize` result, as JSON, for the client's capabilities (JSON, of the
    plain shape early_initialize.py checks): what pygls answers for the server's features."""
    general = client.get("general") or {}
    sync: dict[str, Any] = {"openClose": True, "change": INCREMENTAL_SYNC, "save": False}
    # The server has no willSave handlers; pygls says so (false) to a client that declared them.
    declared = (client.get("textDocument") or {}).get("synchronization") or {}
    sync.update({name: False for name in ("willSave", "willSaveWaitUntil") if declared.get(name) is not None})
    return {
        "capabilities": {
            "positionEncoding": position_encoding(general.get("positionEncodings") or []),
            "textDocumentSync": sync,
            "executeCommandProvider": {"commands": []},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
            "experimental": {"cody": cody_capabilities()},
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }
