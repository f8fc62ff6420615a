"""nbgrader's Execute, with a trust boundary: grade cells run where student code cannot reach.

`GuardedExecute` replaces nbgrader's Execute in autograde (see grader_config.py). Each notebook
runs on two sandboxed kernels:

- the **student's kernel** runs every cell that is not a grade cell: solution cells, cells the
  student added, the instructor's lesson cells (not its figure cells, nor its report cells after
  the last grade cell: they earn no points and no test reads them). Its first act (before any
  student code) is to install the evidence hook and listen on the channel (`perfcourse.kernel.agent`);
- the **trusted kernel** runs every grade cell, public and hidden checks alike, and nothing
  else. A grade cell reads the student's definitions through the channel (`perfcourse.checks.
  remote`): values in, values out, checked; never the student's code in this process. The hidden
  tests' source never enters the student's kernel, so no history, hook or patch there can see or
  change it, and its verdict is this kernel's alone.

While a grade cell runs, the student's kernel runs one line, `serve()`, answering the trusted
kernel's requests on its main thread; what the student's code prints meanwhile is appended to
the grade cell's output. If `serve()` ends (or never ran: student code can rewrite what the kernel
executes) while the grade cell still runs, nothing answers the checks: the grade cell is
interrupted at once and fails with `NotServing`. A cell past the per-cell limit is interrupted
in both kernels; a kernel that ignores the interrupt, dies, or outlives the notebook's limit is
killed, and every cell not yet run gets an error output saying why, so the notebook is still
scored. Each cell keeps at most `max_output_bytes` of output and the notebook NOTEBOOK_FACTOR times
that, every message kind counted (prints, displays, display updates with each output they rewrite,
errors, widget comms), and the grader's sockets to the
student's kernel refuse any message larger than MESSAGE_FACTOR times that before reading it
(libzmq's MAXMSGSIZE: `BoundedKernelManager`), so no message a student's kernel sends can swell
the grader's memory; the cell's output then says it was cut. The notebook nbgrader writes is the
one built here from the kernel protocol's messages: nothing the student's kernel writes to disk
reaches autograded/. The evidence channel's heartbeats (kernel/evidence.py) are counted against
the cells run in the student's kernel, the last of them a cell the grader adds after the notebook.

This module dispatches each cell to its kernel and says what happened to it; the parts it runs on
have a module each: the kernel pair (kernel_pair.py: started, kept and stopped; the student's
messages bounded in bounded_kernel.py), the output limits (output_limits.py), the cells' roles
(cell_roles.py) and the notebook's place in nbgrader's folders (nbgrader_folders.py). The state of
one notebook is declared in `GuardedExecute.reset_notebook_state`.
"""
from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
import time
from pathlib import Path

from jupyter_client.utils import ensure_async, run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_grade
from traitlets import Integer, Unicode

from ..checks import TAINT_MIME
from ..kernel.evidence import EVIDENCE_KEY, heartbeats, read_evidence
from ..kernel.output_cap import OUTPUT_CUT_MIME
from ..nbgrader_bridge import NOT_GRADED
from . import bounded_scan, cell_error, cgroups, interruption, nbgrader_folders, sandbox, trusted_kernel
from .bounded_kernel import BoundedKernelManager
from .cell_roles import CellRoles, run_anyway
from .code_scan import code_cells
from .kernel_pair import KernelPair
from .nesting import MAX_NESTING, TOO_DEEP, deeper_than, flattened
from .output_limits import (CAPPED_MESSAGES, MESSAGE_FACTOR, OutputBudget, copies, message_size, notebook_budget,
                            trimmed)
from . import recount  # recount (issue 51): performance-04's measure run apart from the notebook
from .sanitize import sanitize_html

# Errors the grader itself writes into a notebook, a check's verdict that the course cannot grade
# on this JAX (checks.InstrumentMissing) and one the machine's load kept it from (checks.MachineBusy):
# the grade report names them.
GRADER_ERRORS = ("NotRun", "KernelDied", "CellTimeoutError", "NotServing", "SubmissionRefused", "InstrumentMissing",
                 "MachineBusy", "OutputTimeout")
