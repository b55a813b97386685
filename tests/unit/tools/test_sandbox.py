"""The command sandbox (server/tools/sandbox.py, cody_lsp/landlock.py): run_command with
`sandboxed` set, in this process, against the real kernel — and each of its layers alone, on a
thread of the test (the kernel's restrictions are per thread: the test's others are untouched)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cody_lsp import landlock
from cody_lsp.server.tools import ToolConfig, run_tool, sandbox
from cody_lsp.server.tools.sandbox import SandboxSettings

from ...sandboxing import (
    FAKE_KEY,
    SUPPORT,
    Place,
    connect_command,
    needs_landlock,
    needs_namespace,
    needs_scoping,
    needs_seccomp,
    needs_tcp_rules,
    outside_tmp,
    tcp_listener,
    without_landlock,
)


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch):
    with outside_tmp() as p:
        monkeypatch.setenv("HOME", str(p.home))
        yield p


def sandboxed(**settings: Any) -> ToolConfig:
    return ToolConfig(sandboxed=True, sandbox=SandboxSettings(**settings))


async def run(place: Place, command: str, **settings: Any) -> str:
    result = await run_tool("run_command", {"command": command}, place.folder, sandboxed(**settings))
    return result.content


def in_thread(work: Callable[[], Any]) -> Any:
    """Run `work` on a thread of its own (which it may sandbox for good); its result or error."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(work())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


# ------------------------------------------------------------------ what it allows and refuses


@needs_landlock
async def test_writes_inside_the_folder_and_the_temp_directories_work(place: Place) -> None:
    out = await run(
        place,
        "echo made > made.txt && mkdir -p sub/deep && echo x > sub/deep/y && mv made.txt sub/ && cat sub/made.txt && "
        'echo t > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "tmp: $TMPDIR" && f=$(mktemp /tmp/cody-sbx.XXXXXX) && rm "$f" '
        "&& echo /tmp ok && echo dev > /dev/null && echo ok",
    )
    assert "exit code: 0" in out, out
    assert "made" in out and "/tmp ok" in out
    assert (place.folder / "sub" / "made.txt").read_text() == "made\n"
    tmpdir = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("tmp: "))
    assert Path(tmpdir).parent == Path(tempfile.gettempdir()) and Path(tmpdir).name.startswith("cody-cmd-")
    assert not os.path.exists(tmpdir), "the command's own temp directory is removed when it ends"


@needs_landlock
async def test_writes_outside_are_refused_however_they_are_made(place: Place) -> None:
    escape = f"/etc/cody-sandbox-{os.getpid()}"
    (place.folder / "out").symlink_to(place.home)
    out = await run(
        place,
        f'echo 1 > "$HOME/home.txt"; echo "home=$?"; '
        f'echo 2 > /tmp/../{escape.removeprefix("/")}; echo "dotdot=$?"; '
        f'echo 3 > out/link.txt; echo "link=$?"; '
        f'sh -c \'sh -c "echo 4 > $HOME/grandchild.txt"\'; echo "grandchild=$?"; '
        f'(setsid sh -c "echo 5 > $HOME/detached.txt" &); sleep 0.2; '
        f'rm -f "$HOME/.bashrc"; echo "rm=$?"; '
        f'touch {shlex.quote(str(place.base))}/beside; echo "beside=$?"',
    )
    try:
        for name in ("home", "dotdot", "link", "grandchild", "rm", "beside"):
            assert f"{name}=0" not in out, out
        assert out.count("Permission denied") >= 5, out
        assert sorted(p.name for p in place.home.iterdir()) == [".bashrc", ".config", ".ssh"]
        assert not os.path.exists(escape)
        assert not (place.base / "beside").exists()
    finally:
        if os.path.exists(escape):
            os.unlink(escape)
    # The test's own thread (the "server") was never restricted.
    (place.home / "after.txt").write_text("the server still writes\n")


@needs_landlock
async def test_secrets_and_the_database_cannot_be_read_but_the_rest_can(place: Place) -> None:
    place.db.write_text("sqlite-bytes")
    (place.state / "sessions.db-wal").write_text("wal-bytes")
    hidden = (str(place.db), str(place.db) + "-wal", str(place.db) + "-shm", str(place.state))
    out = await run(
        place,
        'cat "$HOME/.ssh/id_rsa"; cat "$HOME/.config/gh/hosts.yml"; ls "$HOME/.ssh"; cat "$HOME/.bashrc"; '
        f"cat {place.db} {place.db}-wal; head -c 4 /etc/hostname >/dev/null && echo etc-ok; "
        "head -c 1 /dev/urandom > /dev/null && echo urandom-ok",
        hidden=hidden,
    )
    assert "fake-key" not in out and "gho_fake" not in out, out
    assert "sqlite-bytes" not in out and "wal-bytes" not in out
    assert "id_rsa" in out, "listing a hidden directory stays allowed"
    assert "# readable" in out and "etc-ok" in out and "urandom-ok" in out
    assert out.count("Permission denied") == 4, out
    assert FAKE_KEY in (place.home / ".ssh" / "id_rsa").read_text()


