"""Unit tests for tools.fsaccess: nothing is opened outside the folder, whatever the path or the race."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cody_lsp.server.tools import fsaccess
from cody_lsp.server.tools.fsaccess import Workspace, resolve_in_workspace
from cody_lsp.server.tools.workspace import OutsideWorkspace, ToolError

from ...races import Swapper

SECRET = b"OUTSIDE-SECRET"


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch) -> str:
    """Every test runs with the kernel's openat2 and with the O_NOFOLLOW walk alone."""
    if request.param == "openat2":
        if fsaccess._openat2 is None:
            pytest.fail("this kernel has no openat2; the tests of it cannot run here")
    else:
        monkeypatch.setattr(fsaccess, "_openat2", None)
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with every kind of symlink, and an outside folder with a secret."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    out = Path(os.path.realpath(tmp_path)) / "outside"
    (root / "d" / "sub").mkdir(parents=True)
    out.mkdir()
    (out / "secret.txt").write_bytes(SECRET)
    (root / "d" / "sub" / "f.txt").write_text("inside\n")
    (root / "rel_in").symlink_to("d/sub")  # relative, inside
    (root / "abs_in").symlink_to(root / "d")  # absolute, inside
    (root / "d" / "up").symlink_to("..")  # back to the root
    (root / "d" / "sub" / "climb").symlink_to("../../d/sub/f.txt")  # climbs, stays inside
    (root / "rel_out").symlink_to("../outside")  # relative, outside
    (root / "abs_out").symlink_to(out)  # absolute, outside
    (root / "d" / "deep_out").symlink_to("../../outside/secret.txt")
    (root / "dangling_in").symlink_to("d/new/made.txt")
    (root / "dangling_out").symlink_to(out / "nothing.txt")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "file_as_dir").write_text("x")
    return root, out


