"""The Linux kernel's sandboxing primitives, through ctypes (standard library only).

- **Landlock** (system calls 444–446 on every architecture): which files a thread, and
  everything it starts, may read, write or execute; which TCP ports it may bind or connect to
  (ABI ≥ 4); whether it may send signals to, or reach through abstract unix sockets, processes
  outside its own domain (ABI ≥ 6). Root's capabilities do not bypass it.
- **A seccomp filter** on ``socket()``: the families a sandboxed command may create.
- **A network namespace** with only a loopback interface (needs ``CAP_SYS_ADMIN``).
- **Capabilities**: the bounding, ambient and inheritable sets emptied, so that a command run
  by root has no capability after ``exec`` (it could otherwise leave the namespace again).
- **A mount namespace** in which some paths beneath the writable folders are bound read-only
  over themselves (:func:`enter_mount_namespace`, :func:`bind_over`): Landlock's rights are
  inherited down a directory tree and only add up, so it cannot keep ``.git`` read-only inside
  a folder it lets a command write; a read-only mount can (``EROFS`` whatever Landlock allows),
  and a mount point cannot be removed or renamed (``EBUSY``). Made before Landlock is enforced
  (a Landlock-restricted thread may not mount, unmount or remount anything, nor may what it starts).

All of it is per thread on Linux — credentials, ``no_new_privs``, seccomp filters, namespaces —
and inherited across ``fork``/``exec``: :mod:`cody_lsp.server.tools.sandbox` applies it on a
thread of its own that then starts the command; the server's other threads are untouched.
Nothing here can be undone by the thread or its descendants (``PR_SET_NO_NEW_PRIVS``).

Importable before anything heavy: ``initialize``'s ``sandbox`` capability comes from
:func:`support`.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import sys
import threading
from dataclasses import dataclass
from typing import Any

# socket, fcntl and struct are imported where used: initialize's probe needs none of them.

# ------------------------------------------------------------------ Landlock (uapi/linux/landlock.h)

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename into another directory
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5: ioctl on a device file

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

# The access rights each ABI knows (a ruleset may handle only those).
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
FS_ALL_LATEST = (1 << 16) - 1
READ = EXECUTE | READ_FILE | READ_DIR
# The rights that mean something on a file that is not a directory.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


def fs_rights(abi: int) -> int:
    """Every filesystem right Landlock of ``abi`` handles."""
    return _FS_BY_ABI.get(abi, FS_ALL_LATEST)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class SandboxError(OSError):
    """The kernel refused part of a sandbox; nothing may run in it."""


@functools.cache
def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SandboxError(code, f"{what}: {os.strerror(code)}")
    return result


def _syscall(number: int, *args: Any) -> int:
    return int(_libc().syscall(ctypes.c_long(number), *args))


def landlock_abi() -> tuple[int, str | None]:
    """(the kernel's Landlock ABI, None), or (0, why it has none)."""
    if sys.platform != "linux":
        return 0, f"Landlock is Linux's; this is {sys.platform}"
    try:
        abi = _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError) as exc:
        return 0, f"no system call interface ({exc})"
    if abi >= 1:
        return abi, None
    code = ctypes.get_errno()
    if code == errno.ENOSYS:
        return 0, f"this kernel ({os.uname().release}) has no Landlock (it needs Linux ≥ 5.13 built with it)"
    if code == errno.EOPNOTSUPP:
        return 0, f"Landlock is turned off in this kernel ({os.uname().release}: add landlock to the lsm= boot option)"
    return 0, f"Landlock cannot be used here ({os.strerror(code)})"


