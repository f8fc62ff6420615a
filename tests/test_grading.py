"""`make demo`: nbgrader autogrades the sample class through grader_config.py with the scores intended."""
import csv
import io

import nbformat
import pytest

from conftest import ROOT

from perfcourse.nbgrader_bridge import notebook_score
from perfcourse.samples import discover

pytestmark = [pytest.mark.e2e,  # kernels, graded classes or executed notebooks (make test, not make check)
              pytest.mark.xdist_group("graded-demo")]  # one pytest-xdist worker grades the demo class once

SAMPLES = [s for s in discover(ROOT) if not s.nightly]  # what `perfcourse demo --quick` grades
# and beside them, the hostile entries marked '# tier: demo'
HOSTILE = [s for s in discover(ROOT, folder="adversarial", prefix="hostile") if s.demo and not s.nightly]


def test_demo_succeeds_and_prints_the_grade_table(graded_demo):
    _, proc, grades = graded_demo
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "student" in proc.stdout and "score" in proc.stdout
    assert (f"demo: all {len(SAMPLES)} sample submissions scored as expected, and the {len(HOSTILE)} hostile "
            "ones from adversarial/ too") in proc.stdout
    rows = {(row["student_id"], row["assignment"]): row for row in csv.DictReader(io.StringIO(grades))}
    assert set(rows) == {(s.student, s.lesson) for s in SAMPLES + HOSTILE}
    samples = [rows[(s.student, s.lesson)] for s in SAMPLES]
    assert all(not row["error"] for row in samples)
    # Honest work in every lesson, lesson cells included, raises no evidence flag.
    assert [(row["student_id"], row["assignment"], row["flags"]) for row in samples if row["flags"]] == []
    # The hostile ones are refused or flagged, each with the reason its entry gives.
    for sample in HOSTILE:
        row = rows[(sample.student, sample.lesson)]
        assert bool(row["error"]) == (sample.expected is None), row
        for reason in sample.reasons:
            assert reason in row["error"] + row["notes"] + row["flags"], (sample.case, reason, row)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: f"{s.lesson}/{s.case}")
def test_every_grade_cell_scores_as_the_sample_says(graded_demo, sample):
    root = graded_demo[0]
    score = notebook_score(root, sample.lesson, sample.student)
    assert score is not None, f"{sample.student} was not graded"
    assert score.cells == sample.expected, f"{sample.path.name}: {score.cells} != {sample.expected}"


def test_the_grading_workers_keep_their_trusted_kernels(graded_demo):
    """Every sample scores as it says (above) while each grading worker's trusted kernel grades one
    notebook after another (grading/trusted_kernel.py): a kernel kept from the last notebook, where
    grading started a fresh one each time before."""
    from perfcourse.grading.execute import TIMING_KEY
    from perfcourse.nbgrader_bridge import config, folder

    root = graded_demo[0]
    loaded = config(root)
    timings = {(s.lesson, s.case): nbformat.read(folder(root, "autograded", s.student, s.lesson, loaded)
                                                 / f"{s.lesson}.ipynb", 4).metadata[TIMING_KEY]
               for s in SAMPLES if s.expected is not None}
    turns = [timing["trusted_kernel_notebook"] for timing in timings.values()]
    # A trusted kernel that parsed a program a student's kernel exported (checks/programs.py) is
    # stopped after that notebook: the next notebook of its worker starts a fresh one.
    tainted = sum(timing["trusted_kernel_tainted"] for timing in timings.values())
    assert not any(timing["trusted_kernel_tainted"] for (lesson, _), timing in timings.items()
                   if lesson == "performance-01"), "performance-01's checks parse no student program"
    fresh = turns.count(1)
    assert max(turns) > 1 and fresh < tainted + len(turns) / 4, \
        f"{fresh} of {len(turns)} notebooks started a trusted kernel ({tainted} after a parsed program)"


def cells(graded_demo, case):
    root = graded_demo[0]
    return notebook_score(root, "performance-01", f"sample-{case}")


def test_solution_and_alternative_get_full_marks(graded_demo):
    for case in ("solution", "alternative"):
        score = cells(graded_demo, case)
        assert score.score == score.max_score == 11


def test_release_scores_zero(graded_demo):
    assert cells(graded_demo, "release").score == 0


def test_unsynchronized_timer_loses_the_timing_points_only(graded_demo):
    score = cells(graded_demo, "unsynchronized")
    assert score.cells == {"test_workload": 3, "test_timer_first_call_apart": 2, "test_timer_synchronized": 0,
                           "test_queued": 3}


def test_an_edited_test_cell_is_restored_before_grading(graded_demo):
    root = graded_demo[0]
    notebook = "sample-edited-test-cell/performance-01/performance-01.ipynb"
    submitted = nbformat.read(root / "submitted" / notebook, 4)
    autograded = nbformat.read(root / "autograded" / notebook, 4)
    source = nbformat.read(root / "source" / "performance-01" / "performance-01.ipynb", 4)

    def test_cell(nb):
        return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_workload")

    assert test_cell(submitted).source == "assert True"
    assert test_cell(autograded).source == test_cell(source).source
    assert cells(graded_demo, "edited-test-cell").score == 0


def test_feedback_shows_public_tests_without_hidden_ones(graded_demo):
    import subprocess
    import sys
    from perfcourse.nbgrader_bridge import nbgrader_env
    root = graded_demo[0]
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "performance-01",
                    "--student", "sample-solution", "--force"], cwd=root, env=nbgrader_env(),
                   check=True, capture_output=True)
    html = (root / "feedback" / "sample-solution" / "performance-01" / "performance-01.html").read_text()
    assert "Public checks: shape, dtype" in html  # the public tests are there
    for hidden in ("BEGIN HIDDEN TESTS", "run_timer", "perfcourse.checks"):
        assert hidden not in html
