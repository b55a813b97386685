"""run_command's processes, in-process: escapes reaped, the dedicated server's orphan rule,
the guard process, the scrubbed environment. (Through the wire: tests/e2e/test_commands_hardening.py.)"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cody_lsp.server.tools import procs, run_tool, shell


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


def _marker() -> str:
    return f"1000.{secrets.randbelow(10**8):08d}"


def _running(marker: str) -> list[int]:
    """Live processes with ``marker`` as one of their arguments (e.g. `sleep <marker>`)."""
    found = []
    for pid in procs.pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        state = procs.status(pid)
        if marker.encode() in cmdline.split(b"\0") and state is not None and state[0] != "Z":
            found.append(pid)
    return found


def _zombie_children() -> list[int]:
    own = os.getpid()
    return [pid for pid in procs.pids() if (s := procs.status(pid)) is not None and s[1] == own and s[0] == "Z"]


async def test_escaped_processes_are_killed_and_reaped(ws):
    a, b = _marker(), _marker()
    # The command ends only once both have left its process group (their pid files written after
    # setsid): on a loaded machine the group's kill could otherwise take them before they escaped.
    command = (
        f"setsid sh -c 'echo $$ > a.pid; exec sleep {a}' > /dev/null 2>&1 &\n"
        f"( setsid sh -c 'sleep {b} & echo $! > b.pid; exit' > /dev/null 2>&1 & )\n"
        "while [ ! -s a.pid ] || [ ! -s b.pid ]; do sleep 0.01; done"
    )
    r = await run_tool("run_command", {"command": command}, ws)
    assert r.ok and "the command left running" in r.content
    assert _running(a) == [] and _running(b) == []
    assert _zombie_children() == []


async def test_a_command_gets_the_scrubbed_environment(ws, monkeypatch):
    monkeypatch.setenv("FOO_TOKEN", "foo-token-value-0123456789")
    monkeypatch.setenv("CODY_MODEL_API_KEY", "sk-unit-test-key-0123456789")
    monkeypatch.setenv("NPM_TOKEN", "passed-through")
    monkeypatch.setenv("CODY_PASS_ENV", "NPM_TOKEN")
    r = await run_tool("run_command", {"command": "env"}, ws)
    lines = r.content.splitlines()
    assert "NPM_TOKEN=passed-through" in lines and f"HOME={os.environ['HOME']}" in lines
    assert not any(line.startswith(("FOO_TOKEN=", "CODY_MODEL_API_KEY=", "CODY_PASS_ENV=")) for line in lines)
    (marker,) = [line for line in lines if line.startswith("CODY_CMD_ID=")]
    assert marker.startswith(f"CODY_CMD_ID={shell._commands.token}-")


async def test_the_guard_comes_back_if_a_command_kills_it(ws):
    await run_tool("run_command", {"command": "true"}, ws)
    guard = shell._commands.guard
    assert guard is not None and guard.poll() is None
    r = await run_tool("run_command", {"command": f"kill -9 {guard.pid}"}, ws)
    assert r.ok
    m = _marker()
    task = asyncio.create_task(run_tool("run_command", {"command": f"sleep {m}"}, ws))
    for _ in range(200):
        if _running(m):
            break
        await asyncio.sleep(0.02)
    new = shell._commands.guard
    assert new is not None and new.pid != guard.pid and new.poll() is None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await shell.settle(10)
    assert _running(m) == []


async def test_a_cancelled_command_returns_at_once_and_its_escapes_are_ended_after(ws):
    """A cancel does not wait for the /proc sweep: the group is killed when the call returns,
    what left it (setsid) is ended by the sweep that goes on meanwhile, and reaped."""
    a, b = _marker(), _marker()
    task = asyncio.create_task(run_tool("run_command", {"command": f"setsid sleep {a} & sleep {b}"}, ws))
    for _ in range(200):
        if _running(a) and _running(b):
            break
        await asyncio.sleep(0.02)
    assert _running(a) and _running(b)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert shell._commands.ending, "the sweep goes on after the call returned"
    assert await shell.settle(10)
    assert not shell._commands.ending
    assert _running(a) == [] and _running(b) == []
    assert _zombie_children() == []
    guard = shell._commands.guard
    assert guard is not None and guard.poll() is None  # still there for the next command


def test_a_dedicated_server_ends_processes_that_dropped_their_marker(tmp_path):
    """A command may remove CODY_CMD_ID from its environment; in a server that called
    enable_subreaper(), such an orphan is still ended, but a live command's processes are not."""
    a, b, live = _marker(), _marker(), _marker()
    script = textwrap.dedent(
        f"""
        import asyncio, os, sys
        from pathlib import Path
        from cody_lsp.server.tools import run_tool, shell
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_command_processes import _running, _zombie_children

        async def main():
            assert shell.enable_subreaper()
            ws = Path(sys.argv[1])
            other = asyncio.create_task(run_tool("run_command", {{"command": "sleep {live}"}}, ws))
            for _ in range(200):
                if _running("{live}"):
                    break
                await asyncio.sleep(0.02)
            command = (
                "env -u CODY_CMD_ID setsid sleep {a} > /dev/null 2>&1 &\\n"
                "env -u CODY_CMD_ID sh -c '( setsid sh -c \\"sleep {b} & exit\\" > /dev/null 2>&1 & )'"
            )
            r = await run_tool("run_command", {{"command": command}}, ws)
            print("RESULT", r.ok, "the command left running" in r.content)
            print("LEFT", _running("{a}"), _running("{b}"), "LIVE", len(_running("{live}")))
            other.cancel()
            try:
                await other
            except asyncio.CancelledError:
                pass
            await shell.settle()
            print("AFTER", _running("{live}"), "ZOMBIES", _zombie_children())

        asyncio.run(main())
        """
    )
    assert _run_script(script, tmp_path) == ["RESULT True True", "LEFT [] [] LIVE 1", "AFTER [] ZOMBIES []"]


