"""Start a grading kernel inside bubblewrap, bounded, as an unprivileged user.

    python -m perfcourse.grading.sandbox KERNEL_ARGV...

The grader's kernel manager runs this launcher with its settings as JSON in the environment
variable PERFCOURSE_SANDBOX (`ENV_SETTINGS`). Settings:

    mode            "bwrap" (sandboxed) or "none" (unsandboxed: the kernel runs with the grader's
                    rights; only the bounds, the scratch folder and the evidence pipe apply)
    role            "student" (default) or "trusted"; exported to the kernel as PERFCOURSE_ROLE.
                    Only a student kernel may have `evidence`.
    runtime         absolute path of a directory private to the grader for this kernel: the
                    connection file and the IPC sockets (the kernel talks to the grader over Unix
                    sockets, it has no network). When the grader is root it stays the grader's,
                    writable by the kernel's group until the grader takes that away once the
                    kernel has made its sockets; the files in it are handed to the kernel's user.
                    The kernel's stdout/stderr go to runtime/kernel.log (bounded by file_bytes).
    scratch_source  optional absolute path of a directory of regular files and folders (a
                    submission: see grading/scratch.py, anything else is refused) copied into
                    the kernel's working directory, a fresh scratch folder.
    binds           optional list of absolute directory paths bound at the same path (a channel
                    shared by two kernels, say); they keep the grader's ownership and
                    permissions, so the kernel can write there only what those allow.
    channel         optional absolute path (student role) in a directory of `binds` where the
                    launcher, before anything else runs, binds the listening Unix socket of the
                    value channel and hands it to the kernel as PERFCOURSE_CHANNEL_FD (see
                    perfcourse.kernel.agent): the kernel needs no write access to that directory,
                    so it can neither fill it nor replace the socket by a link.
    evidence        optional absolute path of a file outside the sandbox (not under runtime,
                    binds, scratch_source or anything bound into it) where the student kernel's
                    evidence records go: the launcher stays alive as the parent of bubblewrap and
                    copies what the kernel writes to the pipe whose write end it gets as
                    PERFCOURSE_EVIDENCE_FD (see perfcourse.kernel.evidence), at most 1 MiB; an
                    end of file while the kernel still runs is written there too (CLOSED), and
                    the pipe's write end seen, from outside, under a second descriptor (SECOND).
    fork            optional absolute path of a fork server's socket (grading/fork_server.py), bwrap
                    mode: bubblewrap builds the same sandbox around a placeholder process and the
                    kernel is forked into it from that server's warm process (`ForkedKernel`,
                    perfcourse.kernel.forkserver); the launcher stays as the kernel's stand-in and
                    exits with its status. Where the server is not there, refuses or fails, the
                    kernel is exec'd as without it, after one line in runtime/kernel.log.
    limits          optional: memory_bytes (resident memory of the kernel and every process it
                    starts, tmpfs pages included: a cgroup), pids (processes and threads, a
                    cgroup; the sandbox itself uses about 4), disk_bytes (size of each of the
                    sandbox's tmpfs: the scratch folder and the home folder), cpu_seconds,
                    file_bytes, open_files (rlimits).

In bwrap mode the kernel sees an empty, read-only root holding only the system directories
(/usr, /etc, ...), the Python environment and the folder of this package; its working directory
is WORKDIR, a size-limited tmpfs holding the copy of scratch_source, and its HOME (TMPDIR,
caches, IPython's and matplotlib's folders, byte-code) is another tmpfs, HOME, so nothing of
the kind lands beside the notebook. Writable: those two tmpfs, runtime and binds (and /dev/shm,
in memory). No network (--unshare-all), no other processes, --die-with-parent, --new-session.
Nothing of autograded/, source/, the gradebook or other students' files is there, and nothing
the kernel writes to its scratch folder outlives it.

User: when the grader is root, bubblewrap runs as root to build the sandbox (it must reach a
Python installed where only root can look, such as /root/.pyenv), and a first step inside, run
before any student code with only CAP_CHOWN/SETUID/SETGID, hands the tmpfs to the kernel's user
and drops to uid/gid 65534 (nobody) for good: setgroups, setgid, setuid, no capabilities left,
no_new_privs. When the grader is not root the kernel runs as the grader's user in bubblewrap's
user namespace, with nested user namespaces disabled. In "none" mode nothing is dropped.

Bounds: a cgroup per kernel bounds the resident memory and the process count of everything the
kernel starts (grading/cgroups.py); rlimits bound each process's CPU seconds, file size and open
files. There is no address-space limit: it would kill correct JAX work, which maps many threads.
When a bound cannot be set the launcher prints one loud line to stderr and goes on;
`bounds_available()` says the same to the grader beforehand. The grader calls
`cgroups.cleanup(runtime)` after the kernel has gone. The evidence pipe is copied by
grading/evidence_pipe.py.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from ..course import CourseError
from ..kernel.evidence import ENV_FD as ENV_EVIDENCE_FD
from ..kernel import CHANNEL_FD_ENV as ENV_CHANNEL_FD
from . import cgroups, evidence_pipe, scratch

ENV_SETTINGS = "PERFCOURSE_SANDBOX"
KERNEL_UID = KERNEL_GID = 65534       # nobody
HOME = "/home/student"                # the kernel's home inside the sandbox: a tmpfs
WORKDIR = "/home/student/work"        # its working directory: another tmpfs, with the submission
SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")
LIMIT_KEYS = ("memory_bytes", "pids", "disk_bytes", "cpu_seconds", "file_bytes", "open_files")
SETTING_KEYS = ("mode", "role", "runtime", "scratch_source", "binds", "channel", "evidence", "limits", "fork")
# What the student's kernel sees of this package: the code it runs (its evidence hook, the
# channel's agent and the probes). The checks, whose reference answers a submission could import
# instead of doing the task, and the grader are not there to import or read.
STUDENT_VISIBLE = ("__init__.py", "kernel", "channel")

# The kernel gets only these of the grader's environment variables (plus its own HOME, TMPDIR
# and caches): nothing else the grader's environment holds is the student's to read.
ENV_KEEP = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
            "PYTHONWARNINGS", "PYTHONIOENCODING", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION"}
ENV_KEEP_PREFIXES = ("LC_", "JAX_", "XLA_", "TF_CPP_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NVIDIA_",
                     "TPU_", "PERFCOURSE_")


class SandboxUnavailable(RuntimeError):
    pass


class SettingsError(ValueError):
    """Settings the launcher refuses, before it creates or starts anything."""


def bubblewrap() -> str | None:
    return shutil.which("bwrap")


# --- settings ----------------------------------------------------------------------------------
def read_settings(text: str | None) -> dict:
    """The launcher's settings, checked: one SettingsError naming the first fault."""
    if text is None:
        raise SettingsError(f"{ENV_SETTINGS} is not set")
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{ENV_SETTINGS} is not JSON ({exc})") from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{ENV_SETTINGS} must be a JSON object")
    unknown = sorted(set(settings) - set(SETTING_KEYS))
    if unknown:
        raise SettingsError(f"unknown settings: {', '.join(unknown)}")
    if settings.get("mode") not in ("bwrap", "none"):
        raise SettingsError("mode must be 'bwrap' or 'none'")
    settings.setdefault("role", "student")
    if settings["role"] not in ("student", "trusted"):
        raise SettingsError("role must be 'student' or 'trusted'")
    settings["runtime"] = _directory(settings.get("runtime"), "runtime")
    if settings.get("scratch_source") is not None:
        settings["scratch_source"] = _directory(settings["scratch_source"], "scratch_source")
    binds = settings.get("binds") or []
    if not isinstance(binds, list):
        raise SettingsError("binds must be a list of directories")
    settings["binds"] = [_directory(b, "binds") for b in binds]
    limits = settings.get("limits") or {}
    if not isinstance(limits, dict) or set(limits) - set(LIMIT_KEYS):
        raise SettingsError(f"limits must be an object with keys among {', '.join(LIMIT_KEYS)}")
    for key, value in limits.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise SettingsError(f"limits.{key} must be a positive integer")
    settings["limits"] = {k: v for k, v in limits.items() if v is not None}
    fork = settings.get("fork")
    if fork is not None and (not isinstance(fork, str) or not os.path.isabs(fork)):
        raise SettingsError("fork must be an absolute path")
    channel = settings.get("channel")
    if channel is not None:
        if settings.get("role", "student") != "student":
            raise SettingsError("a channel is served by a student kernel only")
        if not isinstance(channel, str) or not os.path.isabs(channel):
            raise SettingsError("channel must be an absolute path")
        if os.path.dirname(channel) not in settings["binds"]:
            raise SettingsError("channel must lie directly in one of the binds")
    evidence = settings.get("evidence")
    if evidence is not None:
        if settings["role"] != "student":
            raise SettingsError("evidence is recorded for a student kernel only")
        if not isinstance(evidence, str) or not os.path.isabs(evidence):
            raise SettingsError("evidence must be an absolute path")
        evidence = os.path.abspath(evidence)
        if not os.path.isdir(os.path.dirname(evidence)):
            raise SettingsError(f"evidence: {os.path.dirname(evidence)} is not a directory")
        visible = [settings["runtime"], *settings["binds"]] + (
            [settings["scratch_source"]] if settings.get("scratch_source") else []) + (
            _bound_read_only() if settings["mode"] == "bwrap" else [])
        for place in visible:
            if evidence == place or evidence.startswith(place.rstrip("/") + "/"):
                raise SettingsError(f"evidence: {evidence} is inside {place}, which the kernel can reach")
        settings["evidence"] = evidence
    return settings


