"""Shared fixtures: the course root, scratch copies of the course, and the tool as a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import perfcourse.startup  # noqa: I001 (before anything that imports nbformat, and so jsonschema)
from perfcourse.course import copy_course as course_copy

ROOT = Path(__file__).resolve().parents[1]
# Copies of the seed artifacts the course was created from (../shared/seeds/ in the course's
# workspace), kept here so the suite stands alone: one JSON artifact per lesson that has one,
# and the performance-audit project's student text.
SEEDS = ROOT / "tests" / "data" / "seeds"


def pytest_configure(config):
    """make test's end-to-end tier runs with `--dist loadgroup`: each xdist_group on one worker, so
    a group's session fixtures are built once (the demo class is graded once). pytest-xdist 3.8
    groups a test by appending "@group" to its id, which pytest 9.2's structured ids ignore: the
    groups spread silently (pytest-dev/pytest-xdist#1386). Refuse to run rather than grade twice."""
    if config.getoption("dist", default="no") == "loadgroup" and not _ids_take_a_group():
        raise pytest.UsageError(f"pytest-xdist's --dist loadgroup cannot group tests on pytest {pytest.__version__} "
                                f"(pytest-dev/pytest-xdist#1386); requirements-cpu.txt pins one that can")
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None):
        _start_jax_as_the_grading_kernels_do()


def _start_jax_as_the_grading_kernels_do() -> None:
    """The tests run the checks in this process, as the trusted grading kernel runs them: with the
    grading kernels' XLA flags (GuardedExecute.xla_flags, grader_config.py). XLA reads XLA_FLAGS
    when JAX starts its backend, so it starts here; then the environment is as it was, and every
    process a test starts (kernels, the Colab and TPU-like runs, perfcourse) gets XLA's defaults
    or its own flags."""
    from perfcourse.grading.kernel_pair import xla_flags_after
    from perfcourse.nbgrader_bridge import config as course_config

    before = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = xla_flags_after(before, course_config(ROOT).GuardedExecute.xla_flags)
    try:
        import jax

        jax.devices()
    finally:
        if before is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = before


def _ids_take_a_group() -> bool:
    """Whether a test's id takes the "@group" suffix as pytest-xdist's loadgroup writes it."""
    class Probe(pytest.Item):
        def runtest(self):
            pass

    probe = object.__new__(Probe)  # no session needed: only the id is asked for
    probe._nodeid = "probe@group"
    try:
        return probe.nodeid == "probe@group"
    except AttributeError:  # the id lives elsewhere
        return False


def seed(lesson: str) -> dict:
    """The seed artifact of a lesson, from tests/data/seeds/."""
    path = SEEDS / f"{lesson}.json"
    if not path.is_file():
        raise LookupError(f"no seed artifact for {lesson} in {SEEDS}")
    return json.loads(path.read_text(encoding="utf-8"))


def copy_course(target: Path) -> Path:
    """A scratch course with the committed parts only (no gradebook, submissions or outputs)."""
    return course_copy(ROOT, target)


def perfcourse(*args: str, cwd: Path, check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """`perfcourse ARGS` in cwd; env adds to (or overrides) this process's environment."""
    proc = subprocess.run([sys.executable, "-m", "perfcourse.cli", *args], cwd=cwd,
                          text=True, capture_output=True, env={**os.environ, **env} if env else None)
    if check and proc.returncode != 0:
        raise AssertionError(f"perfcourse {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def course(tmp_path) -> Path:
    return copy_course(tmp_path / "course")


@pytest.fixture(scope="session")
def graded_demo(tmp_path_factory):
    """One scratch course on which `perfcourse demo` has run: release, sample class, autograde.

    The adversarial class is graded later in this same course (tests/test_adversarial.py), so the
    demo's grades.csv is kept here as the demo wrote it.
    """
    root = copy_course(tmp_path_factory.mktemp("demo") / "course")
    # The samples marked '# tier: nightly' are graded nightly. The pool is fixed at two workers:
    # the suite's other pytest worker shares the cores, and a pool that grows while that worker's
    # tests wait slows both (the growing pool is graded in tests/test_grade_workflow.py).
    proc = perfcourse("demo", "--quick", "--workers", "2", cwd=root)
    grades = (root / "grades.csv").read_text() if (root / "grades.csv").is_file() else ""
    return root, proc, grades


def kernelspec_dir(base: Path, name: str, python: str, env: dict) -> Path:
    """A Jupyter data directory holding one kernelspec; put it on JUPYTER_PATH to use the kernel."""
    folder = base / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python", "env": env,
    }))
    return base


TPU_LIKE_KERNEL = "jax-cpu-tpu-like"


@pytest.fixture(scope="session")
def tpu_like_jupyter(tmp_path_factory) -> Path:
    """A Jupyter data directory (for JUPYTER_PATH) with the kernel TPU_LIKE_KERNEL, shaped like
    an eight-chip TPU runtime (a TPU v5e-8): 8 devices, and float32 matrix products with bfloat16
    operands at the default precision (tests/bf16_operands.py)."""
    import bf16_operands

    return bf16_operands.kernelspec(tmp_path_factory.mktemp("jupyter"), TPU_LIKE_KERNEL, devices=8)


@pytest.fixture(scope="session")
def tpu_like_run(tmp_path_factory, tpu_like_jupyter):
    """lesson -> (error, artifact): the lesson's source notebook executed on the TPU-like kernel as
    `perfcourse artifacts` executes it (artifacts/execute.py), once per session, in a scratch
    course, and the artifact it would record, checked against the schema (not drawn: the artifact
    tests draw); error is None, or what `perfcourse artifacts` would have said, and then no artifact."""
    from perfcourse.artifacts import execute, record
    from perfcourse.course import CourseError

    runs: dict = {}

    def run(lesson: str):
        if lesson not in runs:
            course = copy_course(tmp_path_factory.mktemp(lesson) / "course")
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("JUPYTER_PATH", str(tpu_like_jupyter))
                try:
                    artifact = record.build(execute.execute(course, lesson, TPU_LIKE_KERNEL, progress=False))
                    record.validate(artifact, lesson)
                    runs[lesson] = None, artifact
                except CourseError as exc:
                    runs[lesson] = str(exc), None
        return runs[lesson]

    return run
