"""Start a grading kernel inside bubblewrap, with resource limits.

The grader's kernel manager runs `python -m perfcourse.grading.sandbox KERNEL_ARGV...` in the
submission's scratch directory (its copy under autograded/<student>/<lesson>/). This launcher
sets the limits, then replaces itself with bubblewrap running the kernel:

- no network (a fresh network namespace with nothing in it), no other processes visible;
- an empty filesystem into which only the system directories (/usr, /lib, /etc, ...), the
  Python environment and the directory holding this package are mounted, read-only: source/,
  release/, the gradebook, other students' files and anything else on the machine are not
  there at all;
- read-write: only the scratch directory and the kernel's private runtime directory
  (connection file and IPC sockets: the kernel talks to the grader over Unix sockets,
  since it has no network), which is also the kernel's TMPDIR;
- limits: address space, CPU seconds, size of any file written, open files.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from pathlib import Path

ENV_SETTINGS = "PERFCOURSE_SANDBOX"  # JSON: mode, root, runtime, limits


class SandboxUnavailable(RuntimeError):
    pass


def bubblewrap() -> str | None:
    return shutil.which("bwrap")


SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")


def bwrap_command(kernel_argv: list[str], scratch: Path, runtime: Path, python_prefix: Path,
                  package_dir: Path) -> list[str]:
    """An empty root with only the system, Python and this package read-only, and two writable folders."""
    command = [bubblewrap() or "bwrap"]
    for directory in SYSTEM_DIRECTORIES:
        command += ["--ro-bind-try", directory, directory]
    for needed in dict.fromkeys((python_prefix, Path(sys.base_prefix), package_dir)):
        command += ["--ro-bind", str(needed), str(needed)]
    command += [
        "--dev", "/dev",
        "--proc", "/proc",
        "--bind", str(scratch), str(scratch),
        "--bind", str(runtime), str(runtime),
        "--remount-ro", "/",  # after the binds: everything but those two folders takes no writes
        "--chdir", str(scratch),
        "--setenv", "HOME", str(scratch),
        "--setenv", "TMPDIR", str(runtime),
        "--setenv", "MPLCONFIGDIR", str(runtime / "matplotlib"),
        # ipykernel watches JPY_PARENT_PID, a process it cannot see from its own PID namespace;
        # --die-with-parent ends the kernel with its grader instead.
        "--unsetenv", "JPY_PARENT_PID",
        "--unshare-all",          # network, processes, IPC, hostname, cgroups
        "--die-with-parent",
        "--new-session",
        "--",
        *kernel_argv,
    ]
    return command


def apply_limits(limits: dict) -> None:
    def cap(kind, value):
        if value:
            resource.setrlimit(kind, (int(value), int(value)))

    cap(resource.RLIMIT_AS, limits.get("memory_bytes"))
    cap(resource.RLIMIT_CPU, limits.get("cpu_seconds"))
    cap(resource.RLIMIT_FSIZE, limits.get("file_bytes"))
    cap(resource.RLIMIT_NOFILE, limits.get("open_files"))


def main(argv: list[str]) -> None:
    settings = json.loads(os.environ.pop(ENV_SETTINGS))
    apply_limits(settings.get("limits", {}))
    # Whatever the kernel writes to its own stdout/stderr (not to the notebook) goes to a capped log.
    runtime = Path(settings["runtime"])
    log = os.open(runtime / "kernel.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    if settings["mode"] == "none":
        os.execvp(argv[0], argv)
    import perfcourse  # where the package lives: the kernel imports its guard and checks from there

    package_dir = Path(perfcourse.__file__).resolve().parents[1]
    command = bwrap_command(argv, Path.cwd(), runtime, Path(sys.prefix), package_dir)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
