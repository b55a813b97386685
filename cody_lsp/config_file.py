"""The user's configuration file: `$XDG_CONFIG_HOME/cody-lsp/config.toml` (default `~/.config`).

So that a user does not export the model settings in every shell: the file gives the model,
the endpoint, where the API key comes from, and defaults for the other settings. Each key is
a `CODY_*` variable's name without `CODY_`, in lower case (`max_steps` is `CODY_MAX_STEPS`;
`base_url` is `CODY_MODEL_BASE_URL`):

    model = "gpt-4.1"
    base_url = "https://api.openai.com/v1"
    api_key_command = "pass show openai"      # or: api_key_file = "~/.config/cody-lsp/key"
    approvals = "ask"
    tool_policy = { run_command = "ask", write_file = "allow" }

Precedence: a variable set in the environment wins over the file, the file over the default
(and in an editor, its `cody.*` settings win over both: protocol.md). The API key itself is
never written in the file: `api_key_file` names a file only its owner can read (refused
otherwise), `api_key_command` a command whose output is the key — a secret, never logged nor
shown. `apply` puts what the file gives into the environment of the process, so the server a
client command starts gets it too (and does not run the key command again). Stdlib only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from .config import (
    CHECKPOINT_VARIABLES,
    CODE_NAV_VARIABLES,
    EDITOR_CONTEXT_VARIABLES,
    LIMIT_VARIABLES,
    TOOL_LIMIT_VARIABLES,
    CheckpointSettings,
    CodeNavSettings,
    EditorContext,
    Limits,
    ToolLimits,
    file_problem,
    record_file_problem,
)

KEY_VARIABLE = "CODY_MODEL_API_KEY"
KEY_COMMAND_TIMEOUT = 30.0  # seconds (a command may ask the user to unlock a keyring)
MAX_KEY_BYTES = 16 * 1024


def _limit_defaults() -> dict[str, str]:
    out = {}
    for variables, limits in (
        (LIMIT_VARIABLES, Limits()),
        (TOOL_LIMIT_VARIABLES, ToolLimits()),
        (CHECKPOINT_VARIABLES, CheckpointSettings()),
        (EDITOR_CONTEXT_VARIABLES, EditorContext()),
        (CODE_NAV_VARIABLES, CodeNavSettings()),
    ):
        for variable, name in variables:
            value = getattr(limits, name)
            out[variable] = f"{value:g}" if isinstance(value, float) else str(value)
    return out


# The settings the file may give: variable → its default as `cody-lsp config` shows it.
SETTINGS: dict[str, str] = {
    "CODY_MODEL": "(none)",
    "CODY_MODEL_BASE_URL": "(none)",
    "CODY_DB": "$XDG_STATE_HOME/cody-lsp/sessions.db",
    "CODY_APPROVALS": "auto",
    "CODY_TOOL_POLICY": "(each tool's own)",
    "CODY_SANDBOX_NETWORK": "block",
    "CODY_SANDBOX_PROTECT": "(none: only the built-in paths)",
    **_limit_defaults(),
    "CODY_CONTEXT_WINDOW": "(the model's)",
    "CODY_OUTPUT_RESERVE": "(the model's)",
    "CODY_INSTRUCTIONS": "on",
    "CODY_INSTRUCTIONS_MAX_BYTES": "32768",
    "CODY_HOOKS": "on",
    "CODY_HOOKS_FILES": "(none)",
    "CODY_SKILLS": "on",
    "CODY_SKILLS_MAX_BYTES": "16384",
    "CODY_ALLOW_VCS_WRITES": "0",
    "CODY_TEXT_FLUSH_MS": "18",
    "CODY_MAX_QUEUED": "100",
    "CODY_PASS_ENV": "(none)",
    "CODY_MCP_CONFIG": "(none)",
    "CODY_WEB": "on",
    "CODY_WEB_FETCH_MAX_BYTES": "100000",
    "CODY_WEB_FETCH_MAX_DOWNLOAD_BYTES": "10485760",
    "CODY_WEB_FETCH_TIMEOUT_SECONDS": "30",
    "CODY_WEB_ALLOW_PRIVATE_HOSTS": "(none)",
    "CODY_MAX_BACKGROUND_COMMANDS": "8",
    "CODY_LOG_LEVEL": "WARNING",
    "CODY_MODEL_PRICE": "(none)",
}
KEY_SOURCES = ("api_key_command", "api_key_file")
LIST_KEYS = (
    "sandbox_protect",
    "web_allow_private_hosts",
)  # may be a list of strings in the file (a comma-separated string too)
# Tables of the file that are not variables: read where they are used (`language_servers`:
# server/langservers/definitions.py; `cody-lsp config` lists them).
TABLES = ("language_servers",)


def file_key(variable: str) -> str:
    """A variable's key in the file: CODY_MAX_STEPS → max_steps, CODY_MODEL_BASE_URL → base_url."""
    return "base_url" if variable == "CODY_MODEL_BASE_URL" else variable.removeprefix("CODY_").lower()


