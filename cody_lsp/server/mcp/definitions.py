"""MCP server definitions: where they come from, how they are read, what a tool is named.

The format is the one other agents use: ``{"mcpServers": {name: {"command", "args", "env",
"cwd"} | {"url", "headers"}}}`` (``"type": "stdio" | "http" | "sse"`` optional: a ``url``
alone is streamable HTTP), and VS Code's ``{"servers": {name: {type, command, args, env,
cwd, url, headers}}}`` (with ``//`` comments and trailing commas). Either key is read in
every file. Sources, first found wins on a name: ACP's ``session/new`` (``acp``), the
editor's ``cody.mcpServers`` (``editor``), ``CODY_MCP_CONFIG`` (``env``: a file, or the
JSON text itself), ``$XDG_CONFIG_HOME/cody-lsp/mcp.json`` (``user``), then the folder's
``.cody/mcp.json`` and ``.vscode/mcp.json`` (``workspace``: used only once the user approved
that exact definition, see SECURITY.md).

Values may use ``${workspaceFolder}`` and ``${userHome}``; a definition the user wrote
(not a workspace's) may also use ``${env:NAME}``. A definition that cannot be used is kept as
a :class:`BadDef`, listed with its reason, never started.

Standard library only: reading the definitions must not import the SDK.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...secrets import MIN_ENV_SECRET, secret_name

Source = Literal["user", "env", "editor", "workspace", "acp"]
Transport = Literal["stdio", "http", "sse"]
SOURCE_ORDER: tuple[Source, ...] = ("acp", "editor", "env", "user", "workspace")

CONFIG_VARIABLE = "CODY_MCP_CONFIG"
WORKSPACE_FILES = (".cody/mcp.json", ".vscode/mcp.json")
MAX_CONFIG_BYTES = 1 << 20
MAX_SERVERS = 64  # per source
MAX_STRING = 16_384  # one command, argument, value or URL
MAX_ARGS = 256
MAX_SERVER_NAME = 32
MAX_TOOL_NAME = 64  # what OpenAI-compatible endpoints accept as a function name
PREFIX = "mcp__"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class DefinitionError(ValueError):
    """A definition that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class ServerDef:
    """One MCP server as configured (its values with the variables replaced)."""

    name: str  # sanitized: [A-Za-z0-9_-], no "__"
    source: Source
    origin: str  # where it was read, for messages: a path, "the editor's cody.mcpServers", …
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """What makes the process (or connection): equal keys share one, whoever defined them."""
        return json.dumps(
            [self.name, self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers]
        )

    def shown(self) -> dict[str, Any]:
        """The definition as the user approves it: what runs, where, with what."""
        out: dict[str, Any] = {"server": self.name, "transport": self.transport}
        if self.command is not None:
            out["command"] = self.command
            out["args"] = list(self.args)
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.env:
            out["env"] = dict(self.env)
        if self.url is not None:
            out["url"] = self.url
        if self.headers:
            out["headers"] = dict(self.headers)
        return out

    def fingerprint(self) -> str:
        """A digest of :meth:`shown` (an approval covers exactly this definition)."""
        return hashlib.sha256(json.dumps(self.shown(), sort_keys=True).encode()).hexdigest()

    def secrets(self) -> tuple[str, ...]:
        """Values given to the server that must never reach the model: its headers, its
        secret-looking environment variables."""
        values = [v for _k, v in self.headers]
        values += [v for k, v in self.env if secret_name(k)]
        return tuple(v for v in values if len(v) >= MIN_ENV_SECRET)


@dataclass(frozen=True)
class BadDef:
    """A definition that cannot be used, listed with why."""

    name: str
    source: Source
    origin: str
    reason: str


Definition = ServerDef | BadDef


# ------------------------------------------------------------------------------ names


def sanitize(name: str, limit: int = MAX_SERVER_NAME) -> str:
    """``name`` in ``[A-Za-z0-9_-]`` (a server's has no ``__``, which ends it in a tool's name)."""
    clean = re.sub(r"_{2,}", "_", _UNSAFE.sub("_", name)).strip("_")
    return clean[:limit] or "server"


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, at most :data:`MAX_TOOL_NAME` characters (a long tool name is
    cut and given a digest of the original, so two long names never collide)."""
    clean = _UNSAFE.sub("_", tool) or "tool"
    name = f"{PREFIX}{server}__{clean}"
    if len(name) <= MAX_TOOL_NAME and clean == tool:
        return name
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    head = f"{PREFIX}{server}__"
    return head + clean[: MAX_TOOL_NAME - len(head) - 9] + "_" + digest


def server_pattern(server: str) -> str:
    """The rule and policy name covering every tool of ``server``."""
    return f"{PREFIX}{server}__*"


def is_mcp_name(name: str) -> bool:
    return name.startswith(PREFIX)


def pattern_server(pattern: str) -> str | None:
    """The server of ``mcp__<server>__*``; None if ``pattern`` is not one."""
    if pattern.startswith(PREFIX) and pattern.endswith("__*"):
        server = pattern[len(PREFIX) : -3]
        if server and sanitize(server) == server:
            return server
    return None


def covers(pattern: str, name: str) -> bool:
    """Whether a tool name or ``mcp__<server>__*`` pattern covers tool ``name``."""
    if pattern == name:
        return True
    server = pattern_server(pattern)
    return server is not None and name.startswith(f"{PREFIX}{server}__")


def server_of(name: str) -> str | None:
    """The server part of an ``mcp__<server>__<tool>`` name."""
    if not name.startswith(PREFIX):
        return None
    server, sep, _tool = name[len(PREFIX) :].partition("__")
    return server if sep and server else None


# ------------------------------------------------------------------------------ reading


def loads_jsonc(text: str) -> Any:
    """JSON with ``//`` and ``/* */`` comments and trailing commas (VS Code's settings files)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", "".join(out)))