@needs_landlock
async def test_a_raw_device_cannot_be_read(place: Place) -> None:
    disks = [d for d in ("/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/mem") if os.path.exists(d)]
    if not disks:
        pytest.skip("no disk device to try")
    out = await run(place, f"head -c 1 {disks[0]} > /dev/null; echo rc=$?")
    assert "rc=0" not in out, out


@needs_landlock
async def test_no_new_privileges_and_no_capabilities(place: Place) -> None:
    out = await run(
        place, "grep -E '^(NoNewPrivs|CapEff|CapBnd|CapPrm)' /proc/self/status; unshare -n true; echo rc=$?"
    )
    assert "NoNewPrivs:\t1" in out, out
    for name in ("CapEff", "CapBnd", "CapPrm"):
        assert f"{name}:\t0000000000000000" in out
    assert "rc=0" not in out


@needs_landlock
@needs_scoping
async def test_the_command_cannot_signal_processes_outside(place: Place) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        out = await run(place, f"kill -TERM {victim.pid}; echo rc=$?; kill -0 {os.getpid()}; echo own=$?")
        assert "rc=1" in out and "own=1" in out, out
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


@needs_landlock
async def test_no_network_by_default_and_the_setting_allows_it(place: Place) -> None:
    with tcp_listener() as (port, heard):
        refused = await run(place, connect_command(port))
        allowed = await run(place, connect_command(port), network=True)
    assert "refused: PermissionError" in refused, refused
    assert "connected" in allowed, allowed
    assert heard == [b"hello from the command"]


@needs_landlock
@needs_seccomp
async def test_unix_sockets_are_refused_even_with_the_network(place: Place) -> None:
    code = "import socket\ntry:\n socket.socket(socket.AF_UNIX).close(); print('made')\nexcept OSError as e: print('no', e.errno)"
    out = await run(place, f"{sys.executable} -c {shlex.quote(code)}", network=True)
    assert f"no {errno.EACCES}" in out, out


@needs_landlock
@needs_namespace
async def test_its_own_network_namespace(place: Place) -> None:
    out = await run(place, "readlink /proc/self/ns/net")
    assert os.readlink("/proc/self/ns/net") not in out, out
    assert "net:[" in out
    allowed = await run(place, "readlink /proc/self/ns/net", network=True)
    assert os.readlink("/proc/self/ns/net") in allowed


@needs_landlock
async def test_a_failing_command_is_told_how_to_ask_for_no_sandbox(place: Place) -> None:
    out = await run(place, 'touch "$HOME/x"')
    assert "exit code: 1" in out and '"sandbox": false' in out
    assert "sandbox" not in (await run(place, "true")).replace("exit code", "")


@needs_landlock
async def test_commands_left_running_are_still_ended(place: Place) -> None:
    marker = f"1000.{os.getpid()}7"
    # The command ends only once the escaped process has left its group (setsid done): else,
    # on a loaded machine, the group's kill may take it before it escaped, and nothing is "left".
    escaped = f'setsid sh -c "echo \\$\\$ > escaped.pid; exec sleep {marker}" > /dev/null 2>&1 &'
    out = await run(place, f"{escaped} while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started")
    assert "started" in out and "ended" in out, out
    ps = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert ps.stdout == ""


# ------------------------------------------------------------------ the plan


def test_a_directory_holding_a_hidden_path_is_split(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "git").mkdir()
    (home / "code").mkdir()
    (home / ".profile").write_text("")
    (home / "link").symlink_to("/etc")
    hidden = sandbox.hidden_paths(str(home), [])
    assert hidden == [str(home / ".config" / "gh"), str(home / ".ssh")]
    rules = dict(sandbox._grants(str(home), landlock.READ, hidden))
    assert rules == {
        str(home): landlock.READ_DIR,
        str(home / ".config"): landlock.READ_DIR,
        str(home / ".config" / "git"): landlock.READ,
        str(home / "code"): landlock.READ,
        str(home / ".profile"): landlock.READ,
    }