FILE_KEYS = {file_key(variable): variable for variable in SETTINGS}


class ConfigFileError(ValueError):
    """What is wrong with the file or the key it points to; the message says what to fix."""


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "cody-lsp" / "config.toml"


@dataclass
class FileSettings:
    """What the file says (empty when there is no file)."""

    path: Path
    exists: bool = False
    values: dict[str, str] = field(default_factory=dict)  # variable → value
    key_command: str | None = None
    key_file: Path | None = None


def _value(key: str, raw: object, path: Path) -> str:
    if isinstance(raw, bool):
        return "1" if raw else "0"
    if isinstance(raw, int | float | str):
        return str(raw)
    if key == "tool_policy" and isinstance(raw, dict) and all(isinstance(v, str) for v in raw.values()):
        return ",".join(f"{tool}={value}" for tool, value in raw.items())
    if key == "hooks_files" and isinstance(raw, list) and all(isinstance(v, str) and ":" not in v for v in raw):
        return ":".join(raw)  # CODY_HOOKS_FILES: paths separated by `:`
    if key in LIST_KEYS and isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return ",".join(raw)
    if key in LIST_KEYS:
        raise ConfigFileError(f"{path}: '{key}' must be a list of strings (or one comma-separated string)")
    raise ConfigFileError(f"{path}: '{key}' must be a string, a number or true/false, not {type(raw).__name__}")


def read(environ: Mapping[str, str] = os.environ) -> FileSettings:
    """The file's settings; ConfigFileError naming the file (and the line) when it is wrong."""
    path = config_path(environ)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return FileSettings(path)
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    import tomllib

    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
    settings = FileSettings(path, exists=True)
    for key, raw in table.items():
        if key in ("api_key", "key", "model_api_key"):
            raise ConfigFileError(
                f"{path}: the API key is not kept in the configuration file: give api_key_file (a file only you "
                "can read) or api_key_command (a command that prints the key)"
            )
        if key in KEY_SOURCES:
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigFileError(f"{path}: '{key}' must be a non-empty string")
            if key == "api_key_command":
                settings.key_command = raw
            else:
                file = Path(raw).expanduser()
                settings.key_file = file if file.is_absolute() else path.parent / file
            continue
        if key in TABLES:
            continue
        variable = FILE_KEYS.get(key)
        if variable is None:
            raise ConfigFileError(f"{path}: unknown setting '{key}'{_did_you_mean(key)}")
        settings.values[variable] = _value(key, raw, path)
    if settings.key_command is not None and settings.key_file is not None:
        raise ConfigFileError(f"{path}: give api_key_command or api_key_file, not both")
    return settings


def _did_you_mean(key: str) -> str:
    """The setting a misspelled key is closest to, if one is close (`baseurl`: base_url)."""
    import difflib

    known = [*FILE_KEYS, *KEY_SOURCES, *TABLES]
    folded = {name.replace("_", "").replace("-", ""): name for name in known}
    squashed = key.lower().replace("_", "").replace("-", "")
    close = [folded[squashed]] if squashed in folded else difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    if close:
        return f": did you mean {close[0]}?"
    return " (`cody-lsp config` lists the settings)"


