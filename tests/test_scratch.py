"""A submitted folder is checked and copied without following anything the student made."""
from __future__ import annotations

import os
import socket
import stat
import threading

import nbformat
import pytest

from conftest import ROOT

from perfcourse.grading import run, scratch
from perfcourse.grading.scratch import SubmissionRefused, check_submission, copy_submission

SECRET = "gradebook-secret-4242"


@pytest.fixture
def submission(tmp_path):
    folder = tmp_path / "submitted" / "alice" / "performance-01"
    (folder / "data").mkdir(parents=True)
    (folder / "performance-01.ipynb").write_text("{}")
    (folder / "data" / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "secret.txt").write_text(SECRET)
    return folder


def refused(folder) -> str:
    with pytest.raises(SubmissionRefused) as caught:
        check_submission(folder)
    return str(caught.value)


def test_regular_files_and_folders_are_accepted_and_copied(submission, tmp_path):
    check_submission(submission)
    (submission / "data" / "table.csv").chmod(0o600)
    into = tmp_path / "copy"
    copied = copy_submission(submission, into)
    assert sorted(copied) == ["data/table.csv", "performance-01.ipynb"]
    assert (into / "data" / "table.csv").read_text() == "a,b\n1,2\n"
    assert stat.S_IMODE((into / "data" / "table.csv").stat().st_mode) == 0o644
    assert stat.S_IMODE(into.stat().st_mode) == 0o755


