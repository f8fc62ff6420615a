"""The course's JupyterHub on this one machine, for a trial (`make hub`); tests/test_hub.py uses its pieces.

Run as root with the course's environment (`make hub` does: `.venv/bin/python deploy/jupyterhub/trial.py`):

1. checks what the hub needs (root, useradd, Node.js and configurable-http-proxy from `npm ci` in
   this folder, bubblewrap, the `jax-cpu` kernel) and says what is missing;
2. creates local Unix users, a demo instructor `pc-instructor` and two demo students
   `pc-student1`, `pc-student2` (homes mode 0700: students cannot read each other's files);
3. gives the instructor a course root (a copy of this repository in their home, owned by them,
   every lesson generated into its gradebook) and creates the shared exchange (mode 1777);
4. makes sure every user can run the course's Python environment (see `user_environment`);
5. runs JupyterHub with jupyterhub_config.py on http://127.0.0.1:PORT, logging everyone in with one
   shared trial password (printed; a local trial only: see that file's AUTHENTICATION note).

Stop it with Ctrl+C. The users, their homes and the course stay for the next trial;
`trial.py --remove-users` removes the three users and their homes.
"""
from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONFIG = HERE / "jupyterhub_config.py"
PROXY = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
INSTRUCTOR = "pc-instructor"
STUDENTS = ("pc-student1", "pc-student2")


class TrialError(Exception):
    """Something the trial needs is missing; the message says what to do."""


def require_tools() -> None:
    """Everything the hub needs on this machine, each missing piece named with how to get it."""
    problems = []
    if os.geteuid() != 0:
        problems.append("run it as root: the hub starts each user's server as that Unix user "
                        "(LocalProcessSpawner) and creates the demo users")
    for tool, package in (("useradd", "passwd"), ("userdel", "passwd"), ("node", "nodejs"),
                          ("bwrap", "bubblewrap")):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is missing: apt-get install {package}")
    if not PROXY.is_file():
        problems.append(f"configurable-http-proxy is not installed: run `npm ci` in {HERE} "
                        f"(`make hub` does; it needs npm: apt-get install npm)")
    try:
        import jupyterhub  # noqa: F401 - only whether it is there
    except ImportError:
        problems.append(f"the jupyterhub package is missing from {sys.prefix}: "
                        "pip install -r requirements-cpu.txt (`make hub` does)")
    try:
        from perfcourse import kernels
    except ImportError:
        problems.append(f"the course's tool (perfcourse) is missing from {sys.prefix}: run this with the "
                        "course's environment, .venv/bin/python (`make hub` does)")
    else:
        try:
            kernels.require(kernels.DEFAULT)
        except Exception as exc:  # noqa: BLE001 - CourseError says how to install the kernel
            problems.append(f"{exc}")
    if problems:
        raise TrialError("the course's JupyterHub cannot start:\n- " + "\n- ".join(problems))


# --- local users -------------------------------------------------------------------------------
def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def create_user(name: str, home: Path) -> pwd.struct_passwd:
    """A local user with its own group and a private home (0700); an existing one is kept as it is."""
    if not user_exists(name):
        home.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--user-group",
                        "--shell", "/bin/bash", name], check=True, capture_output=True, text=True)
    entry = pwd.getpwnam(name)
    os.chmod(entry.pw_dir, 0o700)
    return entry


def end_processes_of(uid: int) -> None:
    """Kill what still runs as this user (its servers and kernels), by process id."""
    import signal

    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def remove_user(name: str) -> None:
    """The user, its group and its home, and whatever still runs as it."""
    if not user_exists(name):
        return
    end_processes_of(pwd.getpwnam(name).pw_uid)
    subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)  # exits 12 if no mail spool


