"""The warm process a grading worker forks its kernels from.

    python [FLAGS] -m perfcourse.kernel.forkserver SOCKET PARENT_PID [MODULE...]

Starting a kernel costs about a CPU-second here, nearly all of it Python importing IPython,
ipykernel and JAX; a grading worker starts two kernels per notebook. This process imports them
once (the MODULEs: never JAX's backend, which starts threads) and then only waits: for each
connection to SOCKET it forks, and the child does the rest. The parent never reads a request,
never runs a student's code and never joins a sandbox, so nothing of one notebook reaches the
next one's kernel through it: each kernel is a copy of this process as it was after its imports.

Its child (the *watcher*) talks to the sandbox's launcher (perfcourse.grading.sandbox), which
sends, in two messages over the SEQPACKET connection:

1. the kernel's command line and environment. The watcher refuses (and the launcher starts the
   kernel by exec, as without a fork server) unless the command is this Python with this
   process's interpreter flags running a module (`-m`) or a script, and the environment equals
   this process's except for the names in PER_KERNEL: a variable read at import time (JAX_*,
   XLA_FLAGS, PYTHON*) could not take effect in a process that has imported already.
2. once bubblewrap has built the sandbox around a placeholder process: a pidfd of that process,
   the descriptors the kernel keeps (stdin, its log as stdout and stderr, the evidence pipe and
   the channel's socket, at the numbers the environment names), the notebook's cgroups, rlimits
   and the user to become.

The watcher enters the cgroups, sets the rlimits, joins every namespace of the placeholder (user
where it differs, mount, network, IPC, UTS, cgroup, PID) and forks the kernel, the first process
of this lineage inside the sandbox's PID namespace. The kernel, before anything else: drops the
capability bounding set, becomes the user (root: nobody, for good), drops every capability, sets
no_new_privs, ends with its parent (the watcher), starts a session of its own, closes every
descriptor but the ones handed in, takes the environment, working folder, `sys.argv` and
`sys.path` an exec'd interpreter would have, and runs the module or script as `__main__`. The
watcher tells the launcher the kernel's exit status when it ends (a kernel that made the watcher
its tracer is let go on, untraced); the launcher then ends the sandbox, and whatever the kernel
left running in it, and exits with that status, so to jupyter_client the launcher is the kernel,
as it is without a fork server.

Every process forked from one server shares its address layout, stack canary and string hash
key: a worker keeps one server per role (grading/fork_server.py), so a student's kernel learns
nothing of the trusted kernel's that way.
"""
from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import signal
import socket
import sys

# Environment variables that may differ between the warm process and a kernel forked from it:
# read only after the fork, by the kernel's own start-up.
PER_KERNEL = frozenset({"PERFCOURSE_ROLE", "PERFCOURSE_CHANNEL_FD", "PERFCOURSE_EVIDENCE_FD"})
MAX_MESSAGE = 1 << 20
CGROUPS = "/sys/fs/cgroup/"  # where the kernel's cgroups are (grading/cgroups.py's CGROUP_MOUNT)
NAMES = {"student": b"student-kernel", "trusted": b"trusted-kernel"}  # the kernel's /proc/PID/comm

_CLONE = {"user": 0x10000000, "mnt": 0x00020000, "net": 0x40000000, "ipc": 0x08000000, "uts": 0x04000000,
          "cgroup": 0x02000000, "pid": 0x20000000}
_PR_SET_PDEATHSIG, _PR_SET_NAME, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 15, 24, 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_PTRACE_DETACH = 17
_libc = ctypes.CDLL(None, use_errno=True)
# This process's environment as it started (what a launcher's must match) and what its imports
# set in it (JAX sets some), which a kernel gets on top of its own, as if it had imported them.
_STARTED_WITH = dict(os.environ)
_IMPORTS_SET: dict[str, str] = {}


class Refused(Exception):
    """The watcher will not start this kernel: the launcher starts it by exec instead."""


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


