"""The grader's side of performance-04's recount: `measure` run apart from the notebook (issue 51).

A notebook that holds the grade cell `test_measure_equations` gets, as its grading begins, a
process of its own beside its two kernels (`perfcourse.kernel.recount`: plain Python, no Jupyter
kernel), started through the sandbox's launcher with a student's kernel's sandbox and bounds and
forked, where a grading worker keeps one, from the students' warm process. It is handed, as one
JSON line on its stdin, the instructor's cells before `measure` (from source/), the submission's
non-grade code cells, and a seed drawn here; it runs the measure cell alone and prints what
`measure` counted for the functions the seed builds.

Whose failure a run without counts is, is never decided by what the process prints: its launcher's
evidence pipe is a private pipe (copied to a file in the notebook's grading folder, outside the
sandbox), on which the process says, before any student code runs, what the measure cell may lack
apart from the notebook (`unseen`, kernel/recount.py's `selection`) and whether the lesson's cells
ran; it closes the pipe before the student's cells run. What the process prints (the student's code
prints there too) gives only its reply: counts, which the check verifies, or an error.

What came of it is written, once it ends, to `result_path(channel folder)`: beside the notebook's
channel folder in the folder the trusted kernel has bound, which the student's kernel never sees.
The equation check (checks/loops.py) waits there for it, builds the seed's functions and counts
them itself. The file holds one of

- {"seed", "counts"}: measure's counts, judged by the check;
- {"seed", "error"}: measure, the cell that defines it, or the process failed once the student's
  cells ran, the cell lacking nothing apart: the check fails with that reason (with "flag", the
  notebook is flagged too, where it stalled or ended without an answer);
- {"fallback"}: the recount could not stand for the notebook (it did not get to the student's
  cells: launch, lesson's cells, time; or the cell lacked something apart, a name another cell binds
  at its top level, say, and then failed): the check keeps the probe's count, as evidence only, and
  `Recount.finish` flags the notebook for a human;
- {"undecided"}: the student's cells ran and then the run stalled where the grader cannot tell whose
  stall it was (starved of CPU by load, or no way to tell here): the check decides nothing and raises
  MachineBusy (the cell scores nothing, the grade report names it: grade again on a quieter worker).
  Never the probe's count: a measure cell can lower its own priority beside a busy CPU and look starved.

A stall is judged by CPU time, not wall time (`stall_of`, grading/cpu_watch.py): a run that used
its CPU limit, or slept past the wall ceiling, is the student's; one that a loaded worker starved
of CPU (a thread of it queued for one longer than its own threads could make it wait) is not.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from nbgrader.utils import is_grade, is_solution

from ..kernel import recount as child
from . import cgroups, cpu_watch, fork_server, sandbox
from .kernel_pair import kernel_argv, xla_flags_after

CHECK_CELL = "test_measure_equations"  # a notebook holding this grade cell is recounted
CELL = "measure"                       # the solution cell run apart, and the name it defines
SKIPPED_TAGS = ("figure", "report")
RECOUNT_SECONDS = 40.0                 # wall-clock ceiling, at most half a cell's limit (loops.RECOUNT_WAIT is longer)
# A stall is judged by CPU time (`stall_of`): the tree may use a quarter of its wall ceiling, 10 s for 40 (a correct
# measure cell uses 1.3 s of CPU here, its JAX import included), and has been starved by the worker's load where
# one of its threads waited for a CPU half the ceiling or more (more than its own threads can make it wait).
CPU_SHARE = 0.25
STARVED_SHARE = 0.5
CELL_CHARS = 1 << 18                   # a cell's source handed to the recount: far more than a cell a person writes
# Resident memory of the recount's cgroup: a quarter of a GiB at its peak here (JAX imported, the seeded
# functions compiled and run), so four times that; a measure cell whose top level needs more fails apart.
RECOUNT_MEMORY_BYTES = 1 << 30
LOG_TAIL_BYTES = 1 << 16               # what is read of the process's output: its last line is the result
PRIVATE_BYTES = 1 << 14                # what is read of the private pipe's file (a few lines)
RUNTIME, PRIVATE = "recount", "recount.private"  # in the notebook's grading folder, removed with it
FLAG = ("performance-04's measure could not be checked apart from the notebook ({}): its equation count is the "
        "probe's word")
UNDECIDED_FLAG = ("performance-04's measure, run apart from the notebook by the grader, could not be judged ({}): "
                  "the equation check scored nothing; grade this notebook again on a quieter worker")
FAILED_FLAG = ("performance-04's measure, run apart from the notebook by the grader, failed ({}): the equation "
               "check fails; read the measure cell")


def result_path(channel: Path) -> Path:
    """Where the recount of the notebook whose channel folder is `channel` is written."""
    return child.result_path(channel)


def request_of(nb, instructor, seed: int) -> dict | None:
    """What the process is handed, or None when the notebook has no such check."""
    if not any(is_grade(cell) and _grade_id(cell) == CHECK_CELL for cell in nb.cells):
        return None
    lesson = []
    for cell in instructor.cells if instructor is not None else ():
        if cell.cell_type != "code":
            continue
        if _grade_id(cell) == CELL:
            break
        if not (is_grade(cell) or is_solution(cell) or set(SKIPPED_TAGS) & set(cell.metadata.get("tags", []))):
            lesson.append(cell.source)
    cells = [cell for cell in nb.cells if cell.cell_type == "code" and not is_grade(cell)]
    target = next((i for i, cell in enumerate(cells) if _grade_id(cell) == CELL), None)
    # A cell too large to read within the recount's time is not handed over (None): what it binds is unknown.
    sources = [cell.source if len(cell.source) <= CELL_CHARS else None for cell in cells]
    return {"lesson": lesson, "cells": sources, "target": target, "name": CELL, "seed": seed}


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


class Recount:
    """One notebook's recount: started by `start`, its file written when the process ends,
    everything of it removed by `finish`. Its runtime folder and private pipe's file lie in the
    notebook's grading folder (`folder`), which the grader removes with the notebook."""

    def __init__(self, request: dict | None, path: Path, launch: dict | None, seconds: float = RECOUNT_SECONDS,
                 folder: Path | None = None):
        self.request, self.path, self.launch, self.seconds = request, path, launch, seconds
        self.folder = folder
        self.process: subprocess.Popen | None = None
        self.runtime: Path | None = None
        self.written: dict | None = None
        self.lock, self.stopping = threading.Lock(), False  # no process is started once the notebook has ended
        self.thread = threading.Thread(target=self._run, name="recount", daemon=True)

    def _run(self) -> None:
        try:
            self._write(self._outcome())
        except Exception as exc:  # noqa: BLE001 (the check then keeps the probe's word, flagged)
            self._write({"fallback": f"the grader could not run it: {type(exc).__name__}"})

    def _outcome(self) -> dict:
        seed = self.request["seed"]
        if self.request["target"] is None:
            return {"seed": seed, "error": "the notebook has no measure cell"}
        if not self.request["lesson"]:
            return {"fallback": "the lesson's source notebook was not found"}
        if self.launch is None or self.folder is None:
            return {"fallback": "the grader could not prepare its sandbox"}
        self.runtime = self.folder / RUNTIME
        self.runtime.mkdir()
        private = self.folder / PRIVATE
        settings = {**self.launch["settings"], "runtime": str(self.runtime), "evidence": str(private)}
        env = {**self.launch["env"], sandbox.ENV_SETTINGS: json.dumps(settings)}
        with self.lock:
            if self.stopping:
                return {"fallback": "the notebook ended before it started"}
            # A session of its own: a stall is ended with everything the launcher started (unsandboxed, its child).
            self.process = subprocess.Popen(
                [sys.executable, "-m", "perfcourse.grading.sandbox", *self.launch["argv"]], env=env,
                cwd=str(self.runtime), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        with contextlib.suppress(OSError):
            self.process.stdin.write((json.dumps(self.request) + "\n").encode())
            self.process.stdin.close()
        ending = cpu_watch.watch(self.process, self._roots, self.seconds * CPU_SHARE, self.seconds)
        if ending.status is None:
            if self.launch["settings"].get("fork") and not cgroups.of(self.runtime):
                ending.usage.waited = None  # forked from the warm process, in no cgroup: its threads were not seen
            self._stop()
        return outcome_of(_read(private, PRIVATE_BYTES, tail=False), self._said(), ending.status, seed,
                          stall_of(ending, self.seconds))

    def _roots(self) -> list[int]:
        """The launcher, and what the recount's cgroups hold (a process forked from the warm one is no
        descendant of the launcher's)."""
        pids = [self.process.pid]
        for directory in cgroups.of(self.runtime):
            with contextlib.suppress(OSError, ValueError):
                pids += [int(pid) for pid in (directory / "cgroup.procs").read_text().split()]
        return pids

    def _said(self) -> str:
        """The last lines of the process's output (the student's code writes there too: its reply is a claim)."""
        return _read(self.runtime / "kernel.log", LOG_TAIL_BYTES, tail=True)

    def _write(self, outcome: dict) -> None:
        temporary = self.path.with_name(self.path.name + ".part")
        with contextlib.suppress(OSError):  # the notebook's folders already gone: nothing reads it
            temporary.write_text(json.dumps(outcome))
            temporary.chmod(0o644)  # the trusted kernel's user reads it
            temporary.replace(self.path)
            self.written = outcome  # only once the check can read it: unwritten, finish() flags it

    def _stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.kill()
            self.process.wait()

    def finish(self) -> list[str]:
        """Stop the process if it still runs, remove its files; the flag, where it fell back or
        the student's code stalled or ended it."""
        with self.lock:
            self.stopping = True
        if self.thread.is_alive():
            self._stop()
            self.thread.join()  # at once: its process is killed, or none was started
        if self.runtime is not None:
            cgroups.cleanup(self.runtime)
            shutil.rmtree(self.runtime, ignore_errors=True)
        paths = [self.path, self.path.with_name(self.path.name + ".part")]
        for path in paths + ([self.folder / PRIVATE] if self.folder is not None else []):
            with contextlib.suppress(OSError):
                path.unlink()
        written = self.written or {"fallback": "it had not finished when the notebook ended"}
        if "fallback" in written:
            return [FLAG.format(str(written["fallback"])[:300])]
        if "undecided" in written:
            return [UNDECIDED_FLAG.format(str(written["undecided"])[:300])]
        return [FAILED_FLAG.format(str(written["flag"])[:300])] if "flag" in written else []


def _read(path: Path, size: int, tail: bool) -> str:
    """At most `size` bytes of a file, its first or last ones; "" where there is none."""
    try:
        with open(path, "rb") as file:
            if tail:
                file.seek(0, os.SEEK_END)
                file.seek(max(0, file.tell() - size))
            return file.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def _private(text: str) -> tuple[dict | None, str | None]:
    """What the private pipe said: the preparation's line, and LESSON_RAN's (None: not reached)."""
    prepared, lesson = None, None
    for line in text.splitlines():
        if line.startswith(child.PREPARED_MARK) and prepared is None:
            with contextlib.suppress(ValueError):
                prepared = json.loads(line[len(child.PREPARED_MARK):])
        elif line == child.LESSON_RAN and lesson is None:
            lesson = ""
        elif line.startswith(child.LESSON_FAILED) and lesson is None:
            lesson = line[len(child.LESSON_FAILED):]
    return (prepared if isinstance(prepared, dict) else None), lesson


def stall_of(ending: cpu_watch.Ending, ceiling: float) -> tuple[str, bool] | None:
    """Why a run that had not ended was stopped, in words, and whether that is the student's (True);
    None where it ended by itself. Its CPU limit used, or the wall ceiling passed while it mostly did
    not run (it slept, stopped, or waited on itself: student code does that), is the student's stall.
    Starved (one of its threads queued for a CPU half the ceiling or more: only other processes' load
    makes a thread wait longer than its tree's CPU limit, or the tree itself, at an idle priority
    beside a busy CPU) decides nothing, rather than fail a correct cell on a loaded worker; nor does
    a stall where Linux does not say."""
    if ending.status is not None:
        return None
    usage = ending.usage
    spent = f"{usage.cpu:.1f} s of CPU in {ending.wall:.0f} s"
    if ending.reason == "cpu":
        return f"it did not finish within {ceiling * CPU_SHARE:g} s of CPU time ({spent})", True
    if usage.waited is None:
        return f"it did not finish within {ceiling:g} s, and whether load starved it is unknown here ({spent})", False
    if usage.waited >= ceiling * STARVED_SHARE:
        return f"the worker's load starved it of CPU ({spent}, {usage.waited:.0f} s waiting for one)", False
    return (f"it did not finish within {ceiling:g} s, mostly not running ({spent}, {usage.waited:.1f} s waiting "
            f"for a CPU)"), True


def outcome_of(private: str, said: str, status: int | None, seed: int,
               stall: tuple[str, bool] = ("it did not finish in time", True)) -> dict:
    """The file's content. Whose failure a run without counts was is decided by the private pipe
    (`private`: written before any student code ran): the launch or the lesson's cells failing is
    the grader's (fallback), so is any failure of a measure cell that lacked something apart; a run
    stalled where whose stall it was cannot be told (`stall`, `stall_of`'s words where `status` is None)
    is undecided; any other
    is the student's, a stall or an end without an answer flagged. Of `said` (the process's output,
    theirs) only the reply is read: counts, which the check verifies, or an error."""
    prepared, lesson = _private(private)
    if prepared is None or lesson is None:
        where = "its sandbox did not start" if child.STARTED_MARK not in private.splitlines() else \
            "it was not ready to run the student's cells"
        return {"fallback": f"{where} ({stall[0] if status is None else f'status {status}'})"}
    if "error" in prepared:
        return {"seed": seed, "error": str(prepared["error"])[:300]}
    if lesson:
        return {"fallback": f"the lesson's cells failed apart from the notebook: {lesson[:300]}"}
    reply = None
    for line in reversed(said.splitlines()):
        if line.startswith(child.RESULT_MARK):
            with contextlib.suppress(ValueError):
                reply = json.loads(line[len(child.RESULT_MARK):])
            break
    reply = reply if isinstance(reply, dict) else {}
    counts = reply.get("counts")
    if isinstance(counts, list) and len(counts) == child.FUNCTIONS and all(type(c) is int for c in counts):
        return {"seed": seed, "counts": counts}
    if status is None and not stall[1]:
        return {"undecided": stall[0]}
    if status is None:
        failure, flag = stall[0], True
    elif "error" in reply:
        failure, flag = str(reply["error"])[:500], False
    elif counts is not None:
        failure, flag = "measure's counts could not be read", False
    else:
        failure, flag = f"the process running measure ended without an answer (status {status})", True
    unseen = prepared.get("unseen") if isinstance(prepared.get("unseen"), dict) else {}
    if unseen:
        lacking = "; ".join(f"{str(name)[:60]} ({str(why)[:80]})" for name, why in list(unseen.items())[:10])
        return {"fallback": f"the measure cell needs what it cannot have apart: {lacking}; run apart, {failure}"}
    return {"seed": seed, "error": failure, **({"flag": failure} if flag else {})}


def start(execute, nb, instructor, channel: Path) -> Recount | None:
    """Begin the recount of `nb` (graded by the GuardedExecute `execute`) if it holds the check."""
    request = request_of(nb, instructor, secrets.randbits(62))
    if request is None:
        return None
    try:
        launch = _launch(execute, nb)
    except Exception:  # noqa: BLE001 (then the recount falls back, flagged: grading goes on)
        launch = None
    # Its answer, or the fallback, is written while the check can still wait for it within its cell's limit.
    cell_limit = getattr(execute, "timeout", None)
    seconds = min(RECOUNT_SECONDS, cell_limit / 2) if isinstance(cell_limit, (int, float)) and cell_limit > 0 \
        else RECOUNT_SECONDS
    recount = Recount(request, result_path(channel), launch, seconds, getattr(execute, "_base", None))
    recount.thread.start()
    return recount


def _launch(execute, nb) -> dict:
    """The launcher's command and environment: a student's kernel's, with no channel or submission,
    running perfcourse.kernel.recount instead of the kernel (its evidence pipe is the private pipe)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(execute.kernel_name or nb.metadata.get("kernelspec", {}).get("name"))
    # Python and its flags as a kernel runs (kernel_pair.kernel_argv: with -P), then this module
    kernel = kernel_argv(spec.argv)
    argv = [*kernel[:kernel.index("-m")], "-m", child.__name__]
    env = dict(os.environ)
    if execute.xla_flags:  # after the grader's own, as the kernels get them
        env["XLA_FLAGS"] = xla_flags_after(env.get("XLA_FLAGS"), execute.xla_flags)
    limits = execute._sandbox_limits()
    if limits.get("memory_bytes"):  # its own cgroup, beside the student's kernel's (docs/instructors/cluster.md)
        limits["memory_bytes"] = min(limits["memory_bytes"], RECOUNT_MEMORY_BYTES)
    settings = {"mode": execute.sandbox, "role": "student", "binds": [], "limits": limits}
    # On the host's CPU whatever the kernels run on: the count is of traced programs, which no backend
    # changes, and an accelerator may be held by the student's kernel beside it (one process at a time).
    env = {**env, **spec.env, "JAX_PLATFORMS": "cpu"}
    if execute.sandbox == "bwrap":
        kernel_env = sandbox.kernel_environment(env, sandbox.HOME, "student", sandbox.kernel_user())
        settings["fork"] = fork_server.for_kernel("student", argv, kernel_env)
    return {"argv": argv, "env": env, "settings": settings}
