"""When a grading worker keeps its trusted kernel for the next notebook, and when it starts afresh.

The policy only (grading/trusted_kernel.py), with a stand-in for the kernel manager that records
its shutdown; the demo class (tests/test_grading.py) grades every sample on kept kernels.
"""
from pathlib import Path

import pytest

from perfcourse.grading import trusted_kernel

NOTEBOOKS, CPU_SECONDS = 3, 900


class StandIn:
    """What give_back and stop ask of a kernel manager: shut the kernel down."""

    def __init__(self):
        self.stopped = self.died = False

    async def is_alive(self):
        return not (self.stopped or self.died)

    async def shutdown_kernel(self, now=False):
        self.stopped = True


def begin(settings: str = "settings") -> trusted_kernel.TrustedKernel:
    trusted = trusted_kernel.take(settings)
    if trusted.km is None:
        trusted.km = StandIn()
    trusted.begin()
    return trusted


def test_outside_kept_every_notebook_gets_a_fresh_kernel_and_nothing_is_left():
    trusted = begin()
    channel = trusted_kernel.channel_folder(trusted.channels)
    assert trusted.owns_channels and channel.parent == trusted.channels
    assert not trusted_kernel.give_back(trusted, clean=True, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
    assert trusted.km.stopped and not trusted.base.exists() and not trusted.channels.exists()
    assert begin() is not trusted


def test_kept_after_clean_notebooks_up_to_the_limit_then_stopped():
    with trusted_kernel.kept():
        first = begin()
        assert first.runtime.is_dir() and first.channels == trusted_kernel.worker_channels()
        assert trusted_kernel.give_back(first, clean=True, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        for number in (2, 3):
            again = begin()
            assert again is first and again.notebooks == number and not again.km.stopped
            trusted_kernel.give_back(again, clean=True, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        assert first.km.stopped and not first.base.exists()  # it graded its 3 notebooks
        assert begin() is not first


def test_a_kept_kernel_that_died_meanwhile_is_replaced():
    with trusted_kernel.kept():
        trusted = begin()
        trusted_kernel.give_back(trusted, clean=True, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        trusted.km.died = True  # killed between two notebooks (out of memory, say)
        assert begin() is not trusted and not trusted.base.exists()


@pytest.mark.parametrize("why", ["not clean", "a quarter of its CPU seconds", "other settings"])
def test_not_kept_when_something_happened_to_it(why):
    with trusted_kernel.kept():
        trusted = begin()
        if why == "a quarter of its CPU seconds":
            trusted.cpu_seconds = CPU_SECONDS / 4
        trusted_kernel.give_back(trusted, clean=why != "not clean", notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        if why == "other settings":
            assert not trusted.km.stopped
            assert begin("other") is not trusted
        assert trusted.km.stopped and not trusted.base.exists()


def test_the_kept_kernel_is_stopped_when_the_worker_is_done():
    with trusted_kernel.kept():
        trusted = begin()
        trusted_kernel.give_back(trusted, clean=True, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        assert not trusted.km.stopped
        channels = trusted_kernel.worker_channels()
        trusted_kernel.channel_folder(channels)
    assert trusted.km.stopped and not Path(trusted.base).exists()
    assert not channels.exists() and trusted_kernel.worker_channels() is None


def test_inside_kept_every_trusted_kernel_shares_the_workers_channels():
    """A student's kernel started for the next notebook listens in the worker's channels folder,
    which whichever trusted kernel grades that notebook has bound (grading/ready_kernel.py)."""
    with trusted_kernel.kept():
        first = begin()
        trusted_kernel.give_back(first, clean=False, notebooks=NOTEBOOKS, cpu_seconds=CPU_SECONDS)
        successor = begin()
        assert successor is not first and successor.channels == first.channels
        assert not successor.owns_channels and successor.channels.is_dir()  # outlives the first kernel


def test_a_successor_is_started_ahead_only_inside_kept_and_for_a_next_notebook():
    """A kernel started for no notebook would be stopped unused: the class's last notebooks, and a
    plain `nbgrader autograde` (outside kept()), start none ahead."""
    assert not trusted_kernel.replace_ahead(True) and not trusted_kernel.replace_ahead(False)
    with trusted_kernel.kept():
        assert trusted_kernel.replace_ahead(True)
        assert not trusted_kernel.replace_ahead(False)


def test_a_temporary_folder_too_deep_for_the_channel_socket_is_one_clear_error(monkeypatch, tmp_path):
    """A notebook's channel socket lies under TMPDIR, and a Unix socket's path holds 107 bytes: a
    deeper TMPDIR is refused before grading starts, naming it, instead of every notebook failing."""
    import tempfile

    from conftest import ROOT

    from perfcourse.course import CourseError
    from perfcourse.grading.run import notebook_limit

    assert notebook_limit(ROOT) > 0
    deep = tmp_path / ("d" * 60)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with pytest.raises(CourseError, match="too deep for the grader's sockets.*set TMPDIR"):
        notebook_limit(ROOT)
    # Each grading worker's TMPDIR is a folder of its own inside it (WorkerSlot): a TMPDIR with
    # room for the sockets but not for that folder too is refused as well.
    from perfcourse.grading import trusted_kernel, worker_slot

    room = trusted_kernel.MAX_SOCKET_BYTES - len(trusted_kernel.longest_socket("/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/" + "d" * (room - 1))  # only its length is read
    assert len(trusted_kernel.longest_socket()) <= trusted_kernel.MAX_SOCKET_BYTES < len(
        trusted_kernel.longest_socket(worker_slot.worker_tempdir()))
    with pytest.raises(CourseError, match="too deep for the grader's sockets"):
        notebook_limit(ROOT)