def run_as(entry: pwd.struct_passwd, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a command as the user; a program the user may not execute reads as exit status 126."""
    try:
        return subprocess.run(argv, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                              env={"PATH": "/usr/bin:/bin", "HOME": entry.pw_dir}, capture_output=True,
                              text=True, **kwargs)
    except PermissionError as exc:
        return subprocess.CompletedProcess(argv, 126, "", f"{exc}")


# --- the Python environment every user's server runs in ----------------------------------------
def user_environment(target: Path, someone: pwd.struct_passwd) -> Path:
    """This environment, as a path every user can run: itself where they can, else a linked copy.

    A user's server runs the environment's Python as that user. Where the environment or the Python
    it was made from lies in a folder other users cannot enter (pyenv under /root, mode 0700), a
    copy under `target` made of hard links (no space, a few seconds) takes its place: the base
    Python and the environment, with the paths that name them rewritten in new files (the links'
    targets stay untouched).
    """
    probe = [f"{sys.prefix}/bin/python", "-c", "import jupyterhub, nbgrader, perfcourse"]
    if run_as(someone, probe).returncode == 0:
        return Path(sys.prefix)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    os.chmod(target, 0o755)
    base, env = target / "python", target / "env"
    stdlib = Path("lib") / f"python{sys.version_info.major}.{sys.version_info.minor}"
    # Not the base's own site-packages (the environment has its own) nor the standard library's tests.
    link_copy(Path(sys.base_prefix), base, skip={stdlib / "site-packages", stdlib / "test"})
    link_copy(Path(sys.prefix), env)
    relocate(Path(sys.base_prefix), base, Path(sys.prefix), env)
    check = run_as(someone, [f"{env}/bin/python", *probe[1:]])
    if check.returncode != 0:
        raise TrialError(f"user {someone.pw_name} cannot run the course's Python, even from the copy "
                         f"in {env}:\n{check.stderr[-2000:]}\n(is {ROOT} readable by every user?)")
    return env


def link_copy(source: Path, target: Path, skip: set[Path] = frozenset()) -> None:
    """`cp -al`: the tree as hard links (a plain copy where the two lie on different file systems)."""
    if not skip:
        if subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True).returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            subprocess.run(["cp", "-a", str(source), str(target)], check=True)
        return
    target.mkdir()
    shutil.copystat(source, target)
    for entry in source.iterdir():
        relative = entry.relative_to(source)
        if relative in skip:
            (target / relative).mkdir()
        elif any(relative in s.parents for s in skip):
            link_copy(entry, target / relative, {s.relative_to(relative) for s in skip if relative in s.parents})
        else:
            link_copy(entry, target / relative)


def rewrite(path: Path, data: bytes) -> None:
    """A new file in place of a hard link, so the original is never changed."""
    mode = path.stat().st_mode & 0o7777
    path.unlink()
    path.write_bytes(data)
    os.chmod(path, mode)


def relocate(old_base: Path, base: Path, old_env: Path, env: Path) -> None:
    """Point the copies at each other: the Python's library path, the environment's links and scripts."""
    # The interpreter finds libpython through its RUNPATH, which names the original folder: make it
    # $ORIGIN-relative (same length or shorter, padded with NULs: the string table keeps its size).
    old_lib, new_lib = f"{old_base}/lib".encode(), b"$ORIGIN/../lib"
    for exe in (base / "bin").glob("python3*"):
        if exe.is_symlink() or not exe.is_file():
            continue
        data = exe.read_bytes()
        if old_lib + b"\0" in data and len(new_lib) <= len(old_lib):
            rewrite(exe, data.replace(old_lib + b"\0", new_lib + b"\0" * (len(old_lib) - len(new_lib) + 1)))
    cfg = env / "pyvenv.cfg"
    rewrite(cfg, cfg.read_bytes().replace(str(old_base).encode(), str(base).encode())
            .replace(str(old_env).encode(), str(env).encode()))
    for entry in (env / "bin").iterdir():
        if entry.is_symlink():
            pointed = os.readlink(entry)
            if pointed.startswith(str(old_base)):
                entry.unlink()
                entry.symlink_to(str(base) + pointed[len(str(old_base)):])
        elif entry.is_file():
            with open(entry, "rb") as f:
                head = f.read(2)
            if head == b"#!":
                data = entry.read_bytes()
                if str(old_env).encode() in data.split(b"\n", 1)[0]:
                    rewrite(entry, data.replace(str(old_env).encode(), str(env).encode(), 1))
    for spec in (env / "share" / "jupyter" / "kernels").glob("*/kernel.json"):
        data = spec.read_bytes()
        if str(old_env).encode() in data:
            rewrite(spec, data.replace(str(old_env).encode(), str(env).encode()))


# --- the course and the exchange ---------------------------------------------------------------
def prepare_course(course: Path, owner: pwd.struct_passwd, lessons: list[str]) -> str:
    """The instructor's course root: a copy of the course, lessons generated, owned by them. Its course id."""
    from perfcourse import nbgrader_bridge
    from perfcourse.course import copy_course

    if not course.exists():
        copy_course(ROOT, course)
        env = {k: v for k, v in os.environ.items() if k != "PERFCOURSE_EXCHANGE"}
        release = subprocess.run([sys.executable, "-m", "perfcourse.cli", "release",
                                  *(arg for lesson in lessons for arg in ("--lesson", lesson))],
                                 cwd=course, env=env, capture_output=True, text=True)
        if release.returncode != 0:
            raise TrialError(f"`perfcourse release` in {course} exited {release.returncode}:\n"
                             f"{release.stdout}\n{release.stderr}")
        subprocess.run(["chown", "-R", f"{owner.pw_uid}:{owner.pw_gid}", str(course)], check=True)
        os.chmod(course, 0o700)
    return nbgrader_bridge.coursedir(course).course_id


def prepare_exchange(exchange: Path) -> None:
    """nbgrader's shared exchange: every user writes, only owners delete (1777)."""
    exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(exchange, 0o1777)


def settings(*, course: Path, course_id: str, exchange: Path, env: Path, state: Path, instructors,
             students, port: int, hub_port: int, proxy_api_port: int, password: str,
             service_token: str = "") -> dict:
    """The PERFCOURSE_HUB_* variables jupyterhub_config.py reads."""
    return {"PERFCOURSE_HUB_COURSE": str(course), "PERFCOURSE_HUB_COURSE_ID": course_id,
            "PERFCOURSE_HUB_EXCHANGE": str(exchange), "PERFCOURSE_HUB_ENV": str(env),
            "PERFCOURSE_HUB_STATE": str(state), "PERFCOURSE_HUB_INSTRUCTORS": ",".join(instructors),
            "PERFCOURSE_HUB_STUDENTS": ",".join(students), "PERFCOURSE_HUB_IP": "127.0.0.1",
            "PERFCOURSE_HUB_PORT": str(port), "PERFCOURSE_HUB_HUB_PORT": str(hub_port),
            "PERFCOURSE_HUB_PROXY_API_PORT": str(proxy_api_port),
            "PERFCOURSE_HUB_TRIAL_PASSWORD": password, "PERFCOURSE_HUB_SERVICE_TOKEN": service_token}


def hub_command() -> list[str]:
    return [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)]