def read_key_file(file: Path) -> str:
    """The key in `file`, which only its owner may read."""
    try:
        info = file.stat()
    except OSError as exc:
        raise ConfigFileError(f"api_key_file {file}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigFileError(f"api_key_file {file} is not a file")
    if info.st_uid != os.getuid():
        raise ConfigFileError(f"api_key_file {file} belongs to another user: it must be yours")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise ConfigFileError(
            f"api_key_file {file} can be read by other users (mode {mode:04o}): it is not used; "
            f"make it yours only with `chmod 600 {file}`"
        )
    try:
        with file.open("rb") as f:
            data = f.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise ConfigFileError(f"api_key_file {file}: {exc.strerror or exc}") from None
    return _one_key(data, f"api_key_file {file}")


def run_key_command(command: str) -> str:
    """The key `command` prints. Its output is a secret: never logged, never in a message."""
    import subprocess

    try:
        done = subprocess.run(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=KEY_COMMAND_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise ConfigFileError(
            f"api_key_command `{command}` did not finish in {KEY_COMMAND_TIMEOUT:g} s (it cannot read from the "
            "terminal: a keyring must be unlocked beforehand)"
        ) from None
    except OSError as exc:
        raise ConfigFileError(f"api_key_command `{command}` could not run: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        output = done.stdout.decode("utf-8", "replace").strip()
        last = said[-1][:200] if said else ""
        if output and output in last:  # never quote what may be the key
            last = ""
        raise ConfigFileError(
            f"api_key_command `{command}` failed (exit code {done.returncode})" + (f": {last}" if last else "")
        )
    return _one_key(done.stdout, f"api_key_command `{command}`")


def _one_key(data: bytes, what: str) -> str:
    if len(data) > MAX_KEY_BYTES:
        raise ConfigFileError(f"{what} gives more than {MAX_KEY_BYTES} bytes: that is not an API key")
    try:
        key = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigFileError(f"{what} gives bytes that are not UTF-8 text") from None
    if not key:
        raise ConfigFileError(f"{what} gives nothing: the key is empty")
    if "\n" in key or "\r" in key:
        raise ConfigFileError(f"{what} gives more than one line: it must print the key alone")
    return key


def is_set(environ: Mapping[str, str], variable: str) -> bool:
    return bool(environ.get(variable, "").strip())


@dataclass
class Applied:
    """What `apply` did: the file, the variables it set, where the key came from, what is wrong."""

    file: FileSettings
    set_from_file: list[str] = field(default_factory=list)
    key_source: str | None = None  # "api_key_command" | "api_key_file" when the file gave the key

    @property
    def problem(self) -> str | None:
        """What is wrong with the file or its key: held in config.py (config.file_problem), whence
        the server reports it on every run."""
        return file_problem()


# The outcome of `apply` in this process.
applied: Applied | None = None


def apply(environ: MutableMapping[str, str] = os.environ) -> Applied:
    """Put the file's settings into `environ` where it does not set them (`apply_key` adds the key)."""
    global applied
    try:
        file = read(environ)
    except ConfigFileError as exc:
        applied = Applied(FileSettings(config_path(environ), exists=True))
        record_file_problem(str(exc))
        return applied
    applied = Applied(file)
    record_file_problem(None)
    for variable, value in file.values.items():
        if not is_set(environ, variable):
            environ[variable] = value
            applied.set_from_file.append(variable)
    return applied


def apply_key(environ: MutableMapping[str, str] = os.environ) -> Applied:
    """The API key from the file's api_key_file or api_key_command, put into `environ`, when the
    environment has none (after `apply`)."""
    result = applied if applied is not None else apply(environ)
    if result.problem is not None or is_set(environ, KEY_VARIABLE):
        return result
    file = result.file
    try:
        if file.key_command is not None:
            environ[KEY_VARIABLE] = run_key_command(file.key_command)
            result.key_source = "api_key_command"
        elif file.key_file is not None:
            environ[KEY_VARIABLE] = read_key_file(file.key_file)
            result.key_source = "api_key_file"
    except ConfigFileError as exc:
        record_file_problem(str(exc))
    return result
