"""The settings of a run: the editor's configuration over the environment's.

Keys (protocol.md, "Configuration from the editor"): `model`, `baseUrl`, `toolPolicy`
(`{tool: "allow" | "sandboxed" | "ask" | "deny"}`, `sandboxed` for run_command only),
`sandboxNetwork` (`"allow"` | `"block"`: the network of sandboxed commands; an explicit
`CODY_SANDBOX_NETWORK` wins), `contextWindow`, `outputReserve`, `instructions` (false: no
project instructions), `instructionsMaxBytes`, and each run and tool
limit of the environment in camelCase (`maxSteps` for `CODY_MAX_STEPS`, `retryAttempts`,
`stallTimeout`, `commandTimeout`, `maxWriteBytes`, `toolDeadline`, …), the checkpoints'
`checkpointMaxFileBytes` and `checkpointStoreMaxBytes`, the attachments' bounds, `modelImages` and
`diagnosticsWait`. The API key is never one
of them, nor `CODY_ALLOW_VCS_WRITES`: they come from the environment only.

Where a value comes from, first found wins: the workspace folder's configuration (section `cody`
of `workspace/configuration`, asked per folder when the client supports it, kept until
`workspace/didChangeConfiguration`), then `initializationOptions` (or, for a client that cannot
be asked, the `cody` settings its `didChangeConfiguration` pushes), then the environment. Except
for `toolPolicy`: each tool gets the strictest value any of them sets (deny > ask > sandboxed >
allow), so a folder's or the client's settings can make a tool stricter than the environment
says, never looser (a looser value is reported and ignored). A value
that does not fit its key is reported (`window/showMessage`, a warning naming the setting, once;
all the problems a change brings in one message, a list of names cut after a few) and ignored:
the value below it applies. A run reads its settings when it starts, so a change applies to the
next run, without a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ...config import (
    CHECKPOINT_VARIABLES,
    EDITOR_CONTEXT_VARIABLES,
    LIMIT_VARIABLES,
    SANDBOX_NETWORK_VALUES,
    SANDBOXED_TOOLS,
    TOOL_LIMIT_VARIABLES,
    TOOL_POLICY_VALUES,
    CheckpointSettings,
    ContextSettings,
    EditorContext,
    InstructionSettings,
    Limits,
    ModelConfig,
    ServerConfig,
    ToolLimits,
    policy_problem,
    setting_key,
    some_of,
    stricter,
)

log = logging.getLogger(__name__)

SECTION = "cody"
FETCH_TIMEOUT = 10.0  # seconds the client gets to answer workspace/configuration
LIMIT_KEYS = {setting_key(var): field for var, field in LIMIT_VARIABLES}  # maxSteps → max_steps
TOOL_LIMIT_KEYS = {setting_key(var): field for var, field in TOOL_LIMIT_VARIABLES}  # toolDeadline → deadline
CHECKPOINT_KEYS = {setting_key(var): field for var, field in CHECKPOINT_VARIABLES}  # checkpointMaxFileBytes → …
CONTEXT_KEYS = {"contextWindow": "window", "outputReserve": "output_reserve"}
# attachmentMaxChars → attachment_max_chars, …, modelImages, diagnosticsWait
EDITOR_CONTEXT_KEYS = {setting_key(var): field for var, field in EDITOR_CONTEXT_VARIABLES}
INSTRUCTION_KEYS = {"instructions": "enabled", setting_key("CODY_INSTRUCTIONS_MAX_BYTES"): "max_bytes"}
KEYS = (
    *("model", "baseUrl", "toolPolicy", "sandboxNetwork"),
    *CONTEXT_KEYS,
    *INSTRUCTION_KEYS,
    *LIMIT_KEYS,
    *TOOL_LIMIT_KEYS,
    "mcpServers",
    *CHECKPOINT_KEYS,
    *EDITOR_CONTEXT_KEYS,
)

Fetch = Callable[[str], Awaitable[Any]]  # folder path → the client's `cody` section for it


class _Invalid(ValueError):
    pass


def _number(key: str, value: Any, default: Any, *, positive: bool = False) -> Any:
    whole = isinstance(default, int)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Invalid(f"must be {'a whole number' if whole else 'a number'}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise _Invalid(f"must be a finite number {'> 0' if positive else '≥ 0'}")
    if whole:
        if value != int(value):
            raise _Invalid("must be a whole number")
        return int(value)
    return float(value)


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid("must be a non-empty string")
    return value.strip()


def _choice(value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise _Invalid(f"must be {' or '.join(repr(c) for c in choices)}")
    return value.strip().lower()


def _base_url(value: Any) -> str:
    text = _text(value)
    url = urlparse(text)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise _Invalid("must be an http(s) URL, e.g. https://api.openai.com/v1")
    return text


def _images(value: Any) -> str:
    if value == "auto":
        return "auto"
    if not isinstance(value, bool):
        raise _Invalid('must be true, false or "auto"')
    return "on" if value else "off"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def resolve(base: ServerConfig, layers: list[tuple[str, Any]]) -> tuple[ServerConfig, list[str]]:
    """`base` (the environment's settings) with `layers` over it — (where, values), lowest
    precedence first — and a warning for each value that was ignored."""
    warnings: list[str] = []
    found: dict[str, Any] = {}
    policy = dict(base.tool_policy)
    policy_source = {tool: "the environment, CODY_TOOL_POLICY" for tool in policy}
    limit_defaults = Limits()
    tool_defaults = ToolLimits()
    checkpoint_defaults = CheckpointSettings()
    context_defaults = EditorContext()

    def warn(key: str, where: str, value: Any, why: str) -> None:
        warnings.append(f"Cody: the setting {SECTION}.{key} = {_show(value)} ({where}) {why}; it is ignored.")

    for where, values in layers:
        if values is None:
            continue
        if not isinstance(values, dict):
            warnings.append(f"Cody: the settings from {where} are not an object; they are ignored.")
            continue
        for key in KEYS:
            value = values.get(key)
            if value is None:
                continue
            try:
                if key == "model":
                    found[key] = _text(value)
                elif key == "baseUrl":
                    found[key] = _base_url(value)
                elif key == "toolPolicy":
                    _merge_policy(policy, policy_source, _tool_policy(value, where, warnings), where, warnings)
                elif key == "mcpServers":
                    if not isinstance(value, dict):
                        raise _Invalid('must be an object such as {"name": {"command": "…", "args": […]}}')
                    found[key] = value
                elif key == "sandboxNetwork":
                    found[key] = _choice(value, SANDBOX_NETWORK_VALUES)
                elif key in CONTEXT_KEYS:
                    found[key] = _number(key, value, 0)
                elif key == "modelImages":
                    found[key] = _images(value)
                elif key in EDITOR_CONTEXT_KEYS:
                    default = getattr(context_defaults, EDITOR_CONTEXT_KEYS[key])
                    found[key] = _number(key, value, default, positive=key != "diagnosticsWait")
                elif key == "instructions":
                    if not isinstance(value, bool):
                        raise _Invalid("must be true or false")
                    found[key] = value
                elif key in INSTRUCTION_KEYS:
                    found[key] = _number(key, value, InstructionSettings.max_bytes, positive=True)
                elif key in TOOL_LIMIT_KEYS:
                    found[key] = _number(key, value, getattr(tool_defaults, TOOL_LIMIT_KEYS[key]), positive=True)
                elif key in CHECKPOINT_KEYS:
                    default = getattr(checkpoint_defaults, CHECKPOINT_KEYS[key])
                    found[key] = _number(key, value, default, positive=True)
                else:
                    found[key] = _number(key, value, getattr(limit_defaults, LIMIT_KEYS[key]))
            except _Invalid as exc:
                warn(key, where, value, str(exc))

    model = ModelConfig(
        model=found.get("model", base.model.model),
        base_url=found.get("baseUrl", base.model.base_url),
        api_key=base.model.api_key,  # from the environment only
    )
    limits = dataclasses.replace(base.limits, **{LIMIT_KEYS[k]: v for k, v in found.items() if k in LIMIT_KEYS})
    tool_limits = dataclasses.replace(
        base.tool_limits, **{TOOL_LIMIT_KEYS[k]: v for k, v in found.items() if k in TOOL_LIMIT_KEYS}
    )
    checkpoints = dataclasses.replace(
        base.checkpoints, **{CHECKPOINT_KEYS[k]: v for k, v in found.items() if k in CHECKPOINT_KEYS}
    )
    window = found.get("contextWindow", base.context.window)
    reserve = found.get("outputReserve", base.context.output_reserve)
    if window and reserve >= window:
        warnings.append(
            f"Cody: the setting {SECTION}.outputReserve ({reserve}) must be smaller than {SECTION}.contextWindow "
            f"({window}); the output reserve is ignored."
        )
        reserve = 0
    context = ContextSettings(window, reserve)
    editor_context = dataclasses.replace(
        base.editor_context, **{EDITOR_CONTEXT_KEYS[k]: v for k, v in found.items() if k in EDITOR_CONTEXT_KEYS}
    )
    network = base.sandbox_network or found.get("sandboxNetwork")  # the environment's, when it says
    instructions = dataclasses.replace(
        base.instructions, **{INSTRUCTION_KEYS[k]: v for k, v in found.items() if k in INSTRUCTION_KEYS}
    )
    config = dataclasses.replace(
        base,
        model=model,
        limits=limits,
        tool_limits=tool_limits,
        context=context,
        tool_policy=policy,
        mcp_servers=found.get("mcpServers", base.mcp_servers),
        checkpoints=checkpoints,
        editor_context=editor_context,
        sandbox_network=network,
        instructions=instructions,
    )
    return config, warnings


def _merge_policy(
    policy: dict[str, str], source: dict[str, str], layer: dict[str, str], where: str, warnings: list[str]
) -> None:
    """One source's toolPolicy over the policy of the sources before it: where both decide a
    tool, the stricter applies. An MCP tool is decided by its own entry, else by its server's
    `mcp__<server>__*` — so an entry for one tool is checked against the pattern of an earlier
    source too, and a pattern tightens the earlier sources' entries of its server's tools (within
    one source, a tool's own entry still wins over its server's pattern)."""
    from ..mcp.definitions import pattern_server, server_of, server_pattern

    before = dict(policy)
    for tool, decision in layer.items():
        deciding = tool if tool in before else None
        server = server_of(tool)
        if (
            deciding is None
            and server is not None
            and server_pattern(server) in before
            and tool != server_pattern(server)
        ):
            deciding = server_pattern(server)
        if deciding is not None and stricter(before[deciding], decision) != decision:
            warnings.append(
                f"Cody: the setting {SECTION}.toolPolicy.{tool} = {_show(decision)} ({where}) is looser "
                f"than {before[deciding]!r} ({source[deciding]}); the stricter one applies."
            )
            continue
        policy[tool], source[tool] = decision, where
        pattern_of = pattern_server(tool)
        if pattern_of is None:
            continue
        for other, earlier in before.items():  # the earlier sources' entries for this server's tools
            if (
                other != tool
                and other not in layer
                and server_of(other) == pattern_of
                and stricter(earlier, decision) != earlier
            ):
                policy[other], source[other] = decision, where


def _tool_policy(value: Any, where: str, warnings: list[str]) -> dict[str, str]:
    from ..mcp.definitions import is_mcp_name
    from ..tools import TOOLS  # not at import: the server answers initialize before loading the tools

    if not isinstance(value, dict):
        raise _Invalid('must be an object such as {"run_command": "ask"}')
    policy = {}
    unknown: list[str] = []
    bad: list[str] = []
    misplaced: list[str] = []
    for tool, decision in value.items():
        if tool not in TOOLS and not is_mcp_name(str(tool)):
            unknown.append(_show(tool))
        elif not isinstance(decision, str) or decision.lower() not in TOOL_POLICY_VALUES:
            bad.append(f"{SECTION}.toolPolicy.{tool} = {_show(decision)}")
        elif policy_problem(str(tool), decision.lower()) is not None:  # sandboxed: run_command only
            misplaced.append(f"{SECTION}.toolPolicy.{tool} = {_show(decision)}")
        else:
            policy[tool] = decision.lower()
    if unknown:  # one warning, however many names (a setting may name thousands)
        one = len(unknown) == 1
        warnings.append(
            f"Cody: the setting {SECTION}.toolPolicy names {some_of(unknown)} ({where}), which "
            f"{'is not a tool' if one else 'are not tools'} (the tools are {', '.join(sorted(TOOLS))}); "
            f"{'it is' if one else 'they are'} ignored."
        )
    if bad:
        warnings.append(
            f"Cody: the setting {some_of(bad)} ({where}) {'is' if len(bad) == 1 else 'are'} not "
            f"{', '.join(TOOL_POLICY_VALUES)}; ignored."
        )
    if misplaced:
        warnings.append(
            f"Cody: the setting {some_of(misplaced)} ({where}) {'is' if len(misplaced) == 1 else 'are'} "
            f"'sandboxed', which only {', '.join(SANDBOXED_TOOLS)} can be; ignored."
        )
    return policy


class Settings:
    """The settings of each folder's runs, from the client's configuration and the environment."""

    def __init__(self, base: ServerConfig, warn: Callable[[str], None]):
        self.base = base
        self._warn = warn
        self.fetch: Fetch | None = None  # set when the client supports workspace/configuration
        self.client: Any = None  # initializationOptions (or the settings didChangeConfiguration pushed)
        self._folders: dict[str, asyncio.Future[Any]] = {}
        self._warned: set[str] = set()

    def changed(self, pushed: Any) -> None:
        """`workspace/didChangeConfiguration`: ask again before the next run."""
        self._folders.clear()
        self._warned.clear()
        if self.fetch is None and isinstance(pushed, dict) and isinstance(pushed.get(SECTION), dict):
            self.client = pushed[SECTION]

    async def for_folder(self, folder: str) -> ServerConfig:
        """The settings of a run in `folder` (a normalized path)."""
        layers: list[tuple[str, Any]] = [("initializationOptions", self.client)]
        if self.fetch is not None:
            layers.append((f"the configuration of {folder}", await self._folder_values(folder)))
        config, warnings = resolve(self.base, layers)
        new = [warning for warning in dict.fromkeys(warnings) if warning not in self._warned]
        if new:  # one message for what a change of the settings brought, however much is wrong
            self._warned.update(new)
            text = new[0] if len(new) == 1 else "\n".join(new)
            log.warning("%s", text)
            self._warn(text)
        return config

    async def _folder_values(self, folder: str) -> Any:
        future = self._folders.get(folder)
        if future is None:
            future = self._folders[folder] = asyncio.ensure_future(self._ask(folder))
        values = await asyncio.shield(future)
        if values is None and self._folders.get(folder) is future:
            del self._folders[folder]  # it failed: ask again next time
        return values

    async def _ask(self, folder: str) -> Any:
        assert self.fetch is not None
        try:
            answer = await asyncio.wait_for(self.fetch(Path(folder).as_uri()), FETCH_TIMEOUT)
        except Exception as exc:  # an error answer, no answer in time, a closed connection
            log.warning("could not get the editor's settings of a folder (%s); using the others", type(exc).__name__)
            return None
        if isinstance(answer, (list, tuple)) and answer:  # pygls gives the result as a tuple
            return answer[0]
        return None