# --- the warm process --------------------------------------------------------------------------
def serve(path: str, parent: int, modules: list[str]):
    """Import `modules`, listen on `path`, fork per connection. Returns only in a forked kernel:
    what it runs (see `_start`)."""
    # Ends with its worker, and takes its folder with it: a worker killed outright (a Dask
    # worker's end, say) cannot remove it.
    signal.signal(signal.SIGTERM, lambda signum, frame: _leave(path))
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0), "prctl")
    if os.getppid() != parent:
        _leave(path)
    for module in modules:
        importlib.import_module(module)
    _IMPORTS_SET.update({k: v for k, v in os.environ.items() if _STARTED_WITH.get(k) != v})
    # Out of the collector's sight: a kernel's first collection would otherwise walk (and so copy
    # out of the shared pages) every object imported here, 0.08 CPU-s per kernel.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".new")
    os.chmod(path + ".new", 0o600)
    listener.listen(64)
    os.rename(path + ".new", path)  # connectable only once everything is imported
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the system
    sys.stdout.flush()
    sys.stderr.flush()
    while True:
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            return _watch(connection)
        connection.close()


def _leave(path: str) -> None:
    import shutil

    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    os._exit(0)


# --- the watcher -------------------------------------------------------------------------------
def _watch(connection: socket.socket):
    """In the watcher: serve one launcher, then exit. Returns only in the kernel it forks."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _libc.prctl(_PR_SET_NAME, b"kernel-watcher", 0, 0, 0)
    watcher = os.getpid()
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        if int.from_bytes(credentials[4:8], sys.byteorder) != os.getuid():
            os._exit(1)  # only the grader's own launcher may ask
        command = json.loads(connection.recv(MAX_MESSAGE))
        try:
            run = _runner(command["argv"], command["env"])
        except Refused as exc:
            _send(connection, {"refused": str(exc)})
            os._exit(0)
        _send(connection, {"accepted": True})
        data, fds, _, _ = socket.recv_fds(connection, MAX_MESSAGE, 16)
        if not data:
            os._exit(0)  # the launcher went on without a fork
        _enter(json.loads(data), fds, command["env"], connection)
    except BaseException as exc:  # noqa: BLE001 (said to the launcher, which starts the kernel by exec)
        if os.getpid() != watcher:
            os.write(2, f"perfcourse forkserver: the kernel could not start: {exc}\n".encode())
            os._exit(1)
        try:
            _send(connection, {"error": f"{type(exc).__name__}: {exc}"})
        finally:
            os._exit(1)
    return run


def _send(connection: socket.socket, message: dict) -> None:
    connection.send(json.dumps(message).encode())


def _runner(argv: list[str], env: dict[str, str]) -> tuple[str | None, str | None, list[str]]:
    """What the kernel will run, checked against this process: (module, script, arguments)."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise Refused("the command is not a list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise Refused("the environment is not a mapping of strings")
    if os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        raise Refused(f"another Python ({argv[0]})")
    flags = sys.orig_argv[1:sys.orig_argv.index("-m")]
    rest = argv[1:]
    if rest[:len(flags)] != flags:
        raise Refused("other interpreter flags")
    rest = rest[len(flags):]
    mine = {k: v for k, v in _STARTED_WITH.items() if k not in PER_KERNEL}
    theirs = {k: v for k, v in env.items() if k not in PER_KERNEL}
    if mine != theirs:
        differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
        raise Refused(f"another environment ({', '.join(differ)})")
    if rest[:1] == ["-m"] and len(rest) >= 2:
        return (rest[1], None, rest[2:])
    if rest and not rest[0].startswith("-"):
        return (None, rest[0], rest[1:])
    raise Refused("neither a module (-m) nor a script")