# notebook metadata: the trusted side's share of the grading time, the submission's digest
TIMING_KEY = "perfcourse_grading"
SERVE_LINE = "__import__('perfcourse.kernel.agent').kernel.agent.serve()"
REFUSED_SECONDS = 1.5  # a kernel still running this long after its connection closed did not die: it was refused
# The scan of a notebook's code (code_scan.py) reads only its cells' sources and tags, which running
# the cells does not change: it is handed to its process (bounded_scan.py) from this thread while
# the cells run, not after them.
_SCANNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="code-scan")


def _error(name: str, message: str):
    return new_output("error", ename=name, evalue=message, traceback=[f"{name}: {message}"])


class GuardedExecute(KernelPair, Execute):
    sandbox = Unicode("bwrap", help="'bwrap' to sandbox kernels, 'none' to run them unsandboxed").tag(config=True)
    # The limits have no defaults here: grader_config.py is their one home, and a configuration
    # that leaves one out is refused before any kernel starts (LIMITS, `_require_limits`).
    notebook_timeout = Integer(None, allow_none=True,
                               help="Wall-clock seconds for the whole notebook").tag(config=True)
    interrupt_grace = Integer(None, allow_none=True,
                              help="Seconds a kernel has to stop after an interrupt").tag(config=True)
    max_output_bytes = Integer(None, allow_none=True, help="Output bytes kept per cell").tag(config=True)
    max_output_messages = Integer(None, allow_none=True,
                                  help="Output messages (prints, displays) kept per cell").tag(config=True)
    memory_bytes = Integer(None, allow_none=True,
                           help="Resident memory of the student's kernel and its processes").tag(config=True)
    pids = Integer(None, allow_none=True,
                   help="Processes and threads of the student's kernel, all together").tag(config=True)
    disk_bytes = Integer(None, allow_none=True, help="Size of the student's scratch folder").tag(config=True)
    cpu_seconds = Integer(None, allow_none=True, help="CPU seconds of each kernel process").tag(config=True)
    file_bytes = Integer(None, allow_none=True, help="Largest file a kernel may write").tag(config=True)
    trusted_kernel_notebooks = Integer(None, allow_none=True,
                                       help="Notebooks one grading worker's trusted kernel grades before a fresh one "
                                            "starts (1: a fresh one for every notebook)").tag(config=True)
    xla_flags = Unicode("", help="XLA flags both grading kernels get, after any in the grader's own "
                                 "XLA_FLAGS").tag(config=True)
    LIMITS = ("notebook_timeout", "interrupt_grace", "max_output_bytes", "max_output_messages", "memory_bytes",
              "pids", "disk_bytes", "cpu_seconds", "file_bytes", "trusted_kernel_notebooks")

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", BoundedKernelManager)  # nbgrader's Execute sets its own default
        super().__init__(*args, **kwargs)
        self.reset_notebook_state()

    def reset_notebook_state(self) -> None:
        """The state of one notebook's grading, every field declared here (nbclient's own is in its
        `reset_execution_trackers`): set before each notebook, and once at construction."""
        self.reset_kernel_pair()     # the two kernels and their folders (kernel_pair.py)
        self.output_budget = OutputBudget(self.max_output_bytes, self.max_output_messages)  # output_limits.py
        self._roles = CellRoles()    # which cells run where, which are skipped (cell_roles.py)
        self._lost = None            # why the student's kernel is gone: each later cell says so (NotRun)
        self._trusted_lost = None    # likewise the trusted kernel's, for each later grade cell
        self._deadline = float("inf")  # the notebook's limit, on time.monotonic()
        self._digest = None          # the submission's digest (scratch.digest): grading skips it next time
        self._cells_run = 0          # cells run in the student's kernel: each left a heartbeat on the evidence channel
        self._refused_cells: list[int] = []  # cells during which an oversized message was refused
        self._refused_here = False   # ... the cell running now among them, not yet said in its output
        self._cell_number = 0        # the cell running now, counted from 1
        self._tainted = False        # the trusted kernel parsed a program of the student's kernel (checks/programs.py)
        self._in_grade_cell = False  # a grade cell runs: self.kc and self.km are the trusted kernel's
        self._serving = None         # ... the request that runs serve() in the student's kernel meanwhile
        self._served = None          # ... its reply, once serve() ended before the grade cell did
        self._grade_timed_out = False  # ... the grade cell passed the cell limit (its interrupt ends serve())
        self._grade_cells, self._grade_seconds, self._cell_seconds = 0, 0.0, 0.0  # where the time goes (TIMING_KEY)
        self._first_cell_at: float | None = None  # when the first cell began: the kernels were up
        self._recount = None         # performance-04's measure run apart (recount.py), for its notebooks only

    @property
    def max_notebook_output_bytes(self) -> int:
        """The notebook's one output budget (output_limits.py), all cells and kinds together."""
        return notebook_budget(self.max_output_bytes)

    @property
    def max_message_bytes(self) -> int:
        """The largest message part read from the student's kernel: MESSAGE_FACTOR x max_output_bytes."""
        return MESSAGE_FACTOR * self.max_output_bytes

    def _require_limits(self) -> None:
        unset = [name for name in self.LIMITS if getattr(self, name) is None or getattr(self, name) <= 0]
        if unset:
            raise RuntimeError("grader_config.py must set " + ", ".join(f"GuardedExecute.{n}" for n in unset)
                               + " (positive whole numbers)")

    def check_socket_room(self, tempdir: str | None = None) -> None:
        """Refuse a TMPDIR so deep that a notebook's channel socket would not fit in a socket address
        (under `tempdir`, where a grading worker will have its TMPDIR, when given)."""
        longest = trusted_kernel.longest_socket(tempdir)
        size = len(os.fsencode(longest))
        if size > trusted_kernel.MAX_SOCKET_BYTES:
            raise RuntimeError(f"the temporary folder {tempfile.gettempdir()} is too deep for the grader's sockets "
                               f"(a Unix socket's path holds {trusted_kernel.MAX_SOCKET_BYTES} bytes, and {longest} "
                               f"would be {size}): set TMPDIR to a shorter folder, such as /tmp")

    # --- one notebook ------------------------------------------------------------------------
    def preprocess(self, nb, resources=None, km=None):
        began = time.perf_counter()  # where a notebook's time goes: TIMING_KEY
        self._require_limits()
        self.check_socket_room()
        if self.sandbox == "bwrap" and not sandbox.bubblewrap():
            raise RuntimeError("bubblewrap (bwrap) is not installed: refusing to grade unsandboxed")
        self.reset_notebook_state()
        self._deadline = time.monotonic() + self.notebook_timeout
        submission = nbgrader_folders.submission_folder(self.config, resources)
        instructor = nbgrader_folders.read_lesson_notebook(self.config, resources, "source", strict=True)
        self._roles = CellRoles.of(instructor, nb)
        scanned = self._admit(nb, resources, submission)
        # The trusted kernel may be the one that graded this worker's last notebook, or one started
        # for this notebook while the last was graded (trusted_kernel.py); likewise the student's
        # kernel, started for this submission while the last notebook ran (ready_kernel.py).
        ahead = self.take_kernels(submission, self._digest, self._roles.imports)
        try:
            # recount (issue 51): performance-04's measure run apart, its answer beside the channel folder
            self._recount = recount.start(self, nb, instructor, self._channel_dir)
            # A worker's SIGTERM kills this notebook's kernels: its cell fails as a dead kernel's,
            # or the next cell stops (interruption.py), and the teardown below runs as after any failure.
            with interruption.stopping(self._kill_kernels):
                nb, resources = super().preprocess(nb, resources, km)
        except BaseException as exc:
            self._trusted_clean = False
            died = isinstance(exc, DeadKernelError) or "died before replying" in str(exc)
            self.log.error(NOT_GRADED + _in_words(exc) + (self._kernel_said() if died else ""))
            raise
        finally:
            tearing_down = time.perf_counter()
            teardown, flags = self._tear_down()
            ended = time.perf_counter()
        # Always: a key a student wrote into the notebook is replaced.
        nb.metadata[EVIDENCE_KEY] = flags + scanned.result()
        sanitize_html(nb)  # Formgrader and the feedback render it for the instructor: no student markup runs there
        nb.metadata[TIMING_KEY] = self._timing(began, tearing_down, ended, ahead, teardown)
        return nb, resources

    def _timing(self, began: float, tearing_down: float, ended: float, ahead: bool, teardown: list[str]) -> dict:
        """Where the notebook's time went, and what happened to its kernels and output (TIMING_KEY)."""
        return {"grade_cells": self._grade_cells,
                "grade_cell_seconds": round(self._grade_seconds - self._trusted_wait, 3),
                "cell_seconds": round(self._cell_seconds - self._trusted_wait, 3),
                # the rest of the notebook's time in this preprocessor: starting or
                # taking its kernels, the trusted kernel's imports, teardown
                "start_seconds": round((self._first_cell_at or tearing_down) - began, 3),
                "trusted_wait_seconds": round(self._trusted_wait, 3),
                "teardown_seconds": round(ended - tearing_down, 3),
                "preprocess_seconds": round(ended - began, 3),
                "kernel_started_ahead": ahead,
                "submission": self._digest,
                "trusted_kernel_notebook": self._trusted.notebooks,
                "trusted_kernel_tainted": self._tainted,
                "teardown": teardown,
                "output_cut": self.output_budget.cut_cells}

    def _admit(self, nb, resources, submission: Path | None) -> concurrent.futures.Future:
        """Refuse what the grader will not read, before the scan or any kernel sees it; start the
        scan of the notebook's code (its future: the scan's flags)."""
        # Plain `nbgrader autograde` reaches here without `perfcourse grade`'s survey: cells larger
        # than the grader reads are refused first, and likewise links and special files in the
        # submission (nbgrader then removes what it had copied for this submission).
        from .scratch import check_cells, check_submission, digest

        check_cells(nb)
        if submission is not None:
            check_submission(submission)
        # Only what was admitted is scanned, while the submission's digest is taken below.
        scanned = _SCANNER.submit(bounded_scan.scan, code_cells(nb))
        if submission is not None:
            source = nbgrader_folders.lesson_notebook(self.config, resources, "source")
            if source is not None and source.is_file():  # grading skips this notebook next time while neither changes
                self._digest = digest(submission, source)
            nbgrader_folders.keep_only_notebooks(nbgrader_folders.autograded_folder(self.config, resources))
        return scanned

    def _tear_down(self) -> tuple[list[str], list[str]]:
        """After the notebook, whatever happened: the kernels stopped or kept, their folders removed.
        What went wrong (in words: teardown never fails a notebook, each step is bounded), and the
        evidence flags."""
        teardown = run_teardown((("closing the channel", self._close_end),
                                 ("stopping the grading kernel", lambda: self._stop_trusted(self._lost is not None)),
                                 ("cleaning up the student's kernel", lambda: cgroups.cleanup(self._student_runtime)),
                                 ("removing the channel folder",
                                  lambda: shutil.rmtree(self._channel_dir, ignore_errors=True))))
        try:
            flags = read_evidence(self._evidence, cells=self._cells_run)  # a missing file is flagged
        except Exception as exc:  # noqa: BLE001
            flags = [f"the evidence could not be read ({type(exc).__name__})"]
        flags += self._recount.finish() if self._recount is not None else []  # recount (issue 51)
        shutil.rmtree(self._base, ignore_errors=True)
        if self._refused_cells:
            flags.append(f"the student's kernel sent messages of more than {self.max_message_bytes} bytes: refused "
                         f"unread (cell {', '.join(map(str, self._refused_cells))})")
        return teardown, flags

    # --- each cell ---------------------------------------------------------------------------
    def preprocess_cell(self, cell, resources, index):
        if interruption.requested():  # the worker was asked to stop: no further cell
            raise interruption.Interrupted()
        self._refused_here, self._cell_number = False, index + 1
        run_anyway(cell, self.skip_cells_with_tag)
        started = time.perf_counter()
        if self._first_cell_at is None:
            self._first_cell_at = started
        try:
            return self._preprocess_one(cell, resources, index)
        finally:
            self._cell_seconds += time.perf_counter() - started  # the cells' own time, grade cells included
            if index == len(self.nb.cells) - 1:
                self._last_heartbeat()

    def _preprocess_one(self, cell, resources, index):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        if self._lost is None and time.monotonic() > self._deadline:
            self._lost = f"the notebook ran past its {self.notebook_timeout} s limit"
            self._kill(self.student_km)
        grade = is_grade(cell)
        skipped = self._roles.skipped(cell, index)
        if skipped:
            cell.outputs = [new_output("stream", name="stdout", text=skipped)]
            return cell, resources
        if self._lost is not None or (grade and self._trusted_lost is not None):
            cell.outputs = [_error("NotRun", f"not run: {self._lost or self._trusted_lost}")]
            return cell, resources
        self.output_budget.start_cell()
        if grade:
            return self._grade_cell(cell, resources, index)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except Exception as exc:
            # nbgrader waits for a cell's last output (its idle status) and raises when it never
            # comes: lost, when the kernel's output channel was closed for an oversized message.
            # The cell ran all the same.
            output_lost = isinstance(exc, CellTimeoutError) and run_sync(self._refused)()
            if not output_lost and _output_late(exc) and self._lost is None:
                # The cell ran and replied; its last outputs were still arriving when nbclient's
                # wait for them ran out (a busy machine, a flood): the rest are dropped.
                self.output_budget.cut(cell.outputs, index, f"what arrived within {self.iopub_timeout} s of its end")
                output_lost = True
            if not output_lost or self._lost is not None:
                if self._lost is None and not isinstance(exc, DeadKernelError):
                    raise
                self._lost = self._lost or f"the kernel died in cell {index + 1} (exit, crash or a resource limit)"
                cell.outputs.append(_error("KernelDied", self._lost))
                return cell, resources
        if self._lost is None:
            self._cells_run += 1
        self._after_student_run(cell, index)
        return cell, resources

    def _after_student_run(self, cell, index) -> None:
        """After a cell or a grade cell's serve() in the student's kernel: if a message was refused
        meanwhile, the cell's output says it was cut."""
        run_sync(self._look_for_refusals)()
        if self._refused_here:
            self._refused_here = False
            cell.outputs.append(new_output("stream", name="stdout", text=(
                f"\n[output limit of {self.max_output_bytes} bytes reached: a message of more than "
                f"{self.max_message_bytes} bytes from the kernel was refused unread, and what it sent until the "
                "grader reconnected was lost]\n")))

    async def _look_for_refusals(self) -> None:
        """Did the student's kernel send a message over the bound since the last look? A closed
        output channel is connected again (the rest of the cell's output is kept); a closed shell
        channel lost a reply that nothing can bring back, so the kernel is stopped, with the reason."""
        if self._watch is None or self._lost is not None:
            return
        dropped = self._watch.dropped()
        if not dropped or not await self._still_running(self.student_km, REFUSED_SECONDS):
            return  # a kernel that died closes its connections too: that is reported as its death
        if self._cell_number not in self._refused_cells:
            self._refused_cells.append(self._cell_number)
        self._refused_here = True
        if "shell" in dropped:
            self._lost = (f"the student's kernel sent a message of more than {self.max_message_bytes} bytes on "
                          "its shell channel: refused unread, and the kernel was stopped")
            self._kill(self.student_km)

    async def _refused(self) -> bool:
        """Was a message of the student's kernel refused in this cell (looking once more)?"""
        await self._look_for_refusals()
        return self._refused_here

    def _last_heartbeat(self) -> None:
        """After the notebook's last cell: one more cell in the student's kernel, whose heartbeat
        the evidence channel must still carry (a channel closed in the last cell misses it), then
        a wait until the launcher has copied every heartbeat there is to copy."""
        if self._lost is not None or self.student_kc is None:
            return
        try:
            probe = self.student_kc.execute("pass", silent=False, store_history=False, allow_stdin=False)
            if run_sync(self._wait_reply)(self.student_kc, probe, self.interrupt_grace) is not None:
                self._cells_run += 1
            deadline = time.monotonic() + self.interrupt_grace
            while heartbeats(self._evidence) < self._cells_run and time.monotonic() < deadline:
                time.sleep(0.02)
        except Exception:  # noqa: BLE001 (the notebook is graded: a missing heartbeat is flagged)
            pass

    def _grade_cell(self, cell, resources, index):
        """Run a grade cell on the trusted kernel while the student's kernel answers its requests."""
        started = time.perf_counter()
        self._pinned()
        serving = self.student_kc.execute(SERVE_LINE, silent=False, store_history=False, allow_stdin=False)
        self._serving, self._served, self._grade_timed_out = serving, None, False
        self._in_grade_cell = True
        self.kc, self.km = self.trusted_kc, self.trusted_km
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except Exception as exc:
            if _output_late(exc):  # the check's last outputs never came: it cannot have passed
                cell.outputs.append(_error("OutputTimeout", f"the grading kernel's output of cell {index + 1} did "
                                                            f"not all arrive within {self.iopub_timeout} s"))
                self._trusted_clean = False
            elif isinstance(exc, DeadKernelError):
                self._trusted_lost = f"the grading kernel died in cell {index + 1}"
                self._trusted_clean = False
                cell.outputs.append(_error("KernelDied", self._trusted_lost))
            else:
                raise
        finally:
            self.kc, self.km = self.student_kc, self.student_km
            self._in_grade_cell = False
        cell_error.record(cell, GRADER_ERRORS)  # the student's own exception, not the channel's stand-in
        if self._served is not None:
            cell.outputs.append(_error("NotServing", "the student's kernel stopped answering the checks: "
                                                     "serve() ended or never ran while this cell ran"))
        printed = self._end_serving(serving)
        self._after_student_run(cell, index)
        self._grade_cells += 1
        self._grade_seconds += time.perf_counter() - started
        if printed:
            cell.outputs.append(new_output("stream", name="stdout", text=printed))
        return cell, resources

    def _end_serving(self, serving: str) -> str:
        """Tell the student's kernel the grade cell is over; return what its code printed meanwhile."""
        if self._lost is not None:  # stopped meanwhile, with its reason (a refused message)
            return ""
        # Already over (stopped serving, or interrupted)?
        reply = self._served or run_sync(self._wait_reply)(self.student_kc, serving, 0.05)
        if reply is None:
            self._send_end()
            reply = run_sync(self._wait_reply)(self.student_kc, serving, self.interrupt_grace)
        if reply is None:
            run_sync(self.student_km.interrupt_kernel)()
            reply = run_sync(self._wait_reply)(self.student_kc, serving, self.interrupt_grace)
        if reply is None:
            self._lost = "the student's kernel did not stop after a grade cell and was killed"
            self._kill(self.student_km)
            return ""
        self._cells_run += 1  # serve() ran there as a cell
        return self._drain_stream(serving)

    def _drain_stream(self, msg_id: str) -> str:
        """Stream text of `msg_id` from the student's kernel, up to its idle status (capped)."""
        text, size = [], 0
        deadline = time.monotonic() + self.interrupt_grace
        while time.monotonic() < deadline:
            try:
                msg = run_sync(self.student_kc.get_iopub_msg)(timeout=max(0.05, deadline - time.monotonic()))
            except Exception:
                break
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg.get("msg_type"), msg.get("content", {})
            if kind == "status" and content.get("execution_state") == "idle":
                break
            if kind == "stream":
                piece = str(content.get("text", ""))[: self.output_budget.stream_room(size)]
                text.append(piece)
                size += len(piece)
                self.output_budget.spend(len(piece))
        return "".join(text)

    async def _async_check_alive(self):
        """nbclient asks this every second while a cell runs; in a grade cell, also whether the
        student's kernel still serves the checks. If its `serve()` is over, nothing will answer
        them: interrupt the check now rather than at the cell limit."""
        await super()._async_check_alive()
        await self._look_for_refusals()
        if self._in_grade_cell and self._served is None and not self._grade_timed_out:
            reply = await self._wait_reply(self.student_kc, self._serving, 0.05)
            if reply is not None:
                self._served = reply
                self._trusted_clean = False
                await ensure_async(self.trusted_km.interrupt_kernel())

    async def _async_handle_timeout(self, timeout, cell=None):
        if self._in_grade_cell:
            self._grade_timed_out = True  # the interrupt below ends serve(): that is not a refusal
            self._trusted_clean = False
        reply = await super()._async_handle_timeout(timeout, cell)  # interrupts self.km
        if self._in_grade_cell:
            # The student's code the check called is most likely what is stuck.
            await ensure_async(self.student_km.interrupt_kernel())
            return reply
        if not await self._responds(self.interrupt_grace):
            self._lost = f"a cell ran past the {timeout} s cell limit and ignored the interrupt; the kernel was killed"
            self._kill(self.km)
        return reply

    async def _responds(self, grace: float) -> bool:
        """Does the kernel answer a trivial request within `grace` seconds of an interrupt?"""
        probe = self.kc.execute("", silent=True, store_history=False)
        return await self._wait_reply(self.kc, probe, grace) is not None

    def process_message(self, msg, cell, cell_index):
        content = msg.get("content", {})
        if TAINT_MIME in (content.get("data") or {}):
            # Only the trusted kernel's grade cells send it: it parsed a student's program. Read
            # before any cap, so no volume of output can hide it.
            if self._in_grade_cell:
                self._trusted_clean, self._tainted = False, True
            return None
        if OUTPUT_CUT_MIME in (content.get("data") or {}):
            # The student's kernel spent a cell's output budget (kernel/output_cap.py).
            said = content["data"][OUTPUT_CUT_MIME]
            limit = said.get("limit") if isinstance(said, dict) else None
            said = str(limit)[:60] if limit else "its budget"
            self.output_budget.cut(cell.outputs, cell_index, said, notebook=said.startswith("the notebook"))
            return None
        kind = msg.get("msg_type")
        if kind not in CAPPED_MESSAGES and (content.get(TOO_DEEP) is True or (
                kind == "status" and not isinstance(content.get("execution_state"), str))):
            return None  # no message a kernel sends of itself is like this (nbclient would raise on it)
        if kind in CAPPED_MESSAGES and deeper_than(content):  # nbformat reads an output by recursion
            self.output_budget.cut(cell.outputs, cell_index, f"{MAX_NESTING} levels of nesting")
            if not self._decides_grade(msg):
                return None
            msg = trimmed(flattened(msg))
        if kind in CAPPED_MESSAGES:
            # Counted here, before nbclient keeps anything of it; past a cap it is dropped here: a
            # flood of small messages costs seconds, not the cell's time limit, and no kind of
            # message (a display update that rewrites outputs across cells, a widget's comm state)
            # is kept past the notebook's budget.
            limit = self.output_budget.take(message_size(msg) * copies(msg, self._display_id_map))
            if limit is not None:
                self.output_budget.cut(cell.outputs, cell_index, limit, notebook=limit.startswith("the notebook"))
                if not self._decides_grade(msg):
                    return None
                msg = trimmed(msg)
        return super().process_message(msg, cell, cell_index)

    def _decides_grade(self, msg) -> bool:
        kind, content = msg.get("msg_type"), msg.get("content") or {}
        return kind == "error" or (kind == "stream" and content.get("name") == "stderr" and self._in_grade_cell)



def _output_late(exc: BaseException) -> bool:
    """nbclient's wait for a cell's last outputs ran out after the cell had replied."""
    return isinstance(exc, CellTimeoutError) and "IOPub" in str(exc)


def _in_words(exc: BaseException) -> str:
    """Why a notebook could not be graded, for the grade report (one line)."""
    if isinstance(exc, DeadKernelError):
        return "a kernel died while the notebook was graded"
    if isinstance(exc, CellTimeoutError):
        return "a cell's reply or output did not come in time, and the kernel could not be interrupted"
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_teardown(steps) -> list[str]:
    """Run each (what, action) of a notebook's teardown in turn; an action may return problems in
    words. Nothing raises: an exception escaping into nbgrader would drop the notebook, and
    cleaning up after a student must never cost that student's (or anyone's) grade."""
    problems = []
    for what, action in steps:
        try:
            problems += action() or []
        except Exception as exc:  # noqa: BLE001 (recorded as a note, never raised)
            problems.append(f"{what} failed ({type(exc).__name__}: {str(exc)[:200]})")
    return problems