def read_file(path: Path, *, inside: Path | None = None) -> Any:
    """The JSON of a definitions file; DefinitionError saying what is wrong. ``inside``: the
    folder the file must really be in (a symlink out of it is refused)."""
    if inside is not None:
        real, root = os.path.realpath(path), os.path.realpath(inside)
        if os.path.commonpath([real, root]) != root:
            raise DefinitionError(f"{path} leads outside the folder (a symlink to {real}); it is not read")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise DefinitionError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise DefinitionError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB; it is not read")
    try:
        return loads_jsonc(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise DefinitionError(f"{path} is not valid JSON ({exc}); fix it") from None


@dataclass
class _Context:
    source: Source
    origin: str
    folder: str | None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)


def _expand(value: str, ctx: _Context, where: str) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "workspaceFolder" and ctx.folder is not None:
            return ctx.folder
        if name == "userHome":
            return str(Path.home())
        if name.startswith("env:") and ctx.source != "workspace":
            return ctx.environ.get(name[4:], "")
        if name.startswith("env:"):
            raise DefinitionError(f"{where} uses ${{{name}}}: a workspace's definition cannot read your environment")
        raise DefinitionError(
            f"{where} uses ${{{name}}}, which cody-lsp cannot fill in "
            "(it knows ${workspaceFolder}, ${userHome} and ${env:NAME})"
        )

    return _VARIABLE.sub(one, value)


def _string(value: Any, ctx: _Context, where: str) -> str:
    if not isinstance(value, str):
        raise DefinitionError(f"{where} must be a string")
    if len(value) > MAX_STRING or "\0" in value:
        raise DefinitionError(f"{where} is longer than {MAX_STRING} characters or holds a NUL character")
    return _expand(value, ctx, where)


def _pairs(value: Any, ctx: _Context, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, list):  # ACP: [{name, value}]
        try:
            value = {item["name"]: item["value"] for item in value}
        except (TypeError, KeyError):
            raise DefinitionError(f"{where} must be an object (or a list of {{name, value}})") from None
    if not isinstance(value, dict):
        raise DefinitionError(f"{where} must be an object of strings")
    pairs = []
    for key, item in value.items():
        if not key or "=" in key or "\0" in key:
            raise DefinitionError(f"{where} has a name that cannot be used: {key!r}")
        pairs.append((key, _string(item, ctx, f"{where}.{key}")))
    return tuple(pairs)


def _one(name: str, raw: Any, ctx: _Context) -> ServerDef | None:
    where = f"server {name!r}"
    if not isinstance(raw, dict):
        raise DefinitionError(f"{where} must be an object with a command or a url")
    if raw.get("disabled") is True or raw.get("enabled") is False:
        return None
    kind = raw.get("type", raw.get("transport"))
    url = raw.get("url")
    command = raw.get("command")
    if kind in ("streamable-http", "streamableHttp"):
        kind = "http"
    if kind is None:
        kind = "stdio" if command is not None or url is None else "http"
    if kind not in ("stdio", "http", "sse"):
        raise DefinitionError(f"{where} has type {kind!r}; use stdio, http or sse")
    if kind == "stdio":
        if command is None:
            raise DefinitionError(f"{where} has no command (a stdio server needs one; an HTTP server needs a url)")
        args = raw.get("args") or []
        if not isinstance(args, list) or len(args) > MAX_ARGS:
            raise DefinitionError(f"{where}: args must be a list of at most {MAX_ARGS} strings")
        cwd = raw.get("cwd")
        cwd_text = _string(cwd, ctx, f"{where}.cwd") if cwd is not None else None
        if ctx.folder is not None and ctx.source == "workspace":
            cwd_text = os.path.join(ctx.folder, cwd_text or ".")
        command_text = _string(command, ctx, f"{where}.command")
        if not command_text.strip():
            raise DefinitionError(f"{where} has an empty command")
        return ServerDef(
            name,
            ctx.source,
            ctx.origin,
            "stdio",
            command=command_text,
            args=tuple(_string(a, ctx, f"{where}.args[{i}]") for i, a in enumerate(args)),
            env=_pairs(raw.get("env"), ctx, f"{where}.env"),
            cwd=os.path.normpath(cwd_text) if cwd_text is not None else None,
        )
    if url is None:
        raise DefinitionError(f"{where} has type {kind} but no url")
    url_text = _string(url, ctx, f"{where}.url")
    if not re.match(r"https?://[^/\s]+", url_text):
        raise DefinitionError(f"{where}.url must be an http(s) URL, e.g. http://127.0.0.1:3001/mcp")
    headers = _pairs(raw.get("headers"), ctx, f"{where}.headers")
    transport: Transport = "sse" if kind == "sse" else "http"
    return ServerDef(name, ctx.source, ctx.origin, transport, url=url_text, headers=headers)