def _directory(value, name: str) -> str:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise SettingsError(f"{name} must be an absolute path")
    path = os.path.abspath(value)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise SettingsError(f"{name}: {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SettingsError(f"{name}: {path} is {scratch.kind(info.st_mode)}, not a directory")
    return path


def python_directories(with_package: bool = True) -> list[str]:
    """The Python environment, its base installation and (`with_package`) the folder holding this
    package (the student's server, student_lab.py, runs nothing of it)."""
    import perfcourse

    folders = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    if with_package:
        folders.append(Path(perfcourse.__file__).resolve().parents[1])
    found = dict.fromkeys(os.path.realpath(p) for p in folders)
    for path in (sys.prefix, sys.base_prefix):  # also as named, where the venv's links point
        found.setdefault(os.path.abspath(path))
    return sorted(found)


def _bound_read_only() -> list[str]:
    return [*SYSTEM_DIRECTORIES, *python_directories()]


# --- the environment and the command -----------------------------------------------------------
def kernel_user() -> str | None:
    """The kernel's USER in a sandbox: nobody when the grader is root, else the grader's own."""
    return "nobody" if os.geteuid() == 0 else None


def kernel_environment(source: dict, home: str, role: str, user: str | None) -> dict:
    """The kernel's environment: an allow-list of the grader's, and its own home and caches."""
    env = {k: v for k, v in source.items()
           if (k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)) and k not in (ENV_SETTINGS, ENV_EVIDENCE_FD)}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update({
        "HOME": home,
        "TMPDIR": f"{home}/tmp",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "MPLCONFIGDIR": f"{home}/.config/matplotlib",
        "IPYTHONDIR": f"{home}/.ipython",
        # A student's own module is compiled in memory, never written beside it (the scratch folder
        # lists only what was handed in). Not PYTHONPYCACHEPREFIX: that moves where every module's
        # byte-code is *read* too, so jax, numpy and IPython were compiled from source at each kernel
        # start (1.4 CPU-s more per kernel, and again at `import jax`).
        "PYTHONDONTWRITEBYTECODE": "1",
        "PERFCOURSE_ROLE": role,
    })
    if user:
        env["USER"] = env["LOGNAME"] = user
    return env