def test_the_plan_reads_everywhere_but_devices_and_writes_where_allowed(tmp_path: Path) -> None:
    rules = sandbox.plan(str(tmp_path), [], ["/tmp"], SUPPORT.abi or 7)
    paths = [path for path, _ in rules]
    assert "/usr" in paths and "/etc" in paths and "/dev" not in paths and "/dev/null" in paths
    write = dict(rules)
    assert write[str(tmp_path)] & landlock.WRITE_FILE and write["/tmp"] & landlock.MAKE_REG
    assert not write["/usr"] & landlock.WRITE_FILE


def test_too_many_entries_beside_a_hidden_path_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "MAX_SPLIT_ENTRIES", 3)
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    with pytest.raises(landlock.SandboxError, match="more than 3 entries"):
        sandbox._grants(str(tmp_path), landlock.READ, [str(tmp_path / "f0")])


# ------------------------------------------------------------------ each layer alone, on a thread


@needs_landlock
@needs_tcp_rules
def test_landlock_alone_denies_tcp_connect_and_bind() -> None:
    with tcp_listener() as (port, _):

        def confined() -> list[str]:
            ruleset = landlock.Ruleset(SUPPORT.abi, tcp=True)
            ruleset.allow("/", landlock.fs_rights(SUPPORT.abi))
            ruleset.enforce()
            ruleset.close()
            seen = []
            for what in ("connect", "bind"):
                with socket.socket() as s:
                    try:
                        s.connect(("127.0.0.1", port)) if what == "connect" else s.bind(("127.0.0.1", 0))
                        seen.append(f"{what} worked")
                    except PermissionError:
                        seen.append(f"{what} denied")
            return seen

        assert in_thread(confined) == ["connect denied", "bind denied"]
        with socket.create_connection(("127.0.0.1", port)):
            pass  # this thread was never confined


@needs_landlock
@needs_scoping
def test_landlock_alone_scopes_abstract_unix_sockets(tmp_path: Path) -> None:
    name = f"\0cody-sandbox-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(name)
        listener.listen()

        def confined() -> str:
            ruleset = landlock.Ruleset(SUPPORT.abi, tcp=False)
            ruleset.allow("/", landlock.fs_rights(SUPPORT.abi))
            ruleset.enforce()
            ruleset.close()
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(name)
                    return "connected"
                except PermissionError:
                    return "denied"

        assert in_thread(confined) == "denied"


@needs_seccomp
def test_the_socket_filter_alone() -> None:
    def confined(network: bool) -> Callable[[], list[int | str]]:
        def work() -> list[int | str]:
            landlock.install_seccomp(landlock.socket_filter(network=network))
            seen: list[int | str] = []
            for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):
                try:
                    socket.socket(family, socket.SOCK_DGRAM).close()
                    seen.append("ok")
                except OSError as exc:
                    seen.append(exc.errno or 0)
            a, b = socket.socketpair()  # pipes between its own processes stay allowed
            a.close(), b.close()
            return seen

        return work

    assert in_thread(confined(False)) == [errno.EACCES, errno.EACCES, errno.EACCES, "ok"]
    assert in_thread(confined(True)) == [errno.EACCES, "ok", "ok", "ok"]


@needs_namespace
def test_the_network_namespace_has_only_loopback_and_it_is_up() -> None:
    def inside() -> tuple[list[str], bytes]:
        landlock.enter_isolated_network()
        names = [name for _, name in socket.if_nameindex()]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            s.sendto(b"ping", s.getsockname())
            return names, s.recv(10)

    assert in_thread(inside) == (["lo"], b"ping")


# ------------------------------------------------------------------ where there is no Landlock


def test_without_landlock_the_probe_says_why_and_nothing_runs_unsandboxed(tmp_path: Path) -> None:
    if not SUPPORT.seccomp:
        pytest.skip("the fallback is simulated with a seccomp filter, which this machine lacks")
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from pathlib import Path
        from cody_lsp import landlock
        from cody_lsp.server.tools import ToolConfig, run_tool
        support = landlock.support()
        result = asyncio.run(run_tool("run_command", {"command": "touch ran"}, Path(sys.argv[1]),
                                      ToolConfig(sandboxed=True)))
        print(json.dumps([support.abi, support.reason, result.ok, result.content]))
        """
    )
    done = subprocess.run(without_landlock(["-c", script, str(tmp_path)]), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    abi, reason, ok, content = json.loads(done.stdout)
    assert abi == 0 and "no Landlock" in reason
    assert not ok and "did not run" in content and "no Landlock" in content
    assert not (tmp_path / "ran").exists()