class Ruleset:
    """A Landlock ruleset being built: what is allowed once it is enforced (everything it
    handles and no rule allows is denied)."""

    def __init__(self, abi: int, *, tcp: bool, scoped: bool = True):
        self.abi = abi
        self.fs = fs_rights(abi)
        net = NET_BIND_TCP | NET_CONNECT_TCP if tcp and abi >= 4 else 0
        scope = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scoped and abi >= 6 else 0
        attr = _RulesetAttr(self.fs, net, scope)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        self.fd = _check(
            _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
            "landlock_create_ruleset",
        )
        self.rules = 0

    def allow(self, path: str, access: int) -> bool:
        """Allow ``access`` on ``path`` and everything beneath it (a file: on it); False when
        the path does not exist."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            access &= self.fs
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                access &= FILE_RIGHTS
            if not access:
                return True
            rule = _PathBeneath(access, fd)
            _check(_syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0), f"a rule for {path}")
            self.rules += 1
            return True
        finally:
            os.close(fd)

    def enforce(self) -> None:
        """On the calling thread, for good: ``no_new_privs``, then the ruleset."""
        no_new_privs()
        _check(_syscall(_SYS_RESTRICT_SELF, self.fd, 0), "landlock_restrict_self")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ------------------------------------------------------------------ threads' privileges

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_SECCOMP = 21
_PR_SET_SECCOMP = 22
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SECCOMP_MODE_FILTER = 2
_CAP_SETPCAP = 8
_CAP_SYS_ADMIN = 21
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def no_new_privs() -> None:
    """This thread and what it execs never gain privileges (no setuid, no file capabilities)."""
    _check(_libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def _capabilities(field: str) -> int:
    """A capability set of the calling thread, from /proc/thread-self/status (CapEff, CapBnd…)."""
    try:
        with open("/proc/thread-self/status", "rb") as f:
            for line in f:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Empty this thread's bounding, ambient and inheritable sets: what it execs has no
    capability, even as root. Its own effective set is kept. The bounding set can only be
    emptied with ``CAP_SETPCAP``: a thread without it (an ordinary user's) keeps it, which gives
    nothing to what it execs (``no_new_privs``: no setuid, no file capabilities)."""
    bounding = _capabilities("CapBnd")
    libc = _libc()
    if bounding and _capabilities("CapEff") >> _CAP_SETPCAP & 1:
        for cap in range(64):
            if bounding >> cap & 1:
                _check(libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(PR_CAPBSET_DROP, {cap})")
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 and ctypes.get_errno() != errno.EINVAL:
        _check(-1, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    if _capabilities("CapInh"):
        header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        _check(libc.capget(ctypes.byref(header), data), "capget")
        for half in data:
            half.inheritable = 0
        _check(libc.capset(ctypes.byref(header), data), "capset")


# ------------------------------------------------------------------ seccomp: which sockets

# struct seccomp_data: nr (0), arch (4), instruction_pointer (8), args[6] (16…).
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYS_SOCKET = {"x86_64": 41, "aarch64": 198}
_SYS_IO_URING_SETUP = 425  # io_uring can create sockets without the socket() system call
_X32_BIT = 0x40000000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _machine() -> str:
    return os.uname().machine


def seccomp_program(
    *, deny_syscalls: dict[int, int] | None = None, socket_families: tuple[int, ...] = (), allow_listed: bool = False
) -> list[tuple[int, int, int, int]]:
    """A classic BPF filter for this architecture (other ABIs of it, e.g. 32-bit programs on
    x86_64, are killed: they would get past the numbers checked):

    - ``deny_syscalls``: {system call number: errno} answered without running it;
    - ``socket()`` of a family in ``socket_families`` fails with EACCES — or, with
      ``allow_listed``, of every family not in it.
    """
    machine = _machine()
    arch, sys_socket = _AUDIT_ARCH[machine], _SYS_SOCKET[machine]
    deny = dict(deny_syscalls or {})
    deny.setdefault(_SYS_IO_URING_SETUP, errno.ENOSYS)
    prog: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, 4)]
    prog.append((_JEQ_K, 1, 0, arch))
    prog.append((_RET_K, 0, 0, _RET_KILL_PROCESS))
    prog.append((_LD_W_ABS, 0, 0, 0))
    if machine == "x86_64":
        prog.append((_JGE_K, 0, 1, _X32_BIT))
        prog.append((_RET_K, 0, 0, _RET_KILL_PROCESS))
    for number, code in deny.items():
        prog.append((_JEQ_K, 0, 1, number))
        prog.append((_RET_K, 0, 0, _RET_ERRNO | code))
    # socket(): look at its first argument (the family; the low word, little-endian).
    families = list(socket_families)
    prog.append((_JEQ_K, 1, 0, sys_socket))
    prog.append((_RET_K, 0, 0, _RET_ALLOW))
    prog.append((_LD_W_ABS, 0, 0, 16))
    for i, family in enumerate(families):
        left = len(families) - i - 1  # family checks after this one
        # A match jumps to the "listed" answer: past the remaining checks and the "not listed" one.
        prog.append((_JEQ_K, left + 1, 0, family))
    listed, other = (_RET_ALLOW, _RET_ERRNO | errno.EACCES) if allow_listed else (_RET_ERRNO | errno.EACCES, _RET_ALLOW)
    prog.append((_RET_K, 0, 0, other))
    prog.append((_RET_K, 0, 0, listed))
    return prog


def seccomp_supported() -> bool:
    """Whether this kernel and architecture take the filters of :func:`seccomp_program`."""
    if sys.platform != "linux" or _machine() not in _AUDIT_ARCH:
        return False
    try:
        return bool(_libc().prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) >= 0)
    except (OSError, AttributeError):
        return False


def install_seccomp(prog: list[tuple[int, int, int, int]]) -> None:
    """Install the filter on the calling thread (after ``no_new_privs``), for good."""
    no_new_privs()
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    _check(_libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "prctl(PR_SET_SECCOMP)")


def socket_filter(*, network: bool) -> list[tuple[int, int, int, int]]:
    """The sandbox's sockets: no unix socket (a local daemon, the user's session bus, another
    program's socket); without the network, none but netlink (the kernel's own)."""
    import socket

    if network:
        return seccomp_program(socket_families=(socket.AF_UNIX,))
    return seccomp_program(socket_families=(socket.AF_NETLINK,), allow_listed=True)


# ------------------------------------------------------------------ the network namespace

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_netns_lock = threading.Lock()
_netns_fd: int | None = None


def can_make_namespaces() -> bool:
    """Whether this process may make a network namespace (CAP_SYS_ADMIN, e.g. root)."""
    return sys.platform == "linux" and bool(_capabilities("CapEff") >> _CAP_SYS_ADMIN & 1)