# Runs inside the sandbox before the kernel, with `python -I -S`: hands the tmpfs (made by
# bubblewrap, nothing in them student-made yet) to the kernel's user, drops to that user for
# good, makes the home's folders, closes every inherited descriptor but the evidence pipe, and
# becomes the kernel.
SHIM = r"""
import os, sys
uid, gid = int(sys.argv[1]), int(sys.argv[2])
keep = sorted(int(fd) for fd in sys.argv[3].split(",") if fd and int(fd) >= 3)
tops, argv = sys.argv[4:6], sys.argv[7:]
if os.getuid() == 0:
    for top in tops:
        for _, dirs, files, fd in os.fwalk(top):
            for name in dirs + files:
                os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        os.chown(top, uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getegid() != gid:
        sys.exit("perfcourse sandbox: could not drop privileges")
for key in ("TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "MPLCONFIGDIR", "IPYTHONDIR"):
    os.makedirs(os.environ[key], exist_ok=True)
low = 3
for fd in keep:
    os.closerange(low, fd)
    low = fd + 1
os.closerange(low, 1 << 20)
os.execvp(argv[0], argv)
"""


def bwrap_command(kernel_argv: list[str], runtime: str, binds: list[str], folders: list[str],
                  files: list[tuple[str, int]], disk_bytes: int | None, privileged: bool,
                  keep_fds: tuple[int, ...] = (), student: bool = True) -> list[str]:
    """bubblewrap's command line: an empty read-only root, two tmpfs, runtime and binds writable;
    for a `student` kernel, only STUDENT_VISIBLE of this package."""
    command = [bubblewrap() or "bwrap"]
    for directory in SYSTEM_DIRECTORIES:
        command += ["--ro-bind-try", directory, directory]
    bind = Binder(command)

    for directory in python_directories():
        bind("--ro-bind", directory)
    if student:
        package = str(Path(__file__).resolve().parents[1])
        command += ["--perms", "0555", "--tmpfs", package]
        for name in STUDENT_VISIBLE:
            command += ["--ro-bind", f"{package}/{name}", f"{package}/{name}"]
    command += ["--dev", "/dev", "--proc", "/proc"]
    for directory in [runtime, *binds]:
        bind("--bind", directory)
    size = ["--size", str(disk_bytes)] if disk_bytes else []
    command += ["--perms", "0755", *size, "--tmpfs", HOME, "--perms", "0755", *size, "--tmpfs", WORKDIR]
    for folder in folders:
        command += ["--perms", "0755", "--dir", f"{WORKDIR}/{folder}"]
    for relative, fd in files:
        command += ["--perms", "0644", "--file", str(fd), f"{WORKDIR}/{relative}"]
    command += ["--remount-ro", "/", "--chdir", WORKDIR]
    if privileged:
        # No user namespace: the sandbox's uid 0 must be able to become the real uid 65534.
        command += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                    "--cap-drop", "ALL", "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        command += ["--unshare-all", "--unshare-user", "--disable-userns"]
    command += ["--die-with-parent", "--new-session", "--",
                sys.executable, "-I", "-S", "-c", SHIM, str(KERNEL_UID), str(KERNEL_GID),
                ",".join(str(fd) for fd in keep_fds if fd >= 3),
                HOME, WORKDIR, "--", *kernel_argv]
    return command


