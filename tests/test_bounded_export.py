"""nbgrader's own autograde (a plain `nbgrader autograde`, Formgrader's Autograde button) bounds a
submitted notebook before it parses it (grading/bounded_export.py), as `perfcourse grade` does."""
import json
import subprocess
import sys
import warnings

import pytest
from nbconvert.exporters import NotebookExporter
from nbgrader.converters import Autograde
from sqlalchemy.exc import SAWarning
from test_execute import RELEASED, flooded

from conftest import ROOT, copy_course

from perfcourse import nbgrader_bridge
from perfcourse.grading import bounded_read
from perfcourse.grading.bounded_export import BoundedNotebookExporter

LESSON = "performance-01"


def test_the_course_has_nbgrader_read_every_autograded_notebook_through_the_bound():
    loaded = nbgrader_bridge.config(ROOT)
    converter = Autograde(coursedir=nbgrader_bridge.coursedir(ROOT, loaded), config=loaded)
    assert converter.exporter_class is BoundedNotebookExporter


def test_an_honest_notebook_reads_as_nbconverts_own_exporter_reads_it():
    assert BoundedNotebookExporter().from_filename(str(RELEASED))[0] == NotebookExporter().from_filename(
        str(RELEASED))[0]


@pytest.mark.slow
def test_formgraders_autograde_refuses_a_flooded_notebook_before_parsing_it(tmp_path):
    """NbGraderAPI.autograde, the call behind Formgrader's button and `nbgrader autograde`, on a
    course whose gradebook knows the lesson: the flooded submission is refused with its reason,
    nothing is left in autograded/, and no kernel starts (the refusal comes before the notebook is read)."""
    course = copy_course(tmp_path / "course")
    from nbgrader.api import Gradebook

    nbgrader_bridge.migrations_in_process()
    with Gradebook(nbgrader_bridge.db_url(course), "jax-performance") as gradebook:
        gradebook.add_assignment(LESSON)
        gradebook.add_notebook(LESSON, LESSON)
    submitted = nbgrader_bridge.folder(course, "submitted", "flood", LESSON)
    submitted.mkdir(parents=True)
    flooded(submitted / f"{LESSON}.ipynb", "x", "{}", bounded_read.MAX_OBJECTS + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission, as in every autograde
        result = nbgrader_bridge.api(course).autograde(LESSON, "flood")
    assert not result["success"]
    assert nbgrader_bridge.failure(result).startswith(f"{LESSON}.ipynb: the notebook holds more than 100,000 JSON "
                                                      "objects"), result["log"]
    assert not (nbgrader_bridge.folder(course, "autograded", "flood", LESSON) / f"{LESSON}.ipynb").exists()


@pytest.mark.slow
def test_the_largest_floods_cost_nbgraders_process_little_memory_and_time(tmp_path):
    """18 MB of `{}` once took the grader 3.1 GB and 13.6 s: nbgrader's exporter refuses it unread
    (over the file bound), and a flood just under that bound is stopped by the bounded child at
    its 100,000th object; nbgrader's own process parses neither."""
    over = flooded(tmp_path / "over.ipynb", "x", "{}", 18_000_000 // 3)
    under = flooded(tmp_path / "under.ipynb", "x", "{}", (bounded_read.MAX_FILE_BYTES - 200_000) // 3)
    assert over.stat().st_size > bounded_read.MAX_FILE_BYTES >= under.stat().st_size
    program = ("import json, sys, time\n"
               "from perfcourse.course import CourseError\n"
               "from perfcourse.grading import bounded_read\n"
               "from perfcourse.grading.bounded_export import BoundedNotebookExporter\n"
               "said, start = [], time.perf_counter()\n"
               "for path in sys.argv[1:]:\n"
               "    try:\n        BoundedNotebookExporter().from_filename(path); said.append('accepted')\n"
               "    except CourseError as exc:\n        said.append(str(exc))\n"
               "def peak(pid):  # VmHWM: ru_maxrss would carry the forking test's own peak across exec\n"
               "    status = open(f'/proc/{pid}/status').read()\n"
               "    return int(status.split('VmHWM:')[1].split()[0]) / 1024\n"
               "print(json.dumps({'said': said, 'seconds': time.perf_counter() - start, 'nbgrader_mb': peak('self'),\n"
               "                  'child_mb': peak(bounded_read._reader.process.pid)}))\n")
    proc = subprocess.run([sys.executable, "-c", program, str(over), str(under)], capture_output=True, text=True,
                          timeout=120)
    measured = json.loads(proc.stdout.splitlines()[-1])
    assert "outputs included" in measured["said"][0] and "JSON objects" in measured["said"][1], measured
    assert measured["nbgrader_mb"] < 300 and measured["child_mb"] < 300 and measured["seconds"] < 10, measured
