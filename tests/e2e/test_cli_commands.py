"""`cody-lsp` itself: its commands and help, and how the server starts (stdio, --tcp)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from cody_lsp import __version__
from cody_lsp.client import CodyClient

from ..conftest import server_env
from .cli_support import cody

COMMANDS = ("serve", "acp", "chat", "run", "sessions", "demo", "config")


def cody_lsp(*args: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(
        [sys.executable, "-m", "cody_lsp", *args], env=env, capture_output=True, text=True, timeout=30, **kwargs
    )


def test_help_lists_every_command_with_a_description():
    done = cody_lsp("--help")
    assert done.returncode == 0 and done.stderr == ""
    for name in COMMANDS:
        line = next((line for line in done.stdout.splitlines() if line.split()[:1] == [name]), None)
        assert line is not None and len(line.split()) > 3, f"{name} is not listed with a description"
    assert "--version" in done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_its_help(command: str):
    done = cody_lsp(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: cody-lsp {command}")


def test_version():
    done = cody_lsp("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"cody-lsp {__version__}"


def test_a_typo_names_the_commands():
    done = cody_lsp("chta")
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.strip()
        == "cody-lsp: unknown command 'chta'; try: serve, acp, chat, run, sessions, demo, config, mcp (cody-lsp --help)"
    )


def test_sessions_with_an_unknown_action_says_so():
    done = cody_lsp("sessions", "remove", "ses_x")
    assert done.returncode == 2 and "unknown action 'remove'; try: list, rm, rename" in done.stderr


def test_choosing_a_command_imports_nothing_heavy():
    """Cold start: the command line is parsed before rich, pygls or openai are imported."""
    code = (
        "import sys\n"
        "from cody_lsp import cli\n"
        "try:\n"
        "    cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('rich', 'pygls', 'lsprotocol', 'openai', 'aiohttp') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------ serve


def test_stdin_at_its_end_exits_cleanly(tmp_path: Path):
    env = server_env(None, tmp_path / "db.sqlite")
    with open(os.devnull, "rb") as null:
        done = cody_lsp(env=env, stdin=null)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    done = cody_lsp(env=env, input="")  # an empty pipe
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_a_terminal_is_told_what_the_server_is(tmp_path: Path):
    child = pexpect.spawn(
        sys.executable,
        ["-m", "cody_lsp"],
        env=server_env(None, tmp_path / "db.sqlite"),
        encoding="utf-8",
        timeout=20,
    )
    try:
        child.expect_exact("cody-lsp chat")
        assert "serving the cody protocol" in child.before and "stdin/stdout" in child.before
        child.sendeof()  # Ctrl+D: the end of the server's input
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    finally:
        child.terminate(force=True)


@pytest.mark.parametrize("address", ["abc", "127.0.0.1:http", "127.0.0.1:70000", ""])
def test_a_bad_tcp_address_is_one_line(address: str):
    done = cody_lsp("--tcp", address) if address else cody_lsp("serve", "--tcp=")
    if not address:  # an empty --tcp means stdio, as before
        assert done.returncode == 0 and done.stderr == ""
        return
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "HOST:PORT" in done.stderr and "Traceback" not in done.stderr


async def test_tcp_says_where_it_listens_and_a_busy_port_is_one_line(provider, db_path: Path, workspace: Path):
    env = server_env(provider, db_path)
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cody_lsp",
        "--tcp",
        "127.0.0.1:0",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stderr is not None
        line = (await asyncio.wait_for(server.stderr.readline(), 20)).decode()
        match = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", line)
        assert match, line
        port = int(match.group(1))
        # It does listen there, at once; a second server cannot take the port meanwhile.
        client = await CodyClient.connect_tcp("127.0.0.1", port, workspace_folders=[workspace])
        try:
            assert (await client.list_sessions()).sessions == []
            code, out, err = await cody(["--tcp", f"127.0.0.1:{port}"], env, workspace)
            assert code == 2 and out == ""
            assert err == f"cody-lsp: cannot listen on 127.0.0.1:{port}: Address already in use\n"
        finally:
            await client.close()
    finally:
        if server.returncode is None:
            server.kill()
        await server.wait()


def test_a_port_in_use_by_another_program_is_one_line(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cody_lsp("serve", "--tcp", f"127.0.0.1:{port}", env=server_env(None, tmp_path / "db.sqlite"))
    assert done.returncode == 2
    assert done.stderr == f"cody-lsp: cannot listen on 127.0.0.1:{port}: Address already in use\n"


# ------------------------------------------------------------ settings, checked first


def test_a_base_url_without_a_scheme_is_a_setting_error_at_once(tmp_path: Path):
    env = server_env(None, tmp_path / "db.sqlite")
    env.update(CODY_MODEL="m", CODY_MODEL_BASE_URL="localhost:8000/v1", CODY_MODEL_API_KEY="k")
    done = cody_lsp("run", "hi", env=env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "CODY_MODEL_BASE_URL='localhost:8000/v1' is not an http(s) URL" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "db.sqlite").exists()  # nothing was started


# -------------------------------------------------------------- scripted provider


def test_provider_help_documents_the_script_format():
    done = subprocess.run(
        [sys.executable, "-m", "cody_lsp.testing.provider", "--help"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0
    for key in ("text_deltas", "tool_calls", "fault", "Example"):
        assert key in done.stdout


@pytest.mark.parametrize(
    "script, reason",
    [
        ('[{"text": "hi"', "Expecting"),
        ('{"text": "hi"}', "a JSON list of reply objects"),
        ('[{"text": "hi"}, {"txt": "x"}]', "reply 2: Reply: unknown key(s) ['txt']"),
        ('[{"fault": {"kind": "boom"}}]', "Fault.kind must be one of"),
    ],
)
def test_a_bad_provider_script_is_one_line(tmp_path: Path, script: str, reason: str):
    path = tmp_path / "replies.json"
    path.write_text(script)
    done = subprocess.run(
        [sys.executable, "-m", "cody_lsp.testing.provider", "--script", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and reason in done.stderr and str(path) in done.stderr


@pytest.mark.parametrize("command", [["chat"], ["run", "hello"], ["sessions"], ["serve"], ["demo", "demo-dir"]])
def test_ctrl_c_while_a_command_starts_prints_no_traceback(tmp_path: Path, command: list[str]):
    """Ctrl+C in the first fraction of a second, at several moments of the start (the modules
    loading, the server starting): the command ends or carries on, never with a traceback.
    (Before the interpreter has loaded cody_lsp nothing of ours runs: such a traceback, in
    Python's own start-up, is not counted.)"""
    env = server_env(None, tmp_path / "db.sqlite", CODY_MODEL="m", CODY_MODEL_BASE_URL="http://127.0.0.1:9/v1")
    env.update(CODY_MODEL_API_KEY="k", TERM="dumb", XDG_STATE_HOME=str(tmp_path))
    for delay in (0.1, 0.2, 0.3, 0.45, 0.7):
        child = pexpect.spawn(
            sys.executable, ["-m", "cody_lsp", *command], env=env, cwd=str(tmp_path), encoding="utf-8", timeout=10
        )
        try:
            time.sleep(delay)
            child.sendintr()
            # A traceback comes at once (the interrupt unwinds the start, which then ends); a
            # command that carries on is given 1.5 s more to show one.
            child.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=1.5)
            out = child.before
        finally:
            child.terminate(force=True)
        if "Traceback" in out:  # only Python's own start-up, before any module of the package ran
            assert f"{os.sep}cody_lsp{os.sep}" not in out.split("Traceback", 1)[1], f"after {delay}s:\n{out}"