class Binder:
    """Adds binds to a bubblewrap command line, each at its own path, after SYSTEM_DIRECTORIES."""

    def __init__(self, command: list[str]):
        self.command, self.bound, self.made = command, list(SYSTEM_DIRECTORIES), set()

    def __call__(self, option: str, directory: str) -> None:
        # Folders above a bind are made by bubblewrap, 0700 when it runs as root: make them 0755
        # first, unless they come from a bind already (those keep their own permissions).
        for parent in map(str, reversed(Path(directory).parents[:-1])):
            inside = any(parent == b or parent.startswith(b.rstrip("/") + "/") for b in self.bound)
            if parent not in self.made and not inside:
                self.made.add(parent)
                self.command.extend(["--perms", "0755", "--dir", parent])
        self.command.extend([option, directory, directory])
        self.bound.append(directory)


def rlimits(limits: dict) -> dict[str, int]:
    """The per-process rlimits, by their names in `resource`; memory and processes are bounded
    by the cgroup instead."""
    return {name: int(limits[key]) for name, key in (("RLIMIT_CPU", "cpu_seconds"), ("RLIMIT_FSIZE", "file_bytes"),
                                                     ("RLIMIT_NOFILE", "open_files")) if limits.get(key)}


def apply_limits(limits: dict) -> None:
    for name, value in rlimits(limits).items():
        resource.setrlimit(getattr(resource, name), (value, value))


def bounds_available() -> list[str]:
    """What this machine cannot bound or enforce, one line each; empty when everything holds."""
    problems = []
    if os.geteuid() != 0:
        problems.append("kernels run as the grader's own user (the grader is not root: no switch to nobody)")
    return problems + cgroups.missing_bounds()


# --- the launcher ------------------------------------------------------------------------------
def _hand_over(runtime: str) -> None:
    """Give the kernel's user what is in the runtime (only the grader has written there), and
    its group the right to add files to it: the grader keeps the folder itself, and takes that
    right away once the kernel is up (`seal`). Links are changed, never followed."""
    for _, dirs, files, fd in os.fwalk(runtime):
        for name in dirs + files:
            os.chown(name, KERNEL_UID, KERNEL_GID, dir_fd=fd, follow_symlinks=False)
    os.chown(runtime, os.geteuid(), KERNEL_GID, follow_symlinks=False)
    os.chmod(runtime, 0o770)


