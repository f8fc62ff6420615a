"""The grader's executor, without a kernel: what it pins, keeps, removes and configures."""
import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from conftest import ROOT

from perfcourse.nbgrader_bridge import config as course_config
from perfcourse.course import FIGURE_TAG
from perfcourse.grading.cell_roles import (FIGURE_NOT_DRAWN, REPORT_NOT_RUN, CellRoles, figure_sources, lesson_imports,
                                           report_sources)
from perfcourse.grading.execute import TIMING_KEY
from perfcourse.grading.nbgrader_folders import keep_only_notebooks
from perfcourse.kernel.evidence import EVIDENCE_KEY


def _cell(source, **nbgrader):
    cell = new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade_id": nbgrader.get("grade_id", "x"), "grade": False,
                                     "solution": False, "locked": True, **nbgrader}
    return cell


def test_the_grading_kernel_pins_the_lessons_imports_only():
    nb = new_notebook(cells=[
        _cell("import numpy as np\nfrom pathlib import Path\nx = 1\n%matplotlib inline"),
        _cell("import functools  # the student's own", grade_id="solution", solution=True, locked=False),
        _cell("import contextlib\nassert True", grade_id="test", grade=True, points=1),
        _cell("import time"),
        _cell("assert True", grade_id="test2", grade=True, points=1),
        _cell("import matplotlib.pyplot as plt  # a report cell after the last check"),
    ])
    assert lesson_imports(nb).splitlines() == ["import numpy as np", "from pathlib import Path", "import time"]


def test_grading_skips_only_the_instructors_figure_cells():
    figure = _cell("draw(panels, diagram)")
    figure.metadata["tags"] = [FIGURE_TAG]
    nb = new_notebook(cells=[_cell("import numpy as np"), figure,
                             _cell("assert True", grade_id="test", grade=True, points=1)])
    assert figure_sources(nb) == {"draw(panels, diagram)"}
    # Skipping goes by the instructor's text: a tag a student adds to a copy of another cell is not read.
    assert "import numpy as np" not in figure_sources(nb)


def test_grading_skips_the_instructors_report_cells_after_the_last_test_only():
    nb = new_notebook(cells=[
        _cell("x = measure()"),
        _cell("assert x", grade_id="test", grade=True, points=1),
        _cell("rows = measure_more()"),
        _cell("def answer(): ...", grade_id="answer", solution=True, locked=False),
        _cell("assert answer()", grade_id="test2", grade=True, points=1),
        _cell("rows = [measure(n) for n in range(5)]"),
        _cell("print('the student wrote this')", grade_id="essay", solution=True, locked=False),
        _cell("   "),
    ])
    assert report_sources(nb) == {"rows = [measure(n) for n in range(5)]"}
    assert report_sources(new_notebook(cells=[_cell("x = 1")])) == set()


def test_cell_roles_skip_by_the_instructors_text_and_the_graded_notebooks_last_test():
    figure = _cell("draw(panels, diagram)")
    figure.metadata["tags"] = [FIGURE_TAG]
    report = "rows = [measure(n) for n in range(5)]"
    instructor = new_notebook(cells=[_cell("import numpy as np"), figure,
                                     _cell("assert True", grade_id="test", grade=True, points=1), _cell(report)])
    graded = new_notebook(cells=[_cell(report), _cell("draw(panels, diagram)"),
                                 _cell("assert True", grade_id="test", grade=True, points=1), _cell(report),
                                 _cell("print('mine')")])
    roles = CellRoles.of(instructor, graded)
    assert roles.imports == "import numpy as np" and roles.last_grade == 2
    # The report's text runs where it comes before the graded notebook's last test; a figure's text never runs.
    assert [roles.skipped(cell, i) for i, cell in enumerate(graded.cells)] == [
        None, FIGURE_NOT_DRAWN, None, REPORT_NOT_RUN, None]
    assert CellRoles.of(None, graded).skipped(graded.cells[1], 1) is None  # no source notebook: every cell runs


def test_every_lessons_imports_are_found_in_its_source():
    for path in sorted((ROOT / "source").glob("*/*.ipynb")):
        assert "import numpy as np" in lesson_imports(nbformat.read(path, as_version=4)).splitlines(), path


