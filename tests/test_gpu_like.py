"""Every lesson on a backend shaped like a one-GPU machine, emulated on the CPU: TF32 products.

NVIDIA GPUs from the A100 on multiply float32 matrices in TF32 by default (tests/tf32_operands.py:
10 mantissa bits per operand, float32 sums; published, not measured here), and a Colab or cloud
GPU runtime has one device. The kernel here has both: JAX's CPU backend with one device and the
TF32 emulation. Each lesson's release notebook, solved as its solution sample is, runs its public
checks there, as a student's would (tests/test_colab.py does the same at float32, test_tpu_like.py
runs the source notebooks with bfloat16 passes on 8 devices). To keep it cheap it runs what
grading runs: the figure cells and the report cells after the last check are left out, as the
grader leaves them out.
"""
import nbclient
import nbformat
import pytest

from conftest import ROOT

from perfcourse import samples
from perfcourse.course import FIGURE_TAG

pytestmark = [pytest.mark.e2e,  # kernels, graded classes or executed notebooks
              pytest.mark.nightly,  # every lesson once more: nightly, to keep make test under 10 minutes
              pytest.mark.xdist_group("gpu-like")]

GPU_LIKE_KERNEL = "jax-cpu-gpu-like"
SOLUTIONS = [s for s in samples.discover(ROOT) if s.case == "solution"]


@pytest.fixture(scope="module")
def gpu_like_jupyter(tmp_path_factory):
    import tf32_operands

    return tf32_operands.kernelspec(tmp_path_factory.mktemp("jupyter"), GPU_LIKE_KERNEL)


def graded_part(nb):
    """The notebook as grading runs it: without figure cells and without the cells after the last check."""
    last = max(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade"))
    nb.cells = [c for i, c in enumerate(nb.cells)
                if i <= last and FIGURE_TAG not in c.metadata.get("tags", [])]
    return nb


def test_the_kernel_has_one_device_and_tf32_products(gpu_like_jupyter, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(gpu_like_jupyter))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import jax\nfrom perfcourse.checks import numerics\nprint(jax.device_count(), numerics.matmul_precision())")])
    nbclient.NotebookClient(nb, kernel_name=GPU_LIKE_KERNEL, timeout=120).execute()
    assert nb.cells[0].outputs[0]["text"].strip() == "1 TF32"


@pytest.mark.parametrize("sample", SOLUTIONS, ids=lambda s: s.lesson)
def test_solved_release_notebook_passes_its_public_checks_with_tf32(sample, gpu_like_jupyter, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(gpu_like_jupyter))
    nb = graded_part(samples.build(ROOT, sample))
    nbclient.NotebookClient(nb, kernel_name=GPU_LIKE_KERNEL, timeout=300, allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [(i, out.get("ename"), out.get("evalue")) for i, cell in enumerate(nb.cells)
              if cell.cell_type == "code" for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{sample.lesson} failed with TF32 matrix products: {errors}"
    shown = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                    for out in cell.get("outputs", []))
    if "MATMUL_PRECISION" in "".join(c.source for c in nb.cells):
        assert "TF32" in shown, f"{sample.lesson}: its precision cell should say TF32"