def _enter(place: dict, fds: list[int], env: dict[str, str], connection: socket.socket) -> None:
    """Join the sandbox and fork the kernel. The watcher then waits for the kernel, tells the
    launcher how it ended and exits; in the kernel this returns."""
    pidfd, kept = fds[0], dict(zip((int(k) for k in place["fds"]), fds[1:]))
    target = _pid_of(pidfd)
    for procs in place["cgroups"]:  # before the cgroup namespace, which is rooted at the kernel's cgroup
        if not (procs.startswith(CGROUPS) and procs.endswith("/cgroup.procs") and "/../" not in procs):
            raise OSError(f"not a cgroup's process list: {procs}")
        with open(procs, "w") as file:
            file.write(str(os.getpid()))
    import resource

    for name, value in place["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    flags = sum(_CLONE[ns] for ns in ("mnt", "net", "ipc", "uts", "cgroup", "pid"))
    if os.stat(f"/proc/{target}/ns/user").st_ino != os.stat("/proc/self/ns/user").st_ino:
        flags |= _CLONE["user"]
    _check(_libc.setns(pidfd, flags), "setns")
    child = os.fork()  # the first process of this lineage in the sandbox's PID namespace
    if child == 0:
        connection.detach()  # closed below with every descriptor not handed in
        _become_kernel(place, kept, env)
        return
    for fd in fds:
        os.close(fd)
    try:
        _send(connection, {"pid": child})
    except OSError:
        pass  # the launcher is gone: the sandbox ends, and the kernel with it
    while True:
        _, status = os.waitpid(child, 0)
        if not os.WIFSTOPPED(status):
            break
        # Stopped under ptrace: the kernel made its watcher its tracer (PTRACE_TRACEME). Let it go
        # on, untraced, with its signal: only its end is the watcher's to report.
        _libc.ptrace(_PTRACE_DETACH, child, None, os.WSTOPSIG(status))
    try:
        _send(connection, {"status": status})
    finally:
        os._exit(0)


def _pid_of(pidfd: int) -> int:
    with open(f"/proc/self/fdinfo/{pidfd}") as info:
        for line in info:
            if line.startswith("Pid:") and int(line.split()[1]) > 0:
                return int(line.split()[1])
    raise OSError("the sandbox's placeholder is gone")


def _become_kernel(place: dict, kept: dict[int, int], env: dict[str, str]) -> None:
    with open("/proc/sys/kernel/cap_last_cap") as file:
        last_cap = int(file.read())
    for cap in range(last_cap + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping the capability bounding set")
    uid, gid = place["uid"], place["gid"]
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            raise OSError("could not drop privileges")
    _drop_capabilities()
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient capabilities")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() != 0:  # the watcher, outside this PID namespace, is seen as 0; it died already
        os._exit(1)
    os.setsid()
    _libc.prctl(_PR_SET_NAME, NAMES.get(env.get("PERFCOURSE_ROLE", ""), b"kernel"), 0, 0, 0)
    # The descriptors at the numbers the kernel expects, every other one closed. Moved above
    # every target first: a target number may be another one's source.
    moved = {number: os.dup(fd) for number, fd in kept.items()}
    for fd in kept.values():
        os.close(fd)
    for number, fd in moved.items():
        os.dup2(fd, number, inheritable=True)
    low = 0
    for fd in sorted(kept):
        if fd > low:  # closerange(0, 0) would close every descriptor (close_range's last is hi - 1)
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    os.chdir(place["cwd"])
    os.environ.clear()
    os.environ.update({**env, **_IMPORTS_SET, "PWD": place["cwd"]})  # PWD: bubblewrap's --chdir sets it


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3, all zero
    _check(_libc.capset(ctypes.byref(header), data), "dropping capabilities")


# --- the kernel, started as an exec'd interpreter would start it ----------------------------------
def _start(run: tuple[str | None, str | None, list[str]]) -> None:
    import runpy
    import tempfile

    module, script, args = run
    tempfile.tempdir = None  # found again from this kernel's TMPDIR
    sys.path_importer_cache.clear()  # what the server's imports listed of folders the sandbox hides
    flags = sys.orig_argv[1:sys.orig_argv.index("-m")]
    sys.orig_argv = [sys.orig_argv[0], *flags, *(["-m", module] if module else [script]), *args]
    # The packages above this module were imported only to run it: gone, unless a warm module is in them.
    parents = [".".join(__spec__.name.split(".")[:n]) for n in range(1, __spec__.name.count(".") + 1)]
    if parents and not any(name.startswith(parents[0] + ".") and name not in parents for name in sys.modules):
        for name in parents:
            sys.modules.pop(name, None)
    if "numpy" in sys.modules:  # a random state of its own, as a fresh interpreter's
        sys.modules["numpy"].random.seed()
    # sys.path[0] is this server's folder (the kernel's own goes there), unless -P left it out.
    if module is not None:
        sys.argv = ["-m", *args]
        if not sys.flags.safe_path:
            sys.path[0] = os.getcwd()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:  # as `python SCRIPT`: argv[0] as given, __file__ absolute (runpy.run_path would change argv[0])
        import builtins
        import importlib.machinery
        import types

        path = os.path.abspath(script)
        sys.argv = [script, *args]
        if not sys.flags.safe_path:
            sys.path[0] = os.path.dirname(os.path.realpath(script))
        main = types.ModuleType("__main__")
        main.__dict__.update(__file__=path, __cached__=None, __builtins__=builtins,
                             __loader__=importlib.machinery.SourceFileLoader("__main__", path))
        sys.modules["__main__"] = main
        with open(path, "rb") as file:
            code = compile(file.read(), path, "exec")
        exec(code, main.__dict__)


if __name__ == "__main__":
    _start(serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:]))
