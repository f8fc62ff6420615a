"""Run real nbgrader from the course root, so it reads nbgrader_config.py -> grader_config.py."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .course import CourseError


def nbgrader_env() -> dict:
    # nbgrader starts `alembic` and Jupyter kernels by name: this environment's bin/ comes first.
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_nbgrader(root: Path, *args: str, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in `root`; on failure raise one CourseError with nbgrader's last error line."""
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root, env=nbgrader_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    if not quiet:
        sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        lines = proc.stdout.strip().splitlines()
        reason = ([line for line in lines if "ERROR" in line] or lines or ["no output"])[-1].strip()
        raise CourseError(f"nbgrader {' '.join(args)} failed in {root}: {reason}")
    return proc
