"""Real services for the cluster tests: a Dask scheduler and workers, and a PostgreSQL server.

Each runs as its own processes on 127.0.0.1, on ports free at the time, and is stopped (its whole
process group) when its context ends, whatever happened inside.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DASK = str(Path(sys.executable).parent / "dask")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen, grace: float = 5) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):  # and whatever it started (graders, kernels)
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)


class DaskCluster:
    """`dask scheduler` and `dask worker` processes (one thread each, no nanny, so a killed worker stays dead)."""

    def __init__(self, logs: Path):
        self.logs, self.port = logs, free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _start(self, args: list[str], log: str) -> subprocess.Popen:
        with open(self.logs / log, "ab") as out:
            return subprocess.Popen([DASK, *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self, workers: int) -> "DaskCluster":
        self.scheduler = self._start(["scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--no-dashboard"], "scheduler.log")
        for index in range(workers):
            self.workers.append(self._start(
                ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                 "--name", f"worker-{index}", "--death-timeout", "20"], f"worker-{index}.log"))
        self.wait_for_workers(workers)
        return self

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=30, set_as_default=False)

    def wait_for_workers(self, count: int, timeout: float = 90) -> None:
        client = self.client()
        try:
            client.wait_for_workers(count, timeout=timeout)
        finally:
            client.close()

    def stop(self) -> None:
        for process in self.workers + ([self.scheduler] if self.scheduler else []):
            _stop(process)

    def log(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.logs.glob("*.log")))


@contextlib.contextmanager
def dask_cluster(logs: Path, workers: int = 2):
    cluster = DaskCluster(logs)
    try:
        yield cluster.start(workers)
    finally:
        cluster.stop()


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def postgresql():
    """A throwaway PostgreSQL server on a loopback port; yields its SQLAlchemy URL (database 'postgres').

    initdb refuses root, so as root the server runs as `nobody` in a folder that user owns."""
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="perfcourse-pg-"))
    base.chmod(0o755)
    data, port = base / "data", free_port()
    as_user: list[str] = []
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        for folder in (base,):
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        as_user = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "HOME": str(base)}
    run = lambda *args: subprocess.run(as_user + [str(bindir / args[0]), *args[1:]], cwd=base, env=env,  # noqa: E731
                                       capture_output=True, text=True, check=True)
    try:
        run("initdb", "-D", str(data), "-U", "grader", "--auth=trust", "-E", "UTF8", "--locale=C")
        run("pg_ctl", "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60", "-o",
            f"-h 127.0.0.1 -p {port} -k {base}", "start")
        yield f"postgresql://grader@127.0.0.1:{port}/postgres"
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{exc.cmd[len(as_user)]} failed: {exc.stderr or exc.stdout}") from None
    finally:
        subprocess.run(as_user + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       cwd=base, env=env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