def parse(
    raw: Any,
    source: Source,
    origin: str,
    *,
    folder: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Definition]:
    """The definitions of one file or setting: ``{"mcpServers": {…}}``, ``{"servers": {…}}``,
    or the ``{name: definition}`` object itself (the editor's setting)."""
    ctx = _Context(source, origin, folder, os.environ if environ is None else environ)
    if isinstance(raw, dict) and isinstance(raw.get("mcpServers", raw.get("servers")), dict):
        raw = raw.get("mcpServers", raw.get("servers"))
    elif isinstance(raw, dict) and ("mcpServers" in raw or "servers" in raw):
        return [BadDef(origin, source, origin, "'mcpServers' (or 'servers') must be an object of servers")]
    if not isinstance(raw, dict):
        return [BadDef(origin, source, origin, 'the MCP servers must be an object: {"mcpServers": {name: {…}}}')]
    out: list[Definition] = []
    seen: dict[str, str] = {}
    for original, value in list(raw.items())[:MAX_SERVERS]:
        name = sanitize(str(original))
        if name in seen:
            out.append(BadDef(str(original), source, origin, f"its name is the same as {seen[name]!r}'s"))
            continue
        seen[name] = str(original)
        try:
            definition = _one(name, value, ctx)
        except DefinitionError as exc:
            out.append(BadDef(name, source, origin, f"{exc} ({origin})"))
            continue
        if definition is not None:
            out.append(definition)
    if len(raw) > MAX_SERVERS:
        out.append(BadDef(origin, source, origin, f"only the first {MAX_SERVERS} servers are used"))
    return out


def from_acp(servers: Iterable[Any], folder: str | None = None) -> list[Definition]:
    """ACP's ``session/new {mcpServers: [{name, command, args, env: [{name, value}]} |
    {type: "http" | "sse", name, url, headers: [{name, value}]}]}``."""
    table: dict[str, Any] = {}
    bad: list[Definition] = []
    for item in servers:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            table[item["name"]] = {k: v for k, v in item.items() if k != "name"}
        else:
            bad.append(BadDef("?", "acp", "session/new", "an MCP server of session/new has no name"))
    return [*parse(table, "acp", "session/new", folder=folder), *bad]


def user_file() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "cody-lsp" / "mcp.json"


def _from_file(path: Path, source: Source, folder: str | None, inside: Path | None = None) -> list[Definition]:
    try:
        raw = read_file(path, inside=inside)
    except DefinitionError as exc:
        return [BadDef(str(path), source, str(path), str(exc))]
    return parse(raw, source, str(path), folder=folder)


def environment_definitions(folder: str | None) -> list[Definition]:
    """``CODY_MCP_CONFIG`` (a file, or JSON text), then the user's file."""
    out: list[Definition] = []
    value = os.environ.get(CONFIG_VARIABLE, "").strip()
    if value.startswith("{"):
        try:
            out += parse(loads_jsonc(value), "env", CONFIG_VARIABLE, folder=folder)
        except ValueError as exc:
            out.append(BadDef(CONFIG_VARIABLE, "env", CONFIG_VARIABLE, f"{CONFIG_VARIABLE} is not valid JSON ({exc})"))
    elif value:
        out += _from_file(Path(value).expanduser(), "env", folder)
    path = user_file()
    if path.exists():
        out += _from_file(path, "user", folder)
    return out


def workspace_definitions(folder: str) -> list[Definition]:
    """The folder's ``.cody/mcp.json`` and ``.vscode/mcp.json`` (absent files: nothing)."""
    out: list[Definition] = []
    for relative in WORKSPACE_FILES:
        path = Path(folder) / relative
        if os.path.lexists(path):
            out += _from_file(path, "workspace", folder, inside=Path(folder))
    return out


def merge(*groups: Iterable[Definition]) -> list[Definition]:
    """The definitions in effect: the first of each name wins (groups in precedence order)."""
    out: dict[str, Definition] = {}
    for group in groups:
        for definition in group:
            out.setdefault(definition.name, definition)
    return list(out.values())