def _make_namespace() -> int:
    """On a thread of its own: a new network namespace, its loopback up; an fd that keeps it."""
    import fcntl
    import socket
    import struct

    result: list[int | BaseException] = []

    def make() -> None:
        try:
            _check(_libc().unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                request = struct.pack("16sH14x", b"lo", 0)
                flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, request))[1]
                fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))
            result.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=make, name="cody-netns", daemon=True)
    thread.start()
    thread.join()
    outcome = result[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def enter_isolated_network() -> None:
    """Move the calling thread into the sandbox's network namespace (made once, shared by the
    sandboxed commands of this process): loopback only, no route out."""
    global _netns_fd
    with _netns_lock:
        if _netns_fd is None:
            _netns_fd = _make_namespace()
        fd = _netns_fd
    _check(_libc().setns(fd, _CLONE_NEWNET), "setns(CLONE_NEWNET)")


# ------------------------------------------------------------------ a mount namespace: read-only paths

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18
# The "new mount API" (Linux 5.2; mount_setattr 5.12, before Landlock's 5.13): the same numbers
# on every architecture.
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_OPEN_TREE_CLONE = 1
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def enter_mount_namespace(*, user: bool) -> None:
    """A mount namespace of its own for the caller, which shares no mount event with any other
    (``MS_PRIVATE``, recursively): what it mounts is seen by it and what it starts only.

    ``user=False``: the calling thread alone (its file-system attributes are unshared from the
    process's), which needs ``CAP_SYS_ADMIN`` (root). ``user=True``: in a new user namespace as
    well, where an unprivileged process holds the right to mount; only a single-threaded process
    may make one (e.g. a child between ``fork`` and ``exec``). Its user and group are then
    unmapped until :func:`map_ids` (from outside: a process that is not dumpable — the server —
    cannot write its own maps) maps each to itself; files cannot be made before."""
    libc = _libc()
    if user:
        _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
    else:
        _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None), "mount(/, MS_PRIVATE)")


def map_ids(pid: int) -> None:
    """Map the user and group of the process ``pid`` (which made a user namespace with
    :func:`enter_mount_namespace` and has since exec'd: a process made non-dumpable, as the
    server is, has its ``/proc`` files owned by root until then) each to itself in it, as the
    process that owns that namespace may (``setgroups`` denied first, as the kernel requires)."""
    uid, gid = os.geteuid(), os.getegid()
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise SandboxError(exc.errno or 0, f"open(/proc/{pid}/{name}): {exc.strerror}") from None
        try:
            os.write(fd, text.encode())
        except OSError as exc:
            raise SandboxError(exc.errno or 0, f"writing /proc/{pid}/{name}: {exc.strerror}") from None
        finally:
            os.close(fd)


def bind_over(path: str, *, read_only: bool) -> None:
    """Mount ``path`` (with whatever is mounted beneath it) over itself, in the caller's mount
    namespace: read-only if asked (every mount of the copy), else only pinned (a mount point
    cannot be renamed or removed). ``path`` is not followed if it is a symlink."""
    target = os.fsencode(path)
    fd = _check(
        _syscall(
            _SYS_OPEN_TREE,
            ctypes.c_int(_AT_FDCWD),
            target,
            ctypes.c_uint(_OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_RECURSIVE | _AT_SYMLINK_NOFOLLOW),
        ),
        f"open_tree({path})",
    )
    try:
        if read_only:
            attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
            _check(
                _syscall(
                    _SYS_MOUNT_SETATTR,
                    ctypes.c_int(fd),
                    b"",
                    ctypes.c_uint(_AT_EMPTY_PATH | _AT_RECURSIVE),
                    ctypes.byref(attr),
                    ctypes.c_size_t(ctypes.sizeof(attr)),
                ),
                f"mount_setattr({path}, read-only)",
            )
        _check(
            _syscall(
                _SYS_MOVE_MOUNT,
                ctypes.c_int(fd),
                b"",
                ctypes.c_int(_AT_FDCWD),
                target,
                ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH),
            ),
            f"move_mount({path})",
        )
    finally:
        os.close(fd)


# ------------------------------------------------------------------ what this machine offers


@dataclass(frozen=True)
class Support:
    abi: int  # Landlock's ABI; 0: none
    reason: str | None  # why there is no sandbox (abi 0)
    seccomp: bool  # socket() can be filtered
    namespace: bool  # a network namespace can be made

    @property
    def available(self) -> bool:
        return self.abi >= 1

    def network(self, allowed: bool) -> str:
        """What a sandboxed command's network is: "allowed" (the setting), "blocked" (no
        socket but netlink, and a namespace of its own where one can be made),
        "tcp-blocked" (Landlock's TCP rules only) or "open" (nothing here can block it)."""
        if allowed:
            return "allowed"
        if self.seccomp or self.namespace:
            return "blocked"
        return "tcp-blocked" if self.abi >= 4 else "open"


@functools.cache
def support() -> Support:
    abi, reason = landlock_abi()
    return Support(abi, reason, seccomp_supported(), can_make_namespaces())
