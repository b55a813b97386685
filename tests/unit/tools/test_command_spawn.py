"""How run_command starts its shell: through `setpriv --pdeathsig KILL` when the machine has
it (so the server spawns it with vfork, without running Python in a fork of itself), else
with a `preexec_fn`. Either way the shell gets SIGKILL when the server dies — checked here
with the guard process switched off, so that nothing else could have ended it."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cody_lsp.server.tools import run_tool, shell

from ..tools.test_command_processes import _marker, _running


def test_setpriv_is_found_and_can_set_the_parent_death_signal() -> None:
    assert shutil.which("setpriv"), "util-linux setpriv is expected on the test machine"
    assert shell._setpriv() == shutil.which("setpriv")


async def test_a_command_runs_through_setpriv_with_the_same_shell(tmp_path: Path) -> None:
    result = await run_tool("run_command", {"command": 'echo "shell: $0"'}, tmp_path)
    assert result.ok, result.content
    assert "shell: /bin/sh" in result.content


@pytest.mark.parametrize("path", ["setpriv", "preexec_fn"])
def test_the_shell_dies_with_the_server_without_the_guard(tmp_path: Path, path: str) -> None:
    marker = _marker()
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from cody_lsp.server.tools import run_tool, shell
        shell._Commands._start_guard = lambda self: None  # only PR_SET_PDEATHSIG is left
        if sys.argv[2] == "preexec_fn":
            shell._setpriv = lambda: None
        else:
            assert shell._setpriv() is not None
        asyncio.run(run_tool("run_command", {{"command": "exec sleep {marker}"}}, Path(sys.argv[1])))
        """
    )
    server = subprocess.Popen([sys.executable, "-c", script, str(tmp_path), path])
    try:
        for _ in range(400):
            if _running(marker) or server.poll() is not None:
                break
            time.sleep(0.025)
        assert _running(marker), f"the command did not start (exit status {server.poll()})"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    for _ in range(400):
        if not _running(marker):
            break
        time.sleep(0.025)
    assert _running(marker) == []


def test_without_setpriv_the_probe_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    shell._setpriv.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    try:
        assert shell._setpriv() is None
    finally:
        shell._setpriv.cache_clear()


async def test_commands_started_at_once_all_run(tmp_path: Path) -> None:
    results = await asyncio.gather(*(run_tool("run_command", {"command": f"echo n{i}"}, tmp_path) for i in range(20)))
    assert [r.content.strip() for r in results] == [f"exit code: 0\nn{i}" for i in range(20)]
