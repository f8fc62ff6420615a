"""`make demo`'s class: the samples and a few hostile submissions, so that its grade table and
report show evidence flags, grader's notes and a refusal (fast tier: nothing is graded here;
tests/test_grading.py grades the demo)."""
from __future__ import annotations

from conftest import ROOT

from perfcourse import samples
from perfcourse.grading import run
from perfcourse.report import grade_table as report
from perfcourse.grading.execute import GRADER_ERRORS

HOSTILE = [s for s in samples.discover(ROOT, folder="adversarial", prefix="hostile") if s.demo]


def test_the_demo_grades_a_few_quick_hostile_submissions_of_every_kind():
    assert 3 <= len(HOSTILE) <= 6 and not any(s.nightly for s in HOSTILE)  # make test's quick demo too
    refused = [s for s in HOSTILE if s.expected is None]
    graded = [s for s in HOSTILE if s.expected is not None]
    assert refused and all(s.reasons for s in refused)
    # A grader's note (a grader-made error) and an evidence flag (anything else the report must say).
    assert any(any(r in GRADER_ERRORS for r in s.reasons) for s in graded)
    assert any(any(r not in GRADER_ERRORS for r in s.reasons) for s in graded)
    # Flags are evidence, not a verdict: one of them keeps full marks.
    assert any(s.reasons and all(s.expected.values()) for s in graded)
    assert {s.student for s in HOSTILE}.isdisjoint(s.student for s in samples.discover(ROOT))


def test_the_table_says_a_refusal_was_expected(tmp_path):
    refused = run.Outcome("hostile-x", "performance-01", error="not a notebook")
    graded = run.Outcome("hostile-y", "performance-01", error="not a notebook")
    text = report.table([refused, graded], {("hostile-x", "performance-01"): None,
                                            ("hostile-y", "performance-01"): 8.0})
    assert "not graded ok" in text.splitlines()[2] and "8 MISMATCH" in text.splitlines()[3]