def seal(runtime) -> None:
    """Once a kernel has made its sockets: it can add nothing more to its runtime folder."""
    if os.geteuid() == 0 and os.stat(runtime, follow_symlinks=False).st_gid == KERNEL_GID:
        os.chmod(runtime, 0o750)


def _listen(path: str) -> int:
    """The channel's listening socket, made by the grader's user; its descriptor, inheritable."""
    import socket

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # both kernels' user connects; the folder stays the grader's
    listener.listen(8)
    fd = listener.detach()
    os.set_inheritable(fd, True)
    return fd



def _wait(child: int, seconds: float) -> int | None:
    """The child's wait status if it ends within `seconds`, else None (it still runs)."""
    deadline, pause = time.monotonic() + seconds, 0.005
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def main(argv: list[str]) -> int:
    # Like bubblewrap (--die-with-parent), the launcher ends when the grader that started it dies,
    # from its first step on: a Dask worker killed mid-task leaves no kernel running.
    die_with_parent(_grader_pid())
    try:
        settings = read_settings(os.environ.pop(ENV_SETTINGS, None))
        if not argv:
            raise SettingsError("no kernel command after the launcher")
    except SettingsError as exc:
        print(f"perfcourse sandbox: bad settings: {exc}", file=sys.stderr, flush=True)
        return 2
    mode, runtime, limits = settings["mode"], settings["runtime"], settings["limits"]
    root = os.geteuid() == 0
    source, folders, files = settings.get("scratch_source"), [], []
    try:  # the submission first: a refused one leaves nothing made
        if mode == "bwrap":
            if not bubblewrap():
                raise SettingsError("bubblewrap (bwrap) is not installed")
            if source:
                folders, files = scratch.open_submission(Path(source))
            home, user = HOME, kernel_user()
        else:
            work = Path(runtime) / "work"
            if source:
                scratch.copy_submission(Path(source), work)
            else:
                work.mkdir(exist_ok=True)
            home, user = str(Path(runtime) / "home"), None
    except (SettingsError, CourseError) as exc:
        print(f"perfcourse sandbox: refused: {exc}", file=sys.stderr, flush=True)
        return 2
    problems, entered = cgroups.enter(runtime, limits)
    for problem in problems:
        print(f"perfcourse sandbox: WARNING: {problem}", file=sys.stderr, flush=True)
    apply_limits(limits)
    env = kernel_environment(os.environ, home, settings["role"], user)

    # Whatever the kernel writes to its own stdout/stderr (not to the notebook) goes to a capped log.
    log = os.open(os.path.join(runtime, "kernel.log"),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    evidence = None
    if settings.get("evidence"):
        evidence = os.open(settings["evidence"],
                           os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    listener = _listen(settings["channel"]) if settings.get("channel") else -1
    if listener >= 0:
        env[ENV_CHANNEL_FD] = str(listener)
    if mode == "bwrap" and root:
        _hand_over(runtime)

    reader = writer = -1
    if evidence is not None:
        reader, writer = os.pipe()
        env[ENV_EVIDENCE_FD] = str(writer)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    forked = None
    if mode == "bwrap" and settings.get("fork"):
        forked = ForkedKernel.start(settings["fork"], argv, env, settings, folders, files, (writer, listener),
                                    entered)
    if forked is not None:
        kernel = forked
    else:
        if mode == "bwrap":
            command = bwrap_command(argv, runtime, settings["binds"], folders, files, limits.get("disk_bytes"),
                                    privileged=root, keep_fds=(writer, listener),
                                    student=settings["role"] == "student")
            passed = [fd for _, fd in files]
        else:
            os.chdir(Path(runtime) / "work")
            for key in ("TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "MPLCONFIGDIR", "IPYTHONDIR"):
                os.makedirs(env[key], exist_ok=True)
            command, passed = list(argv), []
        if evidence is None:
            for fd in passed:
                os.set_inheritable(fd, True)
            os.execvpe(command[0], command, env)
        kernel = ExecKernel(_spawn(command, env, [*passed, writer], close=(reader, evidence)))
        for fd in passed:
            os.close(fd)
    # The launcher stays only to copy the evidence pipe into its file, or to stand for a forked
    # kernel; bubblewrap dies with it (--die-with-parent). It keeps the grader's user: a
    # parent-death signal is sent with the dying parent's rights, and one from nobody would not
    # reach bubblewrap, which runs as root.
    for fd in (writer, listener):
        if fd >= 0:
            os.close(fd)
    if evidence is None:
        return kernel.exit_code(kernel.wait(None))
    return evidence_pipe.copy(reader, evidence, kernel, writer, entered)


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _spawn(command: list[str], env: dict, inherit: list[int], close=()) -> int:
    """Fork and exec `command`; the descriptors `inherit` stay open in it, those in `close` not."""
    child = os.fork()
    if child == 0:
        try:
            for fd in close:
                if fd is not None and fd >= 0:
                    os.close(fd)
            for fd in inherit:
                if fd >= 0:
                    os.set_inheritable(fd, True)
            os.execvpe(command[0], command, env)
        finally:
            os._exit(127)
    return child


class ExecKernel:
    """A kernel that is the launcher's child (bubblewrap, or the kernel itself unsandboxed)."""

    def __init__(self, child: int):
        self.child = child

    def roots(self) -> list[int]:
        """The processes whose descendants are the sandbox's: bubblewrap (or the kernel unsandboxed)."""
        return [self.child]

    def wait(self, seconds: float | None) -> int | None:
        """Its wait status if it ends within `seconds` (None: however long it takes), else None."""
        if seconds is None:
            return os.waitpid(self.child, 0)[1]
        return _wait(self.child, seconds)

    @staticmethod
    def exit_code(status: int) -> int:
        """The launcher's exit status for the kernel's wait status: its code, or 128 + the signal."""
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status)
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        return 1  # stopped or continued: not an end a watcher reports


# Run by the placeholder of a forked kernel's sandbox (after SHIM): says it is ready on one pipe,
# then holds the sandbox open until the launcher closes the other.
PLACEHOLDER = "import os, sys; os.write(int(sys.argv[2]), b'.'); os.read(int(sys.argv[1]), 1)"
FORK_TIMEOUT = 60.0  # seconds a fork server and a placeholder have to answer before the launcher gives up on them


class ForkedKernel:
    """A kernel forked from the worker's warm process (perfcourse.kernel.forkserver) into a
    sandbox that bubblewrap built around a placeholder; its exit status comes from the fork
    server's watcher."""

    def __init__(self, connection, hold: int, pid: int | None = None):
        import threading

        self.connection, self.hold, self.pid = connection, hold, pid
        self.status: int | None = None
        self.ended = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        """Wait for the watcher's word that the kernel ended, then end its sandbox, as an exec'd
        kernel's end ends bubblewrap's: whatever the kernel left running there (a child that holds
        the evidence pipe, say) dies with it. A watcher that ends without a word (killed with the
        kernel's cgroup) counts as a kernel killed."""
        status = signal.SIGKILL  # a wait status: killed by SIGKILL
        try:
            while True:
                message = self.connection.recv(1 << 16)
                if not message:
                    break
                answer = json.loads(message)
                if "status" in answer:
                    status = int(answer["status"])
                    break
        except (OSError, ValueError):
            pass
        self.status = status
        os.close(self.hold)  # the placeholder ends, and bubblewrap's init kills what is left in the sandbox
        self.ended.set()

    @classmethod
    def start(cls, server: str, argv: list[str], env: dict, settings: dict, folders, files,
              keep: tuple[int, int], cgroups_entered: list[Path]) -> "ForkedKernel | None":
        """The kernel, forked; None (after one line in the kernel's log) where it cannot be, and
        the launcher starts it by exec as without a fork server."""
        import socket

        from .fork_server import PID_FILE

        deadline = time.monotonic() + FORK_TIMEOUT  # a server still importing: it is ready in about a kernel's start
        while not os.path.exists(server) and time.monotonic() < deadline and _alive(Path(server).parent / PID_FILE):
            time.sleep(0.02)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.settimeout(FORK_TIMEOUT)
        try:
            connection.connect(server)
            connection.send(json.dumps({"argv": argv, "env": env}).encode())
            answer = json.loads(connection.recv(1 << 16) or b"{}")
        except (OSError, ValueError) as exc:
            connection.close()
            print(f"perfcourse sandbox: kernel started by exec: no fork server ({exc})", file=sys.stderr, flush=True)
            return None
        if not answer.get("accepted"):
            connection.close()
            print(f"perfcourse sandbox: kernel started by exec: the fork server refused "
                  f"({answer.get('refused', 'no answer')})", file=sys.stderr, flush=True)
            return None
        hold_read, hold = os.pipe()
        ready_read, ready = os.pipe()
        runtime, limits = settings["runtime"], settings["limits"]
        placeholder = [sys.executable, "-I", "-S", "-c", PLACEHOLDER, str(hold_read), str(ready)]
        command = bwrap_command(placeholder, runtime, settings["binds"], folders, files, limits.get("disk_bytes"),
                                privileged=os.geteuid() == 0, keep_fds=(hold_read, ready),
                                student=settings["role"] == "student")
        box = _spawn(command, env, [fd for _, fd in files] + [hold_read, ready], close=(hold, ready_read))
        os.close(hold_read)
        os.close(ready)
        problem = None
        try:
            pidfd = cls._placeholder(box, ready_read)
            given = {0: 0, 1: 1, 2: 2, **{fd: fd for fd in keep if fd >= 0}}
            place = {"cgroups": [str(c / "cgroup.procs") for c in cgroups_entered],
                     "rlimits": rlimits(limits), "cwd": WORKDIR, "fds": list(given),
                     "uid": KERNEL_UID if os.geteuid() == 0 else None,
                     "gid": KERNEL_GID if os.geteuid() == 0 else None}
            socket.send_fds(connection, [json.dumps(place).encode()], [pidfd, *given.values()])
            os.close(pidfd)
            answer = json.loads(connection.recv(1 << 16) or b"{}")
            if "pid" not in answer:
                problem = answer.get("error", "the fork server's watcher ended")
        except (OSError, ValueError) as exc:
            problem = str(exc)
        finally:
            os.close(ready_read)
        if problem is None:
            connection.settimeout(None)
            return cls(connection, hold, answer["pid"] if type(answer.get("pid")) is int else None)
        # Nothing of the student's has run: start again by exec, the submission's files re-read.
        connection.close()
        os.close(hold)
        with contextlib.suppress(ProcessLookupError):
            os.kill(box, signal.SIGKILL)
        os.waitpid(box, 0)
        for _, fd in files:
            os.lseek(fd, 0, os.SEEK_SET)
        print(f"perfcourse sandbox: kernel started by exec: the fork failed ({problem})", file=sys.stderr, flush=True)
        return None

    @staticmethod
    def _placeholder(box: int, ready: int) -> int:
        """A pidfd of the sandbox's placeholder once it says it is ready: bubblewrap's last descendant."""
        import select

        if not select.select([ready], [], [], FORK_TIMEOUT)[0] or os.read(ready, 1) != b".":
            raise OSError("the sandbox's placeholder did not start")
        pid = box
        while True:
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as file:
                    children = [int(c) for c in file.read().split()]
            except OSError:
                children = []
            if not children:
                break
            pid = children[-1]
        if pid == box:
            raise OSError("the sandbox has no placeholder")
        return os.pidfd_open(pid)

    def roots(self) -> list[int]:
        """The kernel, in this launcher's PID namespace (the fork server's watcher says which)."""
        return [self.pid] if self.pid else []

    def wait(self, seconds: float | None) -> int | None:
        """The kernel's wait status if it ends within `seconds` (None: however long it takes), else None."""
        self.ended.wait(seconds)
        return self.status

    exit_code = staticmethod(ExecKernel.exit_code)


def die_with_parent(parent: int | None = None) -> None:
    """SIGKILL this process when the one that started it (pid `parent`) dies: Linux's PR_SET_PDEATHSIG.

    Given the parent's pid, a parent that died before the request (this process is then another's
    child) ends this one at once too."""
    import ctypes
    import signal

    parent = parent or os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _grader_pid() -> int | None:
    """The grader that started this launcher, as Jupyter tells its kernels (JPY_PARENT_PID): when
    it is not this launcher's parent, it either died already (then it is returned, and the
    launcher ends) or the variable is someone else's (then None: the parent is the one to watch)."""
    text = os.environ.get("JPY_PARENT_PID", "")
    if not text.isdigit():
        return None
    pid = int(text)
    if pid == os.getppid():
        return pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return pid
    except PermissionError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