def _run_script(script: str, tmp_path: Path) -> list[str]:
    """Run `script` in a process of its own (it may become a subreaper), with a workspace as its
    argument; the lines it printed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(ws)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_servers_own_helper_processes_are_not_orphans(tmp_path):
    """The checkpoints' git runs as a child of the server (shell.spawn_helper): the sweep of orphans
    at the end of a command, in a server that called enable_subreaper(), leaves it alone."""
    mark = _marker()
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from cody_lsp.server.tools import run_tool, shell

        async def main():
            assert shell.enable_subreaper()
            helper = await shell.spawn_helper("sleep", "{mark}")
            r = await run_tool("run_command", {{"command": "true"}}, Path(sys.argv[1]))
            await asyncio.sleep(0.2)
            print("RESULT", r.ok, "HELPER", helper.returncode)
            helper.kill()
            await helper.wait()
            shell.helper_ended(helper)

        asyncio.run(main())
        """
    )
    assert _run_script(script, tmp_path) == ["RESULT True HELPER None"]


def test_sigkill_of_the_process_leaves_nothing_behind(tmp_path):
    """The guard process ends what the commands left when the process dies without warning."""
    a, b, c = _marker(), _marker(), _marker()
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from cody_lsp.server.tools import run_tool
        command = "setsid sleep {a} > /dev/null 2>&1 &\\n( setsid sh -c 'sleep {b} & sleep {c}' & )\\nsleep {c}"
        asyncio.run(run_tool("run_command", {{"command": command}}, Path(sys.argv[1])))
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    try:
        for _ in range(400):
            if _running(a) and _running(b) and len(_running(c)) == 2:
                break
            time.sleep(0.025)
        assert _running(a) and _running(b)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    for _ in range(400):
        if not (_running(a) or _running(b) or _running(c)):
            break
        time.sleep(0.025)
    assert _running(a) == _running(b) == _running(c) == []