def hub_env(values: dict) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERFCOURSE_HUB_", "JUPYTERHUB_", "JUPYTER_")) and k != "PERFCOURSE_EXCHANGE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")])
    return dict(env, **values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1 (default 8000)")
    parser.add_argument("--state", type=Path, default=Path("/srv/perfcourse-hub"),
                        help="the hub's database, the exchange and the users' copy of the environment")
    parser.add_argument("--homes", type=Path, default=Path("/home"), help="where the demo users' homes go")
    parser.add_argument("--remove-users", action="store_true", help="remove the demo users and their homes")
    args = parser.parse_args(argv)
    try:
        if args.remove_users:
            for name in (INSTRUCTOR, *STUDENTS):
                remove_user(name)
            print(f"removed {INSTRUCTOR}, {', '.join(STUDENTS)} (the hub's state in {args.state} stays)")
            return 0
        require_tools()
        instructor = create_user(INSTRUCTOR, args.homes / INSTRUCTOR)
        students = [create_user(name, args.homes / name) for name in STUDENTS]
        args.state.mkdir(parents=True, exist_ok=True)
        os.chmod(args.state, 0o755)
        course = Path(instructor.pw_dir) / "course"
        from perfcourse.course import lessons as all_lessons
        course_id = prepare_course(course, instructor, all_lessons(ROOT))
        exchange = args.state / "exchange"
        prepare_exchange(exchange)
        env = user_environment(args.state / "python", students[0])
        hub_state = args.state / "hub"
        hub_state.mkdir(exist_ok=True)
        os.chmod(hub_state, 0o700)
        password = os.environ.get("PERFCOURSE_HUB_TRIAL_PASSWORD") or secrets.token_urlsafe(9)
        values = settings(course=course, course_id=course_id, exchange=exchange, env=env, state=hub_state,
                          instructors=[INSTRUCTOR], students=STUDENTS, port=args.port,
                          hub_port=args.port + 81, proxy_api_port=args.port + 1, password=password)
    except TrialError as exc:
        print(f"make hub: {exc}", file=sys.stderr)
        return 2
    print(f"The course's JupyterHub: http://127.0.0.1:{args.port}/ (Ctrl+C stops it)\n"
          f"  instructor: {INSTRUCTOR} (Formgrader on {course})\n"
          f"  students:   {', '.join(STUDENTS)}\n"
          f"  password:   {password} (one shared trial password: a local trial only)\n"
          f"  exchange:   {exchange}", flush=True)
    os.chdir(hub_state)
    os.execve(sys.executable, hub_command(), hub_env(values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
