"""grader_config.py is the nbgrader configuration that a plain `nbgrader` run uses."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, copy_course

from perfcourse.nbgrader_bridge import config as course_config
from perfcourse.nbgrader_bridge import nbgrader_env


@pytest.mark.e2e
def test_a_plain_nbgrader_run_reads_grader_config(tmp_path):
    root = copy_course(tmp_path / "course")
    with open(root / "grader_config.py", "a") as config:
        config.write('\nc.CourseDirectory.release_directory = "release-from-grader-config"\n')
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", "performance-01", "--force"],
                   cwd=root, env=nbgrader_env(), check=True, capture_output=True)
    assert (root / "release-from-grader-config" / "performance-01" / "performance-01.ipynb").is_file()


def test_grader_config_sets_the_course_settings():
    config = course_config(ROOT)
    assert config.CourseDirectory.course_id == "jax-performance"
    assert config.Execute.kernel_name == "jax-cpu"
    assert 0 < config.Execute.timeout <= 600
    assert config.OverwriteCells.add_missing_cells is True
    assert "nbgrader.preprocessors.ClearHiddenTests" in config.GenerateFeedback.preprocessors


def test_the_jax_cpu_kernel_is_installed_in_this_environment():
    # The kernel of the environment running these tests (.venv, or .venv-newest-jax).
    spec = json.loads((Path(sys.prefix) / "share" / "jupyter" / "kernels" / "jax-cpu" / "kernel.json").read_text())
    assert spec["env"]["JAX_PLATFORMS"] == "cpu"
    assert spec["argv"][0] == sys.executable


def test_both_grading_kernels_get_the_configured_xla_flags_last(monkeypatch):
    from types import SimpleNamespace

    from perfcourse.grading.execute import GuardedExecute

    guard = GuardedExecute(config=course_config(ROOT))
    assert guard.xla_flags, "grader_config.py sets GuardedExecute.xla_flags"
    guard._submission, guard._trusted = None, SimpleNamespace(channels=Path("/nowhere"))
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    env = guard._kernel_env("trusted", Path("/nowhere"))
    assert env["XLA_FLAGS"] == f"--xla_backend_optimization_level=3 {guard.xla_flags}"  # XLA reads the last
    monkeypatch.delenv("XLA_FLAGS")
    assert guard._kernel_env("trusted", Path("/nowhere"))["XLA_FLAGS"] == guard.xla_flags
    assert guard.xla_flags in guard._trusted_settings()  # a kept trusted kernel started without them is not reused


def test_this_jax_starts_and_computes_with_the_grading_kernels_xla_flags():
    # XLA ends the process at a flag it does not know: every grading kernel would die at its first
    # computation. This is the JAX of the environment running the tests (.venv, or .venv-newest-jax).
    flags = course_config(ROOT).GuardedExecute.xla_flags
    proc = subprocess.run([sys.executable, "-c", "import jax.numpy as jnp; print(float(jnp.arange(4.0).sum()))"],
                          env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "XLA_FLAGS": flags},
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "6.0", proc.stderr[-2000:]


@pytest.mark.slow
def test_a_new_gradebook_is_stamped_with_the_migration_alembic_names(tmp_path):
    """nbgrader_bridge reads the revision in this process; `alembic heads` on nbgrader's scripts agrees."""
    import sqlite3

    from nbgrader.dbutil import _temp_alembic_ini

    from perfcourse import nbgrader_bridge

    with _temp_alembic_ini("sqlite:////nowhere/gradebook.db") as ini:
        heads = subprocess.run([str(Path(sys.executable).parent / "alembic"), "-c", ini, "heads"],
                               capture_output=True, text=True, check=True).stdout
    assert heads.split()[0] == nbgrader_bridge.newest_migration()
    course = copy_course(tmp_path / "course")
    with nbgrader_bridge.gradebook(course) as gradebook:
        gradebook.add_student("alice")
    with sqlite3.connect(course / "gradebook.db") as db:
        assert (db.execute("SELECT version_num FROM alembic_version").fetchall()
                == [(nbgrader_bridge.newest_migration(),)])


@pytest.mark.parametrize("toml, line", [
    ('[publicaton]\nrepository = "org/course"\n', "[publicaton]: unknown section (did you mean 'publication'?)"),
    ('[publication]\nrepositry = "org/course"\n', "[publication] repositry: unknown key (did you mean 'repository'?)"),
    ('[hub]\nulr = "https://hub.example.edu"\n', "[hub] ulr: unknown key (did you mean 'url'?)"),
    ('[hub]\naddress = "https://hub.example.edu"\n', "[hub] address: unknown key (known: url)"),
    ('[colab]\nrepository = "org/course"\n', "[colab] repository is now [publication] repository"),
    ('[publication]\nbranch = 3\n', "[publication] branch must be a str, got 3"),
])
def test_each_course_toml_typo_is_one_line_naming_the_closest_known_name(tmp_path, toml, line):
    from perfcourse.course import CourseError, settings

    (tmp_path / "course.toml").write_text(toml)
    with pytest.raises(CourseError) as raised:
        settings(tmp_path)
    [said] = str(raised.value).splitlines()
    assert said.startswith(f"{tmp_path / 'course.toml'}: {line}"), said


def test_every_course_toml_problem_is_named_at_once_and_a_missing_file_too(tmp_path):
    from perfcourse.course import CourseError, settings

    (tmp_path / "course.toml").write_text('[publicaton]\nrepository = "o/n"\n[hub]\nulr = ""\n')
    with pytest.raises(CourseError) as raised:
        settings(tmp_path)
    assert len(str(raised.value).splitlines()) == 2
    (tmp_path / "course.toml").unlink()
    with pytest.raises(CourseError, match=r"course\.toml: missing"):
        settings(tmp_path)


def test_the_courses_own_course_toml_is_valid_and_read_into_one_object():
    from perfcourse.course import settings

    read = settings(ROOT)
    assert (read.repository, read.branch, read.hub_url) == ("", "main", "")
