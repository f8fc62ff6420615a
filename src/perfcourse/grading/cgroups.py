"""The cgroups that bound a grading kernel's memory and processes (the sandbox's launcher makes them).

A cgroup per kernel (cgroup v2 when /sys/fs/cgroup is cgroup2, else the v1 `memory` and `pids`
hierarchies), made under the launcher's own cgroup and named from the kernel's runtime folder,
bounds the resident memory (memory.limit_in_bytes and memsw, or memory.max and memory.swap.max) and
the process count of everything the kernel starts; a kernel over its memory is killed by the
kernel's OOM killer. The launcher moves itself in (`enter`) before it starts the kernel; where a
bound cannot be set it says so and goes on, and `missing_bounds()` tells the grader beforehand. The
grader calls `cleanup(runtime)` after the kernel has gone: it kills what is left in the cgroups and
removes them.
"""
from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

CGROUP_MOUNT = "/sys/fs/cgroup"


def _hierarchies() -> tuple[str, dict[str, Path]]:
    """("v2" or "v1", {controller: the launcher's own cgroup directory}); {} where none is mounted."""
    mounts_v1, unified = {}, None
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            root, point = _unescape(fields[3]), _unescape(fields[4])
            if tail[0] == "cgroup2" and point == CGROUP_MOUNT:
                unified = (root, point)
            elif tail[0] == "cgroup":
                for option in tail[2].split(","):
                    if option in ("memory", "pids"):
                        mounts_v1[option] = (root, point)
    own = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    if unified is not None:
        return "v2", {c: _under(unified, own.get("", "/")) for c in ("memory", "pids")}
    return "v1", {c: _under(mounts_v1[c], own.get(c, "/")) for c in ("memory", "pids") if c in mounts_v1}


def _unescape(text: str) -> str:
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _under(mount: tuple[str, str], path: str) -> Path:
    root, point = mount
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return Path(point + "/" + path.strip("/")) if path.strip("/") else Path(point)


def _cgroup_name(runtime) -> str:
    """The cgroup's name comes from the runtime's path, never from a file the kernel could write."""
    return "perfcourse-" + hashlib.sha256(os.fsencode(os.path.abspath(runtime))).hexdigest()[:16]


def of(runtime) -> list[Path]:
    """The cgroup directories of the kernel with this runtime that exist now."""
    try:
        _, parents = _hierarchies()
    except OSError:
        return []
    name = _cgroup_name(runtime)
    return [p / name for p in dict.fromkeys(parents.values()) if (p / name).is_dir()]


_BOUND_NAMES = {"memory": "memory bound", "pids": "process bound"}


def enter(runtime: str, limits: dict) -> tuple[list[str], list[Path]]:
    """Make this kernel's cgroups, set their bounds and move this process in: what failed, and
    the cgroups entered."""
    wanted = {c: limits.get(k) for c, k in (("memory", "memory_bytes"), ("pids", "pids")) if limits.get(k)}
    if not wanted:
        return [], []
    try:
        version, parents = _hierarchies()
    except OSError as exc:
        return [f"no {_BOUND_NAMES[c]}: cannot read the cgroups ({exc.strerror})" for c in wanted], []
    problems, entered, name = [], [], _cgroup_name(runtime)
    for controller, value in wanted.items():
        parent = parents.get(controller)
        if parent is None:
            problems.append(f"no {_BOUND_NAMES[controller]}: no cgroup {controller} controller is mounted")
            continue
        directory = parent / name
        try:
            if version == "v2":
                _enable_v2(parent, controller)
            directory.mkdir(exist_ok=True)
            for file, text in _bound_files(version, controller, value):
                target = directory / file
                if file.endswith(("memsw.limit_in_bytes", "swap.max")) and not target.exists():
                    continue  # no swap accounting here: the memory bound alone holds
                target.write_text(text)
            (directory / "cgroup.procs").write_text(str(os.getpid()))
            entered.append(directory)
        except OSError as exc:
            problems.append(f"no {_BOUND_NAMES[controller]}: {directory}: {exc.strerror or exc}")
    return problems, list(dict.fromkeys(entered))


def _bound_files(version: str, controller: str, value: int) -> list[tuple[str, str]]:
    if controller == "memory":
        if version == "v2":
            return [("memory.max", str(value)), ("memory.swap.max", "0")]
        return [("memory.limit_in_bytes", str(value)), ("memory.memsw.limit_in_bytes", str(value))]
    return [("pids.max", str(value))]


def _enable_v2(parent: Path, controller: str) -> None:
    control = parent / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        control.write_text(f"+{controller}")


def missing_bounds() -> list[str]:
    """Which of the memory and process bounds this machine cannot set, one line each; empty when both hold.

    It makes and removes a probe cgroup for each controller, as the launcher would.
    """
    problems = []
    try:
        version, parents = _hierarchies()
    except OSError as exc:
        return [f"no memory bound and no process bound: cannot read the cgroups ({exc.strerror})"]
    for controller in ("memory", "pids"):
        parent = parents.get(controller)
        if parent is None:
            problems.append(f"no {_BOUND_NAMES[controller]}: no cgroup {controller} controller is mounted")
            continue
        probe = parent / f"perfcourse-probe-{os.getpid()}"
        try:
            if version == "v2":
                _enable_v2(parent, controller)
            probe.mkdir()
            try:
                first = _bound_files(version, controller, 1 << 40)[0][0]
                if not (probe / first).exists():
                    raise OSError(0, f"{first} is missing")
            finally:
                probe.rmdir()
        except OSError as exc:
            problems.append(f"no {_BOUND_NAMES[controller]}: {parent}: {exc.strerror or exc}")
    return problems


CLEANUP_SECONDS = 30  # how long teardown waits for a kernel's killed processes to exit


def cleanup(runtime, wait: float = CLEANUP_SECONDS) -> list[str]:
    """Kill whatever is left in the cgroups of the kernel with this runtime, wait for it to exit,
    then remove the cgroups. Never raises: what could not be done is returned in words.

    A cgroup whose processes are still exiting cannot be removed (EBUSY); a few thousand forks
    take a moment to exit even after SIGKILL. Teardown waits up to `wait` seconds, then leaves the
    cgroup behind and says so: cleaning up after a student never costs that student's grade.
    """
    problems = []
    name = _cgroup_name(runtime)
    for directory in of(runtime):
        kill = directory / "cgroup.kill"
        if kill.exists():  # cgroup v2: the kernel kills them all at once, forks included
            try:
                kill.write_text("1")
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while True:
            left = _kill_members(directory, name)
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    problems.append(f"the kernel's processes did not exit within {wait:g} s of being killed "
                                    f"({left} left; {exc.strerror or exc}): its cgroup was left behind")
                    break
                time.sleep(0.02 if left else 0.005)
    return problems


def _kill_members(directory: Path, name: str) -> int:
    """SIGKILL every process in the cgroup; a pid is checked to be a member through its pidfd."""
    try:
        pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return 0
    for pid in pids:
        try:
            handle = os.pidfd_open(pid)
        except OSError:
            continue  # gone already
        try:
            # Through the pidfd the pid cannot be reused under us: check it is still a member.
            with open(f"/proc/{pid}/cgroup") as file:
                member = any(line.rstrip("\n").split(":", 2)[-1].endswith("/" + name) for line in file)
            if member:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(handle)
    return len(pids)
