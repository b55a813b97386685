"""`cody-lsp config`: the effective settings and where each comes from.

Each setting is given by the environment (`CODY_*`), else by the configuration file
(`$XDG_CONFIG_HOME/cody-lsp/config.toml`, config_file.py), else it has its default. The API
key is never shown: only where it comes from and its length. The key's file is checked and its
command run, as `chat` and `run` would, so a mistake shows here first. (In an editor, its
`cody.*` settings win over all of these, per folder.)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import config_file
from ..config import ModelConfig, db_path
from .langservers import language_server_rows
from .render import make_console, print_table

SOURCE_WORDS = {"env": "environment", "file": "config file", "default": "default"}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cody-lsp config",
        description="Show the effective settings and where each comes from: the environment (CODY_*), the "
        "configuration file ($XDG_CONFIG_HOME/cody-lsp/config.toml), or the default. The environment wins over "
        "the file; an editor's cody.* settings win over both. The API key is never shown.",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    parse_args(argv[1:])
    console = make_console()
    from_env = {variable for variable in (*config_file.SETTINGS, config_file.KEY_VARIABLE) if _set(variable)}
    applied = config_file.apply()
    if applied.problem is None:
        applied = config_file.apply_key()
    path = applied.file.path
    found = "found" if applied.file.exists else "not found: every setting below is the environment's or the default"
    console.print(f"configuration file: {path} ({found})", soft_wrap=True, markup=False)
    if applied.problem is not None:  # what to fix first, then the settings as they are without it
        console.print(f"✗ {applied.problem}", style="red", soft_wrap=True, markup=False)
        file = applied.file
        if not file.values and file.key_command is None and file.key_file is None:  # it could not be read
            console.print("the file is not used until it is fixed: below are the environment's and the defaults")
    rows = []
    for variable, default in config_file.SETTINGS.items():
        if variable in from_env:
            value, source = os.environ[variable], f"environment ({variable})"
        elif variable in applied.set_from_file:
            value, source = os.environ[variable], "config file"
        elif variable == "CODY_DB":
            value, source = str(db_path()), "default"
        else:
            value, source = default, "default"
        rows.append([config_file.file_key(variable), value, source])
    rows.insert(2, ["api key", *_key(from_env, applied)])
    print_table(console, ["setting", "value", "from"], rows)
    servers, problems = language_server_rows(Path.cwd())
    if servers:
        console.print(
            "language servers (code_nav; `/lsp` in the chat shows their state):", soft_wrap=True, markup=False
        )
        print_table(console, ["server", "command", "files", "from"], servers)
    for wrong in problems:
        console.print(f"✗ {wrong}", style="red", soft_wrap=True, markup=False)
    if applied.problem is not None:
        return 1
    problem = ModelConfig.from_env().problem()
    if problem is not None:
        console.print(f"runs cannot reach a model yet: {problem}", style="yellow", soft_wrap=True, markup=False)
    return 0


def _set(variable: str) -> bool:
    return config_file.is_set(os.environ, variable)


def _key(from_env: set[str], applied: config_file.Applied) -> list[str]:
    """The key's row: never the key, only its length and where it comes from."""
    key = os.environ.get(config_file.KEY_VARIABLE, "").strip()
    hidden = f"(hidden, {len(key)} characters)" if key else "(not set)"
    if config_file.KEY_VARIABLE in from_env:
        return [hidden, f"environment ({config_file.KEY_VARIABLE})"]
    if applied.key_source == "api_key_file":
        return [hidden, f"api_key_file {applied.file.key_file}"]
    if applied.key_source == "api_key_command":
        return [hidden, f"api_key_command `{applied.file.key_command}`"]
    return [hidden, "—"]
