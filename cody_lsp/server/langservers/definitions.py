"""Language server definitions: the user's configuration file and a workspace's `.cody/config.toml`.

    [language_servers.pylsp]
    command = ["pylsp"]                       # the program and its arguments (run in the folder)
    extensions = [".py", ".pyi"]              # the files it answers for
    initialization_options = { plugins = {} } # optional: `initializationOptions` of its initialize
    language_id = "python"                    # optional: the languageId of its documents

The user's own (`$XDG_CONFIG_HOME/cody-lsp/config.toml`, source `user`) come first; a workspace's
(`.cody/config.toml` in the folder, source `workspace`: a program chosen by whoever wrote the
repository) are used only once the user approved that exact definition (core/code_nav.py), and never
replace a user's of the same name. A definition that cannot be used is kept as a `BadDef`, listed with
why, never started. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Source = Literal["user", "workspace"]

TABLE = "language_servers"
WORKSPACE_FILE = ".cody/config.toml"
MAX_FILE_BYTES = 1 << 20
MAX_SERVERS = 32  # per source
MAX_STRING = 4096
MAX_ARGS = 64
MAX_EXTENSIONS = 64
_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_EXTENSION = re.compile(r"\.[A-Za-z0-9_+-]{1,16}")

# languageId by extension (LSP's list), when the definition gives none.
LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".lua": "lua",
    ".sh": "shellscript",
    ".swift": "swift",
    ".scala": "scala",
    ".zig": "zig",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".vue": "vue",
    ".svelte": "svelte",
}


class DefinitionError(ValueError):
    """A definition that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class LanguageServerDef:
    name: str
    source: Source
    origin: str  # the file it was read from
    command: tuple[str, ...]
    extensions: tuple[str, ...]  # lower case, with their dot
    initialization_options: str = "null"  # JSON
    language_id: str | None = None

    def fingerprint(self) -> str:
        """What the user approves: the command, the file types, the options (a change is asked again)."""
        shown = json.dumps(self.shown(), sort_keys=True)
        return hashlib.sha256(shown.encode()).hexdigest()

    def shown(self) -> dict[str, Any]:
        """The definition as the user approves it."""
        out: dict[str, Any] = {"server": self.name, "command": list(self.command), "extensions": list(self.extensions)}
        options = json.loads(self.initialization_options)
        if options is not None:
            out["initializationOptions"] = options
        if self.language_id is not None:
            out["languageId"] = self.language_id
        return out

    def answers(self, path: str | None) -> bool:
        """Whether it is for this file (by its extension)."""
        return path is not None and os.path.splitext(path)[1].lower() in self.extensions

    def language_of(self, path: str) -> str:
        if self.language_id is not None:
            return self.language_id
        extension = os.path.splitext(path)[1].lower()
        return LANGUAGE_IDS.get(extension, extension.lstrip(".") or "plaintext")


@dataclass(frozen=True)
class BadDef:
    name: str
    source: Source
    reason: str
    command: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


Definition = LanguageServerDef | BadDef


def _strings(value: Any, what: str, limit: int) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise DefinitionError(f"'{what}' must be a non-empty list of non-empty strings")
    if len(value) > limit or any(len(v) > MAX_STRING or "\0" in v for v in value):
        raise DefinitionError(f"'{what}' is too long (at most {limit} items of {MAX_STRING} characters)")
    return tuple(value)


def _json_ready(value: Any, where: str) -> Any:
    """TOML's value as JSON (its dates and times are not JSON)."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v, where) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise DefinitionError(f"'{where}' holds a {type(value).__name__}, which JSON cannot say")


def parse_one(name: str, raw: Any, source: Source, origin: str) -> Definition:
    """One `[language_servers.NAME]` table."""
    if not _NAME.fullmatch(name):
        return BadDef(name[:40], source, "its name must be 1 to 32 letters, digits, '_' or '-'")
    try:
        if not isinstance(raw, dict):
            raise DefinitionError("must be a table: command = [...], extensions = [...]")
        unknown = sorted(set(raw) - {"command", "extensions", "initialization_options", "language_id"})
        if unknown:
            raise DefinitionError(
                f"unknown key {unknown[0]!r} (the keys are command, extensions, initialization_options, language_id)"
            )
        command = _strings(raw.get("command"), "command", MAX_ARGS)
        extensions = tuple(
            dict.fromkeys(
                e.lower() if e.startswith(".") else "." + e.lower()
                for e in _strings(raw.get("extensions"), "extensions", MAX_EXTENSIONS)
            )
        )
        bad = [e for e in extensions if not _EXTENSION.fullmatch(e)]
        if bad:
            raise DefinitionError(f"'extensions' has {bad[0]!r}, which is not a file extension like \".py\"")
        options = raw.get("initialization_options")
        if options is not None and not isinstance(options, dict):
            raise DefinitionError("'initialization_options' must be a table")
        language_id = raw.get("language_id")
        if language_id is not None and (not isinstance(language_id, str) or not 0 < len(language_id) <= 64):
            raise DefinitionError("'language_id' must be a short string, e.g. \"python\"")
        return LanguageServerDef(
            name,
            source,
            origin,
            command,
            extensions,
            json.dumps(_json_ready(options, "initialization_options")),
            language_id,
        )
    except DefinitionError as exc:
        command = (
            tuple(raw.get("command") or ()) if isinstance(raw, dict) and isinstance(raw.get("command"), list) else ()
        )
        return BadDef(
            name, source, f"{origin}: [language_servers.{name}] {exc}", tuple(str(c) for c in command[:MAX_ARGS])
        )


def parse_table(table: Any, source: Source, origin: str) -> list[Definition]:
    if table is None:
        return []
    if not isinstance(table, dict):
        return [BadDef("language_servers", source, f"{origin}: 'language_servers' must be a table of tables")]
    found = [parse_one(str(name), raw, source, origin) for name, raw in list(table.items())[:MAX_SERVERS]]
    return found


def _read_toml(data: bytes, origin: str, source: Source) -> list[Definition]:
    import tomllib

    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return [BadDef("language_servers", source, f"{origin}: not valid TOML: {exc}")]
    return parse_table(table.get(TABLE), source, origin)


def user_definitions(config_file: Path) -> list[Definition]:
    """The user's configuration file's `[language_servers.*]` (none when there is no file)."""
    try:
        with open(config_file, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [BadDef("language_servers", "user", f"{config_file}: cannot be read: {exc.strerror or exc}")]
    if len(data) > MAX_FILE_BYTES:
        return [BadDef("language_servers", "user", f"{config_file}: larger than {MAX_FILE_BYTES >> 20} MiB")]
    return _read_toml(data, str(config_file), "user")


def workspace_definitions(folder: str) -> list[Definition]:
    """The folder's `.cody/config.toml` `[language_servers.*]`, read without following a symlink out of it."""
    path = os.path.join(folder, WORKSPACE_FILE)
    try:
        dir_fd = os.open(os.path.join(folder, ".cody"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        fd = os.open("config.toml", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return []
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        import stat

        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return []
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return [BadDef("language_servers", "workspace", f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")]
    return _read_toml(data, path, "workspace")


def definitions_for(folder: str, config_file: Path) -> list[Definition]:
    """The definitions in effect for a folder: the user's, then the workspace's whose names the user's do not take."""
    found = user_definitions(config_file)
    names = {d.name for d in found}
    found += [d for d in workspace_definitions(folder) if d.name not in names]
    return found