def test_autograded_keeps_the_notebook_and_follows_no_link(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (tmp_path / "outside-dir").mkdir()
    (tmp_path / "outside-dir" / "file").write_text("keep me too")
    folder = tmp_path / "autograded" / "student" / "lesson"
    folder.mkdir(parents=True)
    (folder / "lesson.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")  # release_feedback reads both
    (folder / "submission_secret.txt").write_text("0123abcd")
    (folder / "data.csv").write_text("1,2")
    (folder / "sub").mkdir()
    (folder / "sub" / "nested.txt").write_text("x")
    (folder / "link.txt").symlink_to(outside)
    (folder / "linked-dir").symlink_to(tmp_path / "outside-dir")
    (folder / "fake.ipynb").symlink_to(outside)
    keep_only_notebooks(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["lesson.ipynb", "submission_secret.txt", "timestamp.txt"]
    assert outside.read_text() == "keep me" and (tmp_path / "outside-dir" / "file").read_text() == "keep me too"


def test_a_refused_submission_is_never_scanned(tmp_path, monkeypatch):
    """The code scan starts only for what was admitted: a submission refused before any kernel starts
    costs no scan (nor the scan's thread, which the next notebook waits on), and keeps its reason."""
    from perfcourse.grading import bounded_scan
    from perfcourse.grading.execute import _SCANNER, GuardedExecute
    from perfcourse.grading.scratch import SubmissionRefused

    scanned = []
    monkeypatch.setattr(bounded_scan, "scan", lambda cells: scanned.append(cells) or ["a flag"])
    execute = GuardedExecute(config=course_config(ROOT))
    nb = new_notebook(cells=[new_code_cell("x = 1")])
    folder = tmp_path / "submission"
    folder.mkdir()
    assert execute._admit(nb, {}, folder).result() == ["a flag"] and len(scanned) == 1
    (folder / "link").symlink_to(tmp_path)
    with pytest.raises(SubmissionRefused, match="link"):
        execute._admit(nb, {}, folder)
    _SCANNER.submit(lambda: None).result()  # its one thread has run whatever was handed to it before
    assert len(scanned) == 1


def test_the_graded_notebooks_metadata_keys_survive_nbgraders_clearing():
    mask = course_config(ROOT).ClearMetadataPreprocessor.preserve_nb_metadata_mask
    assert (EVIDENCE_KEY,) in mask and (TIMING_KEY,) in mask


def test_teardown_runs_every_step_and_raises_nothing():
    from perfcourse.grading.execute import run_teardown

    ran = []

    def broken():
        ran.append("broken")
        raise OSError(16, "Device or resource busy")

    problems = run_teardown((("closing the channel", lambda: ran.append("close")),
                             ("stopping the grading kernel", broken),
                             ("cleaning up the student's kernel", lambda: ["its cgroup was left behind"])))
    assert ran == ["close", "broken"]
    assert problems == ["stopping the grading kernel failed (OSError: [Errno 16] Device or resource busy)",
                        "its cgroup was left behind"]


def test_teardown_problems_are_notes_of_the_graded_notebook():
    from nbformat.v4 import new_notebook

    from perfcourse.grading.run import notes_of

    nb = new_notebook()
    nb.metadata[TIMING_KEY] = {"teardown": ["the kernel's processes did not exit within 30 s of being killed"]}
    assert notes_of(nb) == ["teardown: the kernel's processes did not exit within 30 s of being killed"]


def test_a_notebook_that_cannot_be_graded_is_reported_with_the_graders_reason():
    from nbclient.exceptions import CellTimeoutError

    from perfcourse.grading.execute import _in_words, _output_late
    from perfcourse.nbgrader_bridge import NOT_GRADED, failure

    log = ("[AutogradeApp | ERROR] " + NOT_GRADED + _in_words(OSError(16, "Device or resource busy")) + "\n"
           "[AutogradeApp | ERROR] There was an error processing assignment 'performance-01'\n"
           "[AutogradeApp | ERROR] Please see the the above traceback for details on the specific errors.")
    assert failure({"success": False, "log": log}) == "OSError: [Errno 16] Device or resource busy"
    late = CellTimeoutError("A cell timed out while it was being executed, after 4 seconds.\n"
                            "The message was: Timeout waiting for IOPub output.")
    assert _output_late(late) and not _output_late(CellTimeoutError("No reply from kernel"))


# --- a submitted notebook, bounded before it is parsed (grading/bounded_read.py) ----------------
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from perfcourse.course import CourseError  # noqa: E402
from perfcourse.grading import bounded_read  # noqa: E402
from perfcourse.grading.scratch import SubmissionRefused  # noqa: E402

RELEASED = ROOT / "release" / "performance-01" / "performance-01.ipynb"


def flooded(path, key: str, item: str, count: int):
    """The released notebook with `count` copies of the JSON `item` under its metadata's `key`,
    written as text (never built as objects here)."""
    nb = nbformat.read(RELEASED, as_version=4)
    nb.metadata[key] = "PAD"
    head, tail = nbformat.writes(nb).split('"PAD"')
    with open(path, "w") as handle:
        handle.write(head + "[" + item)
        for start in range(1, count, 100_000):
            handle.write(("," + item) * min(100_000, count - start))
        handle.write("]" + tail)
    return path


def test_an_honest_notebook_passes_and_a_corrupt_one_is_named(tmp_path):
    bounded_read.check_notebook(RELEASED)
    (tmp_path / "bad.ipynb").write_text("{ not a notebook")
    with pytest.raises(CourseError, match="the JSON is corrupt") as caught:
        bounded_read.check_notebook(tmp_path / "bad.ipynb")
    assert not isinstance(caught.value, SubmissionRefused)


def test_a_notebook_file_over_the_bound_is_refused_before_anything_is_read(tmp_path):
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as handle:
        handle.truncate(bounded_read.MAX_FILE_BYTES + 1)  # sparse: nothing written, nothing to read
    with pytest.raises(SubmissionRefused, match="outputs included"):
        bounded_read.check_notebook(big)


@pytest.mark.parametrize("item, why", [("{}", "JSON objects"), ("[]", "JSON arrays"),
                                       ('{"k": 1}', "JSON objects")])
def test_objects_and_arrays_past_the_bound_stop_the_parse(tmp_path, item, why):
    path = flooded(tmp_path / "flood.ipynb", "x", item, bounded_read.MAX_ARRAYS + 1)
    with pytest.raises(SubmissionRefused, match=why):
        bounded_read.check_notebook(path)


def test_metadata_past_the_bound_and_json_nested_too_deep_are_refused(tmp_path):
    path = flooded(tmp_path / "meta.ipynb", "x", '"' + "m" * 1000 + '"', 300)
    with pytest.raises(SubmissionRefused, match="metadata holds"):
        bounded_read.check_notebook(path)
    deep = tmp_path / "deep.ipynb"
    deep.write_text(RELEASED.read_text().rstrip()[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(SubmissionRefused, match="nested deeper"):
        bounded_read.check_notebook(deep)


@pytest.mark.slow
def test_the_largest_flood_costs_the_grader_little_memory_and_time(tmp_path):
    """18 MB of `{}` once took the grader 3.1 GB and 13.6 s: the bounded child stops it at once,
    and the grader's own process parses nothing."""
    path = flooded(tmp_path / "flood.ipynb", "x", "{}", (bounded_read.MAX_FILE_BYTES - 200_000) // 3)
    assert path.stat().st_size <= bounded_read.MAX_FILE_BYTES
    program = ("import json, resource, time, sys\n"
               "from perfcourse.grading import bounded_read, scratch\n"
               "start = time.perf_counter()\n"
               "try:\n    bounded_read.check_notebook(sys.argv[1]); said = 'accepted'\n"
               "except scratch.SubmissionRefused as exc:\n    said = str(exc)\n"
               "def peak(pid):  # VmHWM: ru_maxrss would carry the forking test's own peak across exec\n"
               "    status = open(f'/proc/{pid}/status').read()\n"
               "    return int(status.split('VmHWM:')[1].split()[0]) / 1024\n"
               "print(json.dumps({'said': said, 'seconds': time.perf_counter() - start, 'grader_mb': peak('self'),\n"
               "                  'child_mb': peak(bounded_read._reader.process.pid)}))\n")
    proc = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True, timeout=120)
    measured = json.loads(proc.stdout.splitlines()[-1])
    assert "JSON objects" in measured["said"], measured
    assert measured["grader_mb"] < 300 and measured["child_mb"] < 300 and measured["seconds"] < 10, measured


def test_the_kernel_pairs_overrides_are_the_ones_nbclient_reaches():
    # KernelPair must come before nbgrader's Execute among GuardedExecute's bases: listed after it,
    # nbclient's own kernel start would run, unsandboxed and without the trusted kernel, with no error.
    from nbclient import NotebookClient

    from perfcourse.grading.execute import GuardedExecute
    from perfcourse.grading.kernel_pair import KernelPair

    for name in ("create_kernel_manager", "async_start_new_kernel", "async_start_new_kernel_client",
                 "start_new_kernel", "start_new_kernel_client"):
        assert hasattr(NotebookClient, name), f"nbclient no longer has {name}: KernelPair's override never runs"
        assert getattr(GuardedExecute, name) is KernelPair.__dict__[name], name


def test_grading_reads_a_lessons_notebook_one_way(tmp_path):
    """nbgrader_folders.read_lesson_notebook: the grader's (strict) and the metadata's restoring (not)
    read source/ alike; none there is None for both, a file that is no notebook is refused by name
    where strict, passed over where not."""
    import pytest

    from perfcourse.course import CourseError
    from perfcourse.grading.nbgrader_folders import read_lesson_notebook
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    resources = {"nbgrader": {"assignment": "performance-01", "notebook": "performance-01"}}
    assert read_lesson_notebook(config, resources, strict=True) is None
    path = tmp_path / "source" / "performance-01" / "performance-01.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text("{ not json")
    assert read_lesson_notebook(config, resources) is None
    with pytest.raises(CourseError, match="performance-01.ipynb"):
        read_lesson_notebook(config, resources, strict=True)
    nbformat.write(new_notebook(cells=[_cell("x = 1")]), path)
    assert read_lesson_notebook(config, resources, strict=True).cells[0].source == "x = 1"
