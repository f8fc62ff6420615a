"""`make student-lab`: JupyterLab as a student has it, in a sandbox that holds only the publication.

The server, and every terminal and kernel it starts, runs in bubblewrap (the grader's sandbox
tool) over an empty root where only these are mounted:

- the system's folders and the Python environment, read-only (not the course's own package:
  nothing a student's server runs needs it);
- the student's Jupyter settings (deploy/jupyterhub/student/), read-only;
- the course's exchange, where Fetch reads the released lessons and Submit writes;
- the publication (`perfcourse publish`'s folder), the server's working folder, writable;
- folders the caller shares on purpose (`--share`: a test's scratch Jupyter settings).

source/, samples/, the gradebook and grader_config.py are not mounted, so no path reaches them,
from a terminal or a kernel alike. Run as root, the server drops to nobody (uid 65534) for good,
so the exchange's own permissions (nbgrader makes a course's inbound/ writable, not listable)
keep other students' submissions out of reach too; run as another user, it stays that user
inside a user namespace of its own.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .course import CourseError
from .grading import sandbox

HOME = sandbox.HOME          # a tmpfs: the server's home, runtime files and caches
WORKDIR = sandbox.WORKDIR    # where the publication is mounted: the server's root folder


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _readable_folder(value: str, what: str) -> Path:
    path = Path(value).resolve()
    if not path.is_dir():
        raise CourseError(f"student-lab: {what} {value} is not a folder")
    return path


def command(publication: Path, exchange: Path, settings: Path, course: Path, shared: list[Path],
            lab_args: list[str]) -> list[str]:
    """bubblewrap's command line for JupyterLab on `publication`, with nothing else of `course` mounted."""
    bwrap = sandbox.bubblewrap()
    if bwrap is None:
        raise CourseError("student-lab: bubblewrap is missing (apt-get install bubblewrap): without it a "
                          "student's terminal could read the whole course")
    python = sandbox.python_directories(with_package=False)
    # What may be mounted from inside the course: the environment, the student's settings, the
    # exchange and the publication. A shared folder that holds the course, or lies in it, is refused.
    for folder in shared:
        if _inside(course, folder) or _inside(folder, course):
            raise CourseError(f"student-lab: --share {folder} would put the course in the student's reach")
    line = [bwrap]
    for directory in sandbox.SYSTEM_DIRECTORIES:
        line += ["--ro-bind-try", directory, directory]
    # /tmp before the binds: a folder bound below it (a test's scratch settings) must stay on top.
    line += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
    bind = sandbox.Binder(line)
    for directory in python:
        bind("--ro-bind", directory)
    bind("--ro-bind", str(settings))
    bind("--bind", str(exchange))
    for folder in shared:
        bind("--bind", str(folder))
    line += ["--perms", "0755", "--tmpfs", HOME, "--bind", str(publication), WORKDIR,
             "--remount-ro", "/", "--chdir", WORKDIR]
    if os.geteuid() == 0:
        # No user namespace: the sandbox's root must be able to become nobody, then nothing.
        line += ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                 "--cap-drop", "ALL", "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        line += ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    # The network stays the host's: the browser reaches the server on its port.
    jupyter = [str(Path(sys.prefix) / "bin" / "jupyter"), "lab", f"--notebook-dir={WORKDIR}", *lab_args]
    return line + ["--die-with-parent", "--",
                   sys.executable, "-I", "-S", "-c", sandbox.SHIM,
                   str(sandbox.KERNEL_UID), str(sandbox.KERNEL_GID), "", HOME, WORKDIR, "--", *jupyter]


def environment(settings: Path, exchange: Path, course_id: str) -> dict:
    """The server's environment: the grader's allow-list for kernels, its own home, and the
    student's nbgrader settings (which course, which exchange)."""
    env = sandbox.kernel_environment(os.environ, HOME, "student-lab",
                                     "nobody" if os.geteuid() == 0 else os.environ.get("USER"))
    env["PATH"] = os.pathsep.join([str(Path(sys.prefix) / "bin"), env.get("PATH", "/usr/bin:/bin")])
    env.update(JUPYTER_CONFIG_PATH=str(settings), PERFCOURSE_COURSE_ID=course_id,
               PERFCOURSE_EXCHANGE=str(exchange), SHELL="/bin/bash")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perfcourse.student_lab", description=__doc__.splitlines()[0])
    parser.add_argument("publication", help="the folder `perfcourse publish` wrote")
    parser.add_argument("--exchange", required=True, help="the course's nbgrader exchange")
    parser.add_argument("--settings", required=True, help="the student's Jupyter settings (JUPYTER_CONFIG_PATH)")
    parser.add_argument("--course-id", required=True)
    parser.add_argument("--course", default=".", help="the course's root, none of which but the above is mounted")
    parser.add_argument("--share", action="append", default=[], help="a folder to mount writable as well")
    parser.epilog = "After --: JupyterLab's own options."
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    options, lab_args = parser.parse_args(argv[:split]), argv[split + 1:]
    try:
        publication = _readable_folder(options.publication, "the publication")
        exchange = _readable_folder(options.exchange, "the exchange")
        settings = _readable_folder(options.settings, "the student's settings")
        course = _readable_folder(options.course, "the course")
        shared = [_readable_folder(folder, "--share") for folder in options.share]
        line = command(publication, exchange, settings, course, shared, lab_args)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # As root, the sandbox's first step (sandbox.SHIM) hands the home and the publication to
    # nobody, who writes there from then on (fetched lessons, saved notebooks).
    os.execvpe(line[0], line, environment(settings, exchange, options.course_id))


if __name__ == "__main__":
    sys.exit(main())