def make_socket(path):
    """A Unix socket at `path`, bound under a short folder first (socket paths are short; tmp_path is not)."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as short:
        socket.socket(socket.AF_UNIX).bind(f"{short}/s")
        os.rename(f"{short}/s", path)


@pytest.mark.parametrize("make, kind", [
    (lambda p, target: p.symlink_to(target), "a symbolic link"),
    (lambda p, target: os.mkfifo(p), "a named pipe"),
    (lambda p, target: make_socket(p), "a socket"),
    (lambda p, target: os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3)), "a character device"),
    (lambda p, target: os.link(target, p), "a hard link"),
])
def test_anything_but_regular_files_and_folders_is_refused_by_name_and_kind(submission, tmp_path, make, kind):
    make(submission / "data" / "odd", tmp_path / "secret.txt")
    message = refused(submission)
    assert message.startswith(f"data/odd is {kind}")
    assert SECRET not in message and str(tmp_path) not in message


def test_a_notebook_that_is_a_link_and_a_linked_folder_are_refused(submission, tmp_path):
    notebook = submission / "performance-01.ipynb"
    notebook.unlink()
    notebook.symlink_to(tmp_path / "secret.txt")
    assert refused(submission).startswith("performance-01.ipynb is a symbolic link")
    notebook.unlink()
    notebook.write_text("{}")
    (submission / "more").symlink_to(tmp_path, target_is_directory=True)
    assert refused(submission).startswith("more is a symbolic link")


def test_the_submission_folder_itself_may_not_be_a_link(submission, tmp_path):
    link = tmp_path / "linked"
    link.symlink_to(submission, target_is_directory=True)
    assert refused(link) == "the submission folder itself is a symbolic link"


def test_too_many_files_or_bytes_are_refused(submission):
    for i in range(scratch.MAX_ENTRIES):
        (submission / "data" / f"f{i}").write_text("")
    assert refused(submission) == f"holds more than {scratch.MAX_ENTRIES} files and folders"
    for i in range(scratch.MAX_ENTRIES):
        (submission / "data" / f"f{i}").unlink()
    with open(submission / "data" / "big", "wb") as handle:
        handle.truncate(scratch.MAX_BYTES + 1)  # sparse: the size counts, not the blocks
    assert refused(submission) == f"holds more than {scratch.MAX_BYTES >> 20} MiB of files"


def test_names_are_printed_on_one_line(submission):
    (submission / "evil\nname").symlink_to("/etc/passwd")
    message = refused(submission)
    assert "\n" not in message and message.startswith("evil\\nname is a symbolic link")


def test_a_refused_copy_leaves_nothing_behind(submission, tmp_path):
    os.mkfifo(submission / "zz-pipe")
    into = tmp_path / "copy"
    with pytest.raises(SubmissionRefused):
        copy_submission(submission, into)
    assert not into.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".copy-")] == []


def test_a_file_swapped_for_a_link_during_copies_is_never_followed(submission, tmp_path):
    """A racing thread flips a file between regular and a link to a secret while copies run."""
    target = submission / "data" / "table.csv"
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            try:
                target.unlink()
                target.symlink_to(tmp_path / "secret.txt")
                target.unlink()
                target.write_text("honest\n")
            except FileNotFoundError:
                pass

    racer = threading.Thread(target=flip)
    racer.start()
    outcomes = {"copied": 0, "refused": 0}
    try:
        for i in range(300):
            into = tmp_path / f"copy{i}"
            try:
                copy_submission(submission, into)
            except SubmissionRefused:
                outcomes["refused"] += 1
                continue
            outcomes["copied"] += 1
            for path in into.rglob("*"):
                assert path.is_dir() or not path.is_symlink()
                if path.is_file():
                    assert SECRET not in path.read_text()
    finally:
        stop.set()
        racer.join()
    assert outcomes["copied"] + outcomes["refused"] == 300


def test_survey_refuses_links_and_keeps_the_other_reasons(tmp_path):
    from perfcourse.course import CONFIG_FILES, copy_course

    copy_course(ROOT, tmp_path, CONFIG_FILES)  # nbgrader's layout and settings, nothing else
    lesson = "performance-01"
    submitted = tmp_path / "submitted"
    nb = nbformat.v4.new_notebook()

    def student(name, build):
        folder = submitted / name / lesson
        folder.mkdir(parents=True)
        build(folder)

    student("good", lambda f: nbformat.write(nb, f / f"{lesson}.ipynb"))
    student("linked-notebook", lambda f: (f / f"{lesson}.ipynb").symlink_to(tmp_path / "source.ipynb"))
    student("pipe", lambda f: (nbformat.write(nb, f / f"{lesson}.ipynb"), os.mkfifo(f / "fifo")))
    student("renamed", lambda f: nbformat.write(nb, f / "mine.ipynb"))
    student("corrupt", lambda f: (f / f"{lesson}.ipynb").write_text("{not json"))
    big = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                          nbformat.v4.new_code_cell("x=1\n" * (1 << 20))])  # 4 MiB of code
    student("big-cell", lambda f: nbformat.write(big, f / f"{lesson}.ipynb"))
    many = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("y" * (60 << 10))] * 9)
    pictured = nbformat.v4.new_markdown_cell("![a](attachment:a.png)",
                                            attachments={"a.png": {"image/png": "QUJD" * (20 << 10)}})
    student("attachment", lambda f: nbformat.write(nbformat.v4.new_notebook(cells=[pictured]), f / f"{lesson}.ipynb"))
    student("many-cells", lambda f: nbformat.write(many, f / f"{lesson}.ipynb"))
    (submitted / "linked-lesson").mkdir()
    (submitted / "linked-lesson" / lesson).symlink_to(submitted / "good" / lesson, target_is_directory=True)
    (submitted / "linked-student").symlink_to(submitted / "good", target_is_directory=True)
    nbformat.write(nb, tmp_path / "source.ipynb")

    gradable, refusals = run.survey(tmp_path, [lesson])
    assert gradable == {"good": [lesson]}
    reasons = {o.student: o.error for o in refusals}
    assert reasons["linked-notebook"] == (f"refused submitted/linked-notebook/{lesson}/: "
                                          f"{lesson}.ipynb is a symbolic link: a submission may hold only "
                                          "regular files and folders")
    assert reasons["pipe"].startswith(f"refused submitted/pipe/{lesson}/: fifo is a named pipe")
    assert reasons["linked-lesson"] == f"refused submitted/linked-lesson/{lesson}/: it is a symbolic link"
    assert reasons["linked-student"] == "refused submitted/linked-student: it is a symbolic link"
    assert "found mine.ipynb: a renamed notebook?" in reasons["renamed"]
    assert "not a notebook" in reasons["corrupt"]
    assert reasons["big-cell"] == (f"refused submitted/big-cell/{lesson}/{lesson}.ipynb: cell 2 holds 4,194,304 "
                                   f"characters of source and attachments; the grader reads cells of at most "
                                   f"{scratch.MAX_CELL_CHARS:,}")
    assert "cell 1 holds 81,9" in reasons["attachment"]
    assert reasons["many-cells"].endswith(f"notebooks of at most {scratch.MAX_NOTEBOOK_CHARS:,}")
