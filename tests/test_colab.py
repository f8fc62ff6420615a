"""Release notebooks are self-contained: solved, they pass their public tests on what Colab has.

.venv-colab (made by `make test`) holds jax, jaxlib, numpy and matplotlib at the course's pins and
ipykernel, and nothing of the course: no perfcourse, no nbgrader, no papermill.
"""
import subprocess

import nbclient
import nbformat
import pytest

from conftest import ROOT, copy_course, kernelspec_dir

from perfcourse import release, samples
from perfcourse.course import FIGURE_TAG, lessons

pytestmark = pytest.mark.e2e  # kernels, graded classes or executed notebooks (make test, not make check)

COLAB_PYTHON = ROOT / ".venv-colab" / "bin" / "python"
SOLUTIONS = [s for s in samples.discover(ROOT) if s.case == "solution"]
# make test runs the first lesson on the Colab-like kernel (the path: stubs, figures, the
# environment cell); the nightly tier runs every lesson (about 13 s each on 2 cores).
EVERY_CHANGE = "performance-01"


@pytest.fixture(scope="module")
def colab_kernel(tmp_path_factory):
    if not COLAB_PYTHON.exists():
        pytest.fail(f"{COLAB_PYTHON} is missing: run 'make test', which creates it")
    return kernelspec_dir(tmp_path_factory.mktemp("jupyter"), "colab-like", str(COLAB_PYTHON),
                          {"JAX_PLATFORMS": "cpu"})


def test_the_colab_environment_has_nothing_of_the_course():
    for module in ("perfcourse", "nbgrader", "papermill"):
        proc = subprocess.run([COLAB_PYTHON, "-c", f"import {module}"], capture_output=True)
        assert proc.returncode != 0, f"{module} should not be importable in the Colab-like environment"
    proc = subprocess.run([COLAB_PYTHON, "-c", "import jax, numpy, matplotlib, ipykernel"], capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_every_lesson_has_a_solution_sample():
    assert sorted(s.lesson for s in SOLUTIONS) == lessons(ROOT)


@pytest.mark.parametrize("sample", [pytest.param(s, marks=() if s.lesson == EVERY_CHANGE else pytest.mark.nightly)
                                    for s in SOLUTIONS], ids=lambda s: s.lesson)
def test_solved_release_notebook_passes_its_public_tests(sample, colab_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(colab_kernel))
    nb = samples.build(ROOT, sample)
    workdir = tmp_path / "student"
    workdir.mkdir()
    nbclient.NotebookClient(nb, kernel_name="colab-like", timeout=300, allow_errors=True,
                            resources={"metadata": {"path": str(workdir)}}).execute()
    errors = [(i, out.get("ename"), out.get("evalue")) for i, cell in enumerate(nb.cells)
              if cell.cell_type == "code" for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{sample.lesson} failed outside the course's environment: {errors}"
    # The lesson's figure is drawn there too, by the notebook's own copy of the drawing code.
    drawn = [cell for cell in nb.cells if cell.cell_type == "code" and FIGURE_TAG in cell.metadata.get("tags", [])
             and any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))]
    assert drawn, f"{sample.lesson}: no figure drawn outside the course's environment"
    environment = "".join(out.get("text", "") for out in nb.cells[1].outputs)
    assert "jax " in environment and "backend" in environment, "the notebook opens with its environment cell"


def test_an_unfilled_notebook_first_fails_naming_the_first_task(colab_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(colab_kernel))
    nb = nbformat.read(ROOT / "release" / "performance-01" / "performance-01.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="colab-like", timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failure:
        client.execute()  # stops at the first error, as Run All does
    assert failure.value.ename == "NotImplementedError"
    assert failure.value.evalue.startswith("Task 1 (the jitted workload) is not done yet"), failure.value.evalue


def test_open_in_colab_links_come_only_from_the_setting(tmp_path):
    root = copy_course(tmp_path / "course")
    assert all("colab.research.google.com" not in p.read_text() for p in (root / "release").glob("*/*.ipynb"))
    (root / "course.toml").write_text('[publication]\nrepository = "example-org/jax-course"\nbranch = "spring"\n')
    release.generate(root, ["performance-01"])
    text = (root / "release" / "performance-01" / "performance-01.ipynb").read_text()
    assert ("https://colab.research.google.com/github/example-org/jax-course/blob/spring/"
            "release/performance-01/performance-01.ipynb") in text
    (root / "course.toml").write_text('[publication]\nrepository = "not a repository"\n')
    with pytest.raises(Exception, match="owner/name"):
        release.generate(root, ["performance-01"])