def _where(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def _inside(root: Path, real: str) -> bool:
    return real == str(root) or real.startswith(str(root) + "/")


@pytest.mark.parametrize(
    "path, expected",
    [
        ("d/sub/f.txt", "d/sub/f.txt"),
        ("rel_in/f.txt", "d/sub/f.txt"),
        ("abs_in/sub/f.txt", "d/sub/f.txt"),
        ("d/up/d/sub/f.txt", "d/sub/f.txt"),
        ("d/sub/climb", "d/sub/f.txt"),
        ("./d/../d/./sub//f.txt", "d/sub/f.txt"),
        ("dangling_in", "d/new/made.txt"),
        ("d/up", ""),
        (".", ""),
    ],
)
def test_resolve_follows_symlinks_that_stay_inside(tree, mode, path, expected):
    root, _ = tree
    assert resolve_in_workspace(root, path) == Path(root, expected)
    assert resolve_in_workspace(root, str(root / path)) == Path(root, expected)


@pytest.mark.parametrize(
    "path, link",
    [
        ("rel_out/secret.txt", "rel_out"),
        ("abs_out/secret.txt", "abs_out"),
        ("d/deep_out", "d/deep_out"),
        ("dangling_out", "dangling_out"),
        ("abs_in/deep_out", "d/deep_out"),
        ("../outside/secret.txt", None),
        ("d/../../outside", None),
    ],
)
def test_resolve_refuses_every_way_out_without_naming_the_target(tree, mode, path, link):
    root, out = tree
    with pytest.raises(OutsideWorkspace) as info:
        resolve_in_workspace(root, path)
    message = str(info.value)
    assert f"'{path}' leads outside the workspace folder" in message
    assert (f"through the symlink '{link}'" in message) == (link is not None)
    assert str(out) not in message


def test_loops_and_files_used_as_directories(tree, mode):
    root, _ = tree
    with pytest.raises(ToolError, match="symlink loop"):
        resolve_in_workspace(root, "loop_a")
    with pytest.raises(NotADirectoryError):
        resolve_in_workspace(root, "file_as_dir/x")
    with Workspace(root) as ws:
        with pytest.raises(ToolError, match="symlink loop"):
            ws.open(["loop_a"], os.O_RDONLY, path="loop_a")
        assert ws.link_status(("loop_a",)) == "loop"
        assert ws.link_status(("dangling_in",)) == "broken"
        assert ws.link_status(("abs_out",)) == "outside"
        assert stat.S_ISDIR(ws.link_status(("abs_in",)))  # type: ignore[arg-type]


def test_open_reads_inside_only(tree, mode):
    root, _ = tree
    with Workspace(root) as ws:
        for path in ("rel_in/f.txt", "abs_in/sub/f.txt", "d/sub/climb"):
            fd = ws.open(ws.parts(path), os.O_RDONLY, path=path)
            try:
                assert os.read(fd, 100) == b"inside\n"
            finally:
                os.close(fd)
        for path in ("rel_out/secret.txt", "abs_out/secret.txt", "d/deep_out"):
            with pytest.raises(OutsideWorkspace):
                os.close(ws.open(ws.parts(path), os.O_RDONLY, path=path))


def test_write_atomic_creates_parents_and_keeps_the_mode(tree, mode):
    root, out = tree
    with Workspace(root) as ws:
        with ws.resolve(ws.parts("dangling_in"), path="dangling_in") as target:
            assert target.mode is None and target.missing_dirs == ("new",)
            ws.write_atomic(target, b"made\n")
        assert (root / "d/new/made.txt").read_bytes() == b"made\n"
        os.chmod(root / "d/new/made.txt", 0o750)
        with ws.resolve(ws.parts("d/new/made.txt"), path="x") as target:
            ws.write_atomic(target, b"again\n")
        assert stat.S_IMODE((root / "d/new/made.txt").stat().st_mode) == 0o750
        assert sorted(os.listdir(root / "d/new")) == ["made.txt"]  # no temporary file left
        with ws.resolve(ws.parts("d"), path="d") as target, pytest.raises(IsADirectoryError):
            ws.write_atomic(target, b"x")
    assert sorted(os.listdir(out)) == ["secret.txt"]


def test_a_failed_write_leaves_no_temporary_file(tree, mode, monkeypatch):
    root, _ = tree

    def fail(fd, *a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsaccess.os, "fsync", fail)
    with Workspace(root) as ws, ws.resolve(["d", "x.txt"], path="d/x.txt") as target:
        with pytest.raises(OSError, match="No space"):
            ws.write_atomic(target, b"data")
    assert sorted(os.listdir(root / "d")) == ["deep_out", "sub", "up"]


# --------------------------------------------------------------------------- any path at all

_NAMES = st.sampled_from(
    ["..", ".", "", "d", "sub", "f.txt", "up", "climb", "rel_in", "abs_in", "rel_out", "abs_out", "deep_out"]
    + ["dangling_in", "dangling_out", "loop_a", "file_as_dir", "new", "outside", "secret.txt", "ws"]
)
_PATHS = st.one_of(
    st.lists(_NAMES, max_size=8).map("/".join),
    st.lists(_NAMES, max_size=8).map(lambda names: "/" + "/".join(names)),
    st.text(max_size=40),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_PATHS)
def test_any_path_resolves_inside_or_is_refused(tree, mode, path):
    root, out = tree
    with Workspace(root) as ws:
        try:
            parts = ws.parts(path)
            target = ws.resolve(parts, path=path)
        except (ToolError, OSError):
            return  # refused
        with target:
            assert _inside(root, _where(target.parent_fd))
            assert all(name not in ("", ".", "..") for name in target.parts)
            assert not any(name in ("", ".", "..") or "/" in name for name in target.missing_dirs)
        try:
            fd = ws.open(parts, os.O_RDONLY | os.O_NONBLOCK, path=path)
        except (ToolError, OSError):
            return
        try:
            assert _inside(root, _where(fd))
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- races


def race_tree(tmp_path: Path) -> tuple[Path, Path]:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    out = Path(os.path.realpath(tmp_path)) / "outside"
    (root / "d").mkdir(parents=True)
    out.mkdir()
    (root / "d" / "secret.txt").write_bytes(b"inside")
    (out / "secret.txt").write_bytes(SECRET)
    return root, out


def test_a_directory_swapped_for_a_symlink_never_leaks(tmp_path, mode):
    root, out = race_tree(tmp_path)
    swapper = Swapper(root / "d", out, iterations=20_000)
    reads = writes = refused = 0
    with Workspace(root) as ws:
        swapper.start()
        i = 0
        while swapper.is_alive() or i < 20:
            i += 1
            try:
                fd = ws.open(["d", "secret.txt"], os.O_RDONLY, path="d/secret.txt")
            except OutsideWorkspace:
                refused += 1
            else:
                with os.fdopen(fd, "rb") as f:
                    assert f.read() == b"inside"
                reads += 1
            try:
                with ws.resolve(["d", f"w{i}.txt"], path="d/w.txt") as target:
                    ws.write_atomic(target, b"w")
                    writes += 1
            except OutsideWorkspace:
                refused += 1
        swapper.stop()
    assert sorted(os.listdir(out)) == ["secret.txt"]
    assert (out / "secret.txt").read_bytes() == SECRET
    assert reads and writes and refused  # the race really ran both ways


def test_the_walk_holds_a_bounded_number_of_descriptors(tmp_path, mode):
    root = Path(os.path.realpath(tmp_path))
    deep = "/".join(["a"] * (fsaccess.MAX_PATH_DEPTH + 1))
    (root / deep).mkdir(parents=True)
    assert resolve_in_workspace(root, "/".join(["a"] * fsaccess.MAX_PATH_DEPTH)) == root / deep[:-2]
    with pytest.raises(ToolError, match="nested more than 512 directories"):
        resolve_in_workspace(root, deep + "/f")
