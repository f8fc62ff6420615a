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
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.utils import ensure_async, run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_grade
from traitlets import DottedObjectName, Integer, Type, Unicode, default, observe
from zmq.utils.monitor import recv_monitor_message

from ..checks import TAINT_MIME
from ..course import FIGURE_TAG
from ..kernel.output_cap import OUTPUT_CUT_MIME
from ..nbgrader_bridge import NOT_GRADED
from ..kernel.evidence import EVIDENCE_KEY, heartbeats, read_evidence
from . import cell_error, fork_server, interruption, ready_kernel, sandbox, trusted_kernel
from . import bounded_scan
from .nesting import MAX_NESTING, bounded_unpack, deeper_than, flattened
from .code_scan import code_cells, python_of
from .sanitize import sanitize_html

# Errors the grader itself writes into a notebook, and a check's verdict that the course cannot
# grade on this JAX (checks.InstrumentMissing): the grade report names them.
GRADER_ERRORS = ("NotRun", "KernelDied", "CellTimeoutError", "NotServing", "SubmissionRefused", "InstrumentMissing",
                 "OutputTimeout")
# Every message nbclient keeps something of: outputs, display updates (each rewrites every output
# that shares its display id, in any cell), widget comms (their state is kept for the notebook's
# metadata). The per-cell caps and the notebook's one budget count them all, and drop those past them.
CAPPED_MESSAGES = frozenset({"stream", "display_data", "execute_result", "update_display_data", "error",
                             "clear_output", "comm_open", "comm_msg", "comm_close"})
# A message past a budget is dropped, except what decides a grade: an error, or a grade cell's
# stderr (nbgrader scores either as a failure). It is kept cut to KEPT_CHARS characters a field.
KEPT_CHARS = 2000
# notebook metadata: the trusted side's share of the grading time, the submission's digest
TIMING_KEY = "perfcourse_grading"
FIGURE_NOT_DRAWN = "(the figure is not drawn while grading: figures earn no points; run the notebook to see it)\n"
REPORT_NOT_RUN = ("(not run while grading: this cell of the lesson comes after every test and earns no points; "
                  "run the notebook to see its output)\n")
SERVE_LINE = "__import__('perfcourse.kernel.agent').kernel.agent.serve()"
# The grader's sockets to a student's kernel refuse a message part larger than this many times
# GuardedExecute.max_output_bytes, unread: no more than that of a cell's output is ever kept.
MESSAGE_FACTOR = 4
# One output budget for the whole notebook: NOTEBOOK_FACTOR x max_output_bytes, every cell and every
# message kind together (so 60 cells each just under the per-cell cap keep no more than this).
NOTEBOOK_FACTOR = 4
REFUSED_SECONDS = 1.5  # a kernel still running this long after its connection closed did not die: it was refused
# The scan of a notebook's code (code_scan.py) reads only its cells' sources and tags, which running
# the cells does not change: it is handed to its process (bounded_scan.py) from this thread while
# the cells run, not after them.
_SCANNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="code-scan")


def _error(name: str, message: str):
    return new_output("error", ename=name, evalue=message, traceback=[f"{name}: {message}"])


def xla_flags_after(current: str | None, flags: str) -> str:
    """XLA_FLAGS holding `current`'s flags, then `flags`: XLA reads the last of a flag given twice."""
    return f"{current or ''} {flags}".strip()


def _exec_lines(*lines: str) -> str:
    return "--IPKernelApp.exec_lines=" + json.dumps(list(lines))


def kernel_argv(argv: list[str]) -> list[str]:
    """The kernel spec's command as grading runs it: with -P, so the kernel's working folder (the
    submission's files) is not first on sys.path while the kernel and the course's start-up lines
    are imported: a file handed in as ipykernel_launcher.py, or a folder perfcourse/, would be run
    instead. The student's kernel puts the folder on sys.path afterwards, as IPython would
    (`perfcourse.kernel.working_folder_on_path`)."""
    return argv if "-P" in argv[1:argv.index("-m")] else [argv[0], "-P", *argv[1:]]


async def wait_until_answering(kc, timeout: float) -> None:
    """jupyter_client's `wait_for_ready` without its last 0.2 s: a kernel is ready for cells once it
    has answered a kernel_info request on the shell channel *and* its IOPub status "idle" for that
    same request has reached this client, which proves the client's IOPub subscription live and
    drained up to it. jupyter_client instead reads IOPub until it has been quiet for 0.2 s: a fifth
    of a second of every notebook, twice, for kernels long up. A status published before the
    subscription took hold is lost (ZeroMQ's slow joiner): then it asks again, as jupyter_client does."""
    deadline = time.monotonic() + timeout
    while True:
        asked = kc.kernel_info()
        reply = None
        with contextlib.suppress(Empty):
            while reply is None:  # a late reply to an earlier request of this loop is passed over
                msg = await ensure_async(kc.shell_channel.get_msg(timeout=1))
                if msg["msg_type"] == "kernel_info_reply" and msg["parent_header"].get("msg_id") == asked:
                    reply = msg
        if reply is not None:
            with contextlib.suppress(Empty):
                while True:
                    msg = await ensure_async(kc.iopub_channel.get_msg(timeout=0.5))
                    if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                            and msg["parent_header"].get("msg_id") == asked):
                        kc._handle_kernel_info_reply(reply)
                        return
        if not await ensure_async(kc.is_alive()):
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")


class BoundedKernelClient(AsyncKernelClient):
    """A client whose sockets refuse, unread, any message part over `max_message_bytes` (0: no bound).

    libzmq's MAXMSGSIZE, set on the client's own zmq context before any socket exists, so every
    channel has it: the refused message is never allocated here. libzmq treats it as a protocol
    error and closes that connection for good; `MessageWatch` notices and connects again."""

    max_message_bytes = Integer(0, help="Largest message part the grader reads from the kernel (0: any)")

    @default("context")
    def _context_default(self) -> zmq.asyncio.Context:
        context = super()._context_default()
        if self.max_message_bytes:
            context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        return context

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        await wait_until_answering(self, float("inf") if timeout is None else timeout)


class BoundedKernelManager(AsyncKernelManager):
    """The student's kernel manager: its clients are BoundedKernelClients with its bound, and its own
    control socket (interrupts) has the bound too."""

    max_message_bytes = Integer(0, help="Largest message part the grader reads from the kernel (0: any)")
    client_class = DottedObjectName("perfcourse.grading.execute.BoundedKernelClient")
    client_factory = Type(BoundedKernelClient, klass=AsyncKernelClient)

    @observe("max_message_bytes")
    def _bound_changed(self, change) -> None:
        if change["new"]:
            self.context.setsockopt(zmq.MAXMSGSIZE, change["new"])

    def client(self, **kwargs) -> BoundedKernelClient:
        kwargs.setdefault("max_message_bytes", self.max_message_bytes)
        client = super().client(**kwargs)
        client.session.unpack = bounded_unpack(client.session.unpack)  # JSON too deep to parse: nesting.py
        return client


class MessageWatch:
    """Which of a kernel client's connections libzmq closed since the last look; each is connected again.

    A message part over a socket's MAXMSGSIZE closes its connection (a protocol error: libzmq does
    not connect again by itself, so every later message on that channel would be lost), and a
    socket monitor reports it as a disconnection. A kernel that dies is reported the same way:
    callers check that the kernel still runs before they blame a message."""

    def __init__(self, kc, channels=("iopub", "shell")):
        self._watched = []
        for name in channels:
            sock = getattr(kc, f"{name}_channel").socket
            monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)  # closed with the client's context
            self._watched.append((name, sock, zmq.Socket.shadow(monitor.underlying)))

    def dropped(self) -> set[str]:
        found = set()
        for name, sock, events in self._watched:
            try:
                while events.poll(0):
                    endpoint = recv_monitor_message(events, zmq.NOBLOCK).get("endpoint") or b""
                    endpoint = endpoint.decode() if isinstance(endpoint, bytes) else str(endpoint)
                    found.add(name)
                    if endpoint:
                        try:
                            sock.disconnect(endpoint)
                        except zmq.ZMQError:
                            pass
                        sock.connect(endpoint)  # a SUB socket subscribes again by itself
            except zmq.ZMQError:  # the client's sockets are closed: nothing more to watch
                pass
        return found


class GuardedExecute(Execute):
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

    @property
    def max_notebook_output_bytes(self) -> int:
        """The notebook's one output budget: NOTEBOOK_FACTOR x max_output_bytes, all cells and kinds together."""
        return NOTEBOOK_FACTOR * self.max_output_bytes

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
        self._lost = None
        self._trusted_lost = None
        self._deadline = time.monotonic() + self.notebook_timeout
        self._submission = self._submission_folder(resources)
        self._digest = None
        instructor = self._source_notebook(resources)
        self._imports = lesson_imports(instructor) if instructor else ""
        self._figures = figure_sources(instructor) if instructor else set()
        self._report = report_sources(instructor) if instructor else set()
        self._last_grade = max((i for i, cell in enumerate(nb.cells) if is_grade(cell)), default=len(nb.cells))
        # Plain `nbgrader autograde` reaches here without `perfcourse grade`'s survey: cells larger
        # than the grader reads are refused before the scan or any kernel sees them.
        from .scratch import check_cells

        check_cells(nb)
        scanned = _SCANNER.submit(bounded_scan.scan, code_cells(nb))
        if self._submission is not None:
            # Plain `nbgrader autograde` reaches here without `perfcourse grade`'s survey: refuse
            # links and special files before any kernel sees the submission (nbgrader then
            # removes what it had copied for this submission).
            from .scratch import check_submission, digest

            check_submission(self._submission)
            source = self._folder(resources, "source") / f"{resources['nbgrader'].get('notebook')}.ipynb"
            if source.is_file():  # grading skips this notebook next time while neither changes
                self._digest = digest(self._submission, source)
            _keep_only_notebooks(self._autograded_folder(resources))
        self.trusted_km = self.trusted_kc = None
        self._end = self._pin = None
        self._grade_cells, self._grade_seconds, self._cell_seconds = 0, 0.0, 0.0
        self._first_cell_at: float | None = None  # when the first cell began: the kernels were up
        self._trusted_wait = 0.0    # seconds the first grade cell waited for the trusted kernel's imports
        # The trusted kernel may be the one that graded this worker's last notebook, or one started
        # for this notebook while the last was graded (trusted_kernel.py); likewise the student's
        # kernel, started for this submission while the last notebook ran (ready_kernel.py).
        self._trusted = trusted_kernel.take(self._trusted_settings())
        self._ready_km = None
        ready = (ready_kernel.take(self._launch_key(self._submission), self._digest)
                 if self._submission is not None else None)
        if ready is not None and not ready.alive():
            ready.stop()
            ready = None
        if ready is not None:
            self._base, self._channel_dir, self._ready_km = ready.base, ready.channel, ready.km
        else:
            self._base, self._channel_dir = notebook_folders(self._trusted.channels)
        self._student_runtime, self._evidence = student_runtime(self._base), self._base / EVIDENCE_FILE
        self._trusted.begin()
        self._trusted_clean = True  # nothing has happened to it in this notebook (kept only then)
        self.student_kc = self._watch = None
        self._cells_run = 0         # cells run in the student's kernel: each left a heartbeat on the evidence channel
        self._refused_cells: list[int] = []  # cells during which an oversized message was refused
        self._refused_here, self._cell_number = False, 0
        self._tainted = False       # it parsed a program the student's kernel made (checks/programs.py)
        self._cut_cells: list[str] = []  # cells whose output was cut, for the grade report
        self._notebook_bytes, self._notebook_cut = 0, False  # the notebook's one output budget
        self._in_grade_cell = False
        self._socket = str(self._channel_dir / trusted_kernel.SOCKET)
        self.extra_arguments = self._student_arguments(self._socket)
        try:
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
            # Teardown never fails a notebook: each step is bounded, and what went wrong is a note.
            tearing_down = time.perf_counter()
            teardown = run_teardown((("closing the channel", self._close_end),
                                     ("stopping the grading kernel", self._stop_trusted),
                                     ("cleaning up the student's kernel",
                                      lambda: sandbox.cleanup(self._student_runtime)),
                                     ("removing the channel folder",
                                      lambda: shutil.rmtree(self._channel_dir, ignore_errors=True))))
            try:
                flags = read_evidence(self._evidence, cells=self._cells_run)  # a missing file is flagged
            except Exception as exc:  # noqa: BLE001
                flags = [f"the evidence could not be read ({type(exc).__name__})"]
            shutil.rmtree(self._base, ignore_errors=True)
            ended = time.perf_counter()
        # Always: a key a student wrote into the notebook is replaced.
        if self._refused_cells:
            flags.append(f"the student's kernel sent messages of more than {self.max_message_bytes} bytes: refused "
                         f"unread (cell {', '.join(map(str, self._refused_cells))})")
        nb.metadata[EVIDENCE_KEY] = flags + scanned.result()
        sanitize_html(nb)  # Formgrader and the feedback render it for the instructor: no student markup runs there
        nb.metadata[TIMING_KEY] = {"grade_cells": self._grade_cells,
                                   "grade_cell_seconds": round(self._grade_seconds - self._trusted_wait, 3),
                                   "cell_seconds": round(self._cell_seconds - self._trusted_wait, 3),
                                   # the rest of the notebook's time in this preprocessor: starting or
                                   # taking its kernels, the trusted kernel's imports, teardown
                                   "start_seconds": round((self._first_cell_at or tearing_down) - began, 3),
                                   "trusted_wait_seconds": round(self._trusted_wait, 3),
                                   "teardown_seconds": round(ended - tearing_down, 3),
                                   "preprocess_seconds": round(ended - began, 3),
                                   "kernel_started_ahead": ready is not None,
                                   "submission": self._digest,
                                   "trusted_kernel_notebook": self._trusted.notebooks,
                                   "trusted_kernel_tainted": self._tainted,
                                   "teardown": teardown,
                                   "output_cut": self._cut_cells}
        return nb, resources

    def _kernel_said(self) -> str:
        """The last line a kernel that died wrote to its own log (the launcher's refusal, Python's
        last error), for the reason the report gives."""
        for who, km, runtime in (("student", getattr(self, "km", None), self._student_runtime),
                                 ("grading", self._trusted.km, self._trusted.runtime)):
            try:
                if km is None or run_sync(km.is_alive)():
                    continue
                text = (runtime / "kernel.log").read_text(errors="replace")[-4000:]
            except Exception:  # noqa: BLE001 (no more to say)
                continue
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return f" (the {who} kernel's last words: {lines[-1][:160]})"
        return ""

    def _close_end(self) -> None:
        if self._end is not None:
            self._end.close()

    def _student_arguments(self, socket_path: str) -> list[str]:
        """The student's kernel's start-up: the evidence hook, the channel, the output budgets."""
        return [
            "--HistoryManager.hist_file=:memory:",
            _exec_lines("__import__('perfcourse.kernel.evidence').kernel.evidence.install()",
                        f"__import__('perfcourse.kernel.agent').kernel.agent.install({socket_path!r})",
                        "__import__('perfcourse.kernel.evidence').kernel.evidence.beat_each_cell()",
                        "__import__('perfcourse.kernel.output_cap').kernel.output_cap"
                        f".install({self.max_output_messages}, {self.max_output_bytes}, "
                        f"{self.max_notebook_output_bytes})",
                        "__import__('perfcourse.kernel').kernel.working_folder_on_path()"),
        ]

    def _sandbox_settings(self, role: str, runtime: Path, submission: Path | None = None,
                          channel: Path | None = None, evidence: Path | None = None) -> dict:
        student = role == "student"
        return {
            "mode": self.sandbox,
            "role": role,
            "runtime": str(runtime),
            "scratch_source": str(submission) if student and submission else None,
            # The student's kernel sees its own notebook's channel folder; the trusted kernel, kept
            # between notebooks, the folder that holds each notebook's in turn.
            "binds": [str(channel if student else self._trusted.channels)],
            "channel": str(channel / trusted_kernel.SOCKET) if student else None,
            "evidence": str(evidence) if student else None,
            "limits": self._sandbox_limits(),
        }

    def _launch_key(self, submission: Path) -> str:
        """What a student's kernel for `submission` is started with: one started ahead is taken
        only when this matches (ready_kernel.py)."""
        return json.dumps([str(submission), self.kernel_name, self.sandbox, self._sandbox_limits(), sys.executable,
                           self.xla_flags, self.max_output_messages, self.max_output_bytes, self.max_message_bytes])

    def _sandbox_limits(self) -> dict:
        return {"memory_bytes": self.memory_bytes, "pids": self.pids, "disk_bytes": self.disk_bytes,
                "cpu_seconds": self.cpu_seconds, "file_bytes": self.file_bytes, "open_files": 1024}

    def _trusted_settings(self) -> str:
        """What a trusted kernel is started with; a kept one grades a notebook only if they match."""
        return json.dumps([self.kernel_name, self.sandbox, self._sandbox_limits(), self.startup_timeout, sys.executable,
                           self.xla_flags])

    def _prepare(self, km, runtime: Path) -> None:
        km.transport = "ipc"
        km.ip = str(runtime / "ipc")
        km.connection_file = str(runtime / "connection.json")
        spec = km.kernel_spec
        spec.argv = [sys.executable, "-m", "perfcourse.grading.sandbox", *kernel_argv(spec.argv)]
        # Signals do not cross into the sandbox's PID namespace: interrupt over the control channel.
        spec.interrupt_mode = "message"

    def create_kernel_manager(self):
        if self._ready_km is not None:  # started for this submission while the last notebook ran
            self.km = self._ready_km
            return self.km
        km = super().create_kernel_manager()
        self._prepare_student(km, self._student_runtime)
        return km

    def _prepare_student(self, km, runtime: Path) -> None:
        self._prepare(km, runtime)
        if not isinstance(km, BoundedKernelManager):
            raise RuntimeError(f"GuardedExecute.kernel_manager_class must be a BoundedKernelManager, not "
                               f"{type(km).__name__}: the grader's memory is bounded through it")
        km.max_message_bytes = self.max_message_bytes

    def _kernel_env(self, role: str, runtime: Path, **student) -> dict:
        env = dict(os.environ)
        # Both kernels alike: the checks calibrate their timings in the trusted kernel for work
        # that runs in the student's.
        if self.xla_flags:
            env["XLA_FLAGS"] = xla_flags_after(env.get("XLA_FLAGS"), self.xla_flags)
        settings = self._sandbox_settings(role, runtime, **student)
        if self.sandbox == "bwrap":
            settings["fork"] = self._fork_server(role, env)
        env[sandbox.ENV_SETTINGS] = json.dumps(settings)
        return env

    def _fork_server(self, role: str, env: dict) -> str | None:
        """Inside a worker: the socket of the warm process this kernel is forked from (grading/fork_server.py)."""
        spec = KernelSpecManager().get_kernel_spec(self.kernel_name)
        kernel_env = sandbox.kernel_environment({**env, **spec.env}, sandbox.HOME, role, sandbox.kernel_user())
        return fork_server.for_kernel(role, kernel_argv(spec.argv), kernel_env)

    async def async_start_new_kernel(self, **kwargs):
        kwargs["env"] = self._kernel_env("student", self._student_runtime, submission=self._submission,
                                         channel=self._channel_dir, evidence=self._evidence)
        # Both kernels start at once: the trusted one costs no wall-clock time of its own.
        await asyncio.gather(super().async_start_new_kernel(**kwargs), self._start_trusted())

    async def _start_trusted(self):
        if self._trusted.km is None:  # else kept from this worker's last notebook, or started for this one
            await self._launch_trusted(self._trusted)
        self.trusted_km = self._trusted.km

    async def _launch_trusted(self, trusted: trusted_kernel.TrustedKernel) -> None:
        km = AsyncKernelManager(kernel_name=self.kernel_name)
        self._prepare(km, trusted.runtime)
        env = self._kernel_env("trusted", trusted.runtime)
        await km.start_kernel(
            extra_arguments=["--HistoryManager.hist_file=:memory:", "--IPKernelApp.capture_fd_output=False"],
            env=env, cwd=str(trusted.runtime))
        trusted.km = km

    async def _start_next(self) -> None:
        """Inside a worker: start the student's kernel of the worker's next notebook now, while
        this one runs (ready_kernel.py). Anything that goes wrong leaves that notebook to start
        its own, as it would have."""
        wanted = ready_kernel.next_up() if ready_kernel.next_up is not None else None
        if wanted is None or trusted_kernel.worker_channels() is None or interruption.requested():
            return
        submission, source = wanted
        key = self._launch_key(submission)
        if ready_kernel.holding(key):
            return
        from .scratch import check_submission, digest

        base = channel = None
        try:
            check_submission(submission)
            stamp = digest(submission, source) if source.is_file() else None
            base, channel = notebook_folders(trusted_kernel.worker_channels())
            runtime = student_runtime(base)
            km = self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config)
            self._prepare_student(km, runtime)
            env = self._kernel_env("student", runtime, submission=submission, channel=channel,
                                   evidence=base / EVIDENCE_FILE)
            await km.start_kernel(extra_arguments=self._student_arguments(str(channel / trusted_kernel.SOCKET)),
                                  env=env, cwd=str(runtime))
        except Exception as exc:  # noqa: BLE001 (that notebook starts its own kernel)
            self.log.warning("could not start the next notebook's kernel ahead (%s: %s)", type(exc).__name__, exc)
            for folder in (base, channel):
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
            return
        ready_kernel.hold(ready_kernel.ReadyKernel(key, stamp, base, channel, km))

    async def async_start_new_kernel_client(self):
        await self._start_trusted()  # a student's kernel started ahead skipped async_start_new_kernel
        # Both clients wait for their kernel's first answer at once: the trusted kernel's is needed
        # only below.
        self.trusted_kc = self.trusted_km.client()
        self.trusted_kc.start_channels()
        trusted_ready = asyncio.ensure_future(wait_until_answering(self.trusted_kc, self.startup_timeout))
        try:
            result = await super().async_start_new_kernel_client()
        except BaseException:
            trusted_ready.cancel()
            with contextlib.suppress(BaseException):
                await trusted_ready
            raise
        self.student_kc, self.student_km = self.kc, self.km
        self._watch = MessageWatch(self.student_kc)
        # The student's kernel has made its sockets: from now on it can add nothing to its runtime
        # folder, and the grader's own connection to the channel is made before any student
        # code runs, so it never follows a path the student could have changed.
        sandbox.seal(self._student_runtime)
        self._end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._end.settimeout(self.interrupt_grace)
        self._end.connect(self._socket)
        await trusted_ready
        # Likewise the trusted kernel, once it answers: one started moments ago (the successor of
        # the last notebook's) may still be making its sockets when the student's, started
        # ahead, is long ready; sealed earlier, it could not, and died.
        sandbox.seal(self._trusted.runtime)
        # The trusted kernel forgets any last notebook, connects to this student's kernel and loads
        # the lesson's imports while the student's first cells run; the first grade cell waits (_pinned).
        setup = (f"__import__('perfcourse.checks.remote').checks.remote.start_notebook("
                 f"{self._socket!r}, {self._imports!r})")
        self._pin = self.trusted_kc.execute(setup, silent=True, store_history=False,
                                            user_expressions={"cpu": "__import__('time').process_time()"})
        await self._start_next()
        return result

    def _pinned(self) -> None:
        """Wait once for the trusted kernel to be ready for this notebook; fail grading if it is not."""
        if self._pin is None:
            return
        msg_id, self._pin = self._pin, None
        waited = time.perf_counter()
        reply = run_sync(self._wait_reply)(self.trusted_kc, msg_id, self.startup_timeout)
        self._trusted_wait += time.perf_counter() - waited
        if reply is None or reply["content"].get("status") != "ok":
            self._trusted_clean = False
            raise RuntimeError("the grading kernel could not get ready for this notebook (the lesson's imports)")
        cpu = reply["content"].get("user_expressions", {}).get("cpu", {}).get("data", {}).get("text/plain")
        try:
            self._trusted.cpu_seconds = float(cpu)
        except (TypeError, ValueError):
            self._trusted_clean = False  # cannot tell how close it is to its CPU limit: not kept

    def _measure_trusted_cpu(self) -> bool:
        """Record the trusted kernel's CPU seconds so far; False when it does not say in time."""
        msg_id = self.trusted_kc.execute("", silent=True, store_history=False,
                                         user_expressions={"cpu": "__import__('time').process_time()"})
        reply = run_sync(self._wait_reply)(self.trusted_kc, msg_id, self.interrupt_grace)
        cpu = ((reply or {}).get("content", {}).get("user_expressions", {}).get("cpu", {})
               .get("data", {}).get("text/plain"))
        try:
            self._trusted.cpu_seconds = float(cpu)
        except (TypeError, ValueError):
            return False
        return True

    start_new_kernel = run_sync(async_start_new_kernel)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _stop_trusted(self):
        """This notebook is done with the trusted kernel: kept for the next one, or stopped."""
        clean = self._trusted_clean and self._lost is None and self._pin is None
        if clean and self.trusted_kc is not None:
            # Judged by the CPU time it has used now, at the end of this notebook: one notebook can
            # drive it far (a student's kernel that makes its checks work hard), and the next
            # notebook must not begin on a kernel already near its CPU limit.
            clean = self._measure_trusted_cpu()
        if self.trusted_kc is not None:
            self.trusted_kc.stop_channels()
        kept = trusted_kernel.give_back(self._trusted, clean, self.trusted_kernel_notebooks, self.cpu_seconds)
        if not kept and not interruption.requested() and trusted_kernel.replace_ahead(
                ready_kernel.next_up is not None and ready_kernel.next_up() is not None):
            # Its successor starts now, while nbgrader records this notebook and the next begins
            # (if it cannot, the next notebook starts one itself: nothing to note for this one).
            successor = trusted_kernel.take(self._trusted_settings())
            try:
                run_sync(self._launch_trusted)(successor)
            except Exception as exc:  # noqa: BLE001
                self.log.warning("could not start the next grading kernel ahead (%s: %s)", type(exc).__name__, exc)
                successor.stop()
                return
            trusted_kernel.keep(successor)

    def _folder(self, resources, kind: str, student: str = ".") -> Path | None:
        """A folder of the notebook being graded in nbgrader's layout (CourseDirectory.format_path)."""
        info = (resources or {}).get("nbgrader", {})
        if not info.get("assignment"):
            return None
        from nbgrader.coursedir import CourseDirectory

        directory = CourseDirectory(config=self.config)
        return Path(directory.format_path(getattr(directory, f"{kind}_directory"), student, info["assignment"]))

    def _submission_folder(self, resources) -> Path | None:
        """submitted/<student>/<assignment>/ of the notebook being graded."""
        student = (resources or {}).get("nbgrader", {}).get("student")
        return self._folder(resources, "submitted", student) if student else None

    def _source_notebook(self, resources):
        """The instructor's source notebook of the one being graded (never the student's copy)."""
        import nbformat

        notebook = (resources or {}).get("nbgrader", {}).get("notebook")
        source = self._folder(resources, "source")
        path = source / f"{notebook}.ipynb" if source and notebook else None
        return nbformat.read(path, as_version=4) if path and path.is_file() else None

    def _autograded_folder(self, resources) -> Path | None:
        student = (resources or {}).get("nbgrader", {}).get("student")
        folder = self._folder(resources, "autograded", student) if student else None
        path = (resources or {}).get("metadata", {}).get("path")
        return folder if folder and path and Path(path).resolve() == folder.resolve() else None

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
        skipped = None if grade else FIGURE_NOT_DRAWN if cell.source in self._figures \
            else REPORT_NOT_RUN if index > self._last_grade and cell.source in self._report else None
        if skipped:
            cell.outputs = [new_output("stream", name="stdout", text=skipped)]
            return cell, resources
        if self._lost is not None or (grade and self._trusted_lost is not None):
            cell.outputs = [_error("NotRun", f"not run: {self._lost or self._trusted_lost}")]
            return cell, resources
        self._output_bytes = self._output_messages = 0
        self._output_cut = False
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
                self._cut(cell.outputs, index, f"what arrived within {self.iopub_timeout} s of its end")
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

    @staticmethod
    async def _still_running(km, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not await ensure_async(km.is_alive()):
                return False
            await asyncio.sleep(0.05)
        return bool(await ensure_async(km.is_alive()))

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

    def _send_end(self) -> None:
        message = json.dumps({"id": 0, "op": "end", "args": [], "kwargs": []}).encode()
        try:
            self._end.sendall(struct.pack(">I", len(message)) + message)
            self._end.recv(1 << 16)  # the acknowledgement (its content does not matter)
        except OSError:  # the student's kernel is not listening: the interrupt below ends `serve()`
            pass

    @staticmethod
    async def _wait_reply(kc, msg_id: str, grace: float):
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                msg = await ensure_async(kc.get_shell_msg(timeout=max(0.05, deadline - time.monotonic())))
            except Exception:  # queue.Empty, or the kernel is gone
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg
        return None

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
                room = min(self.max_output_bytes - size, self.max_notebook_output_bytes - self._notebook_bytes)
                piece = str(content.get("text", ""))[: max(0, room)]
                text.append(piece)
                size += len(piece)
                self._notebook_bytes += len(piece)
        return "".join(text)

    async def _async_check_alive(self):
        """nbclient asks this every second while a cell runs; in a grade cell, also whether the
        student's kernel still serves the checks. If its `serve()` is over, nothing will answer
        them: interrupt the check now rather than at the cell limit."""
        await super()._async_check_alive()
        await self._look_for_refusals()
        if getattr(self, "_in_grade_cell", False) and self._served is None and not self._grade_timed_out:
            reply = await self._wait_reply(self.student_kc, self._serving, 0.05)
            if reply is not None:
                self._served = reply
                self._trusted_clean = False
                await ensure_async(self.trusted_km.interrupt_kernel())

    async def _async_handle_timeout(self, timeout, cell=None):
        if getattr(self, "_in_grade_cell", False):
            self._grade_timed_out = True  # the interrupt below ends serve(): that is not a refusal
            self._trusted_clean = False
        reply = await super()._async_handle_timeout(timeout, cell)  # interrupts self.km
        if getattr(self, "_in_grade_cell", False):
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

    def _kill_kernels(self) -> None:
        """Both kernels of this notebook, killed now (a worker's SIGTERM: interruption.py)."""
        for km in (getattr(self, "km", None), self.trusted_km):
            self._kill(km)

    @staticmethod
    def _kill(km):
        """Kill a kernel's sandbox process; bubblewrap takes the kernel with it (--die-with-parent)."""
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()

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
            return self._cut(cell.outputs, cell_index, said, notebook=said.startswith("the notebook"))
        kind = msg.get("msg_type")
        if kind in CAPPED_MESSAGES and deeper_than(content):  # nbformat reads an output by recursion
            self._cut(cell.outputs, cell_index, f"{MAX_NESTING} levels of nesting")
            if not self._decides_grade(msg):
                return None
            msg = _trimmed(flattened(msg))
        if kind in CAPPED_MESSAGES:
            # Counted here, before nbclient keeps anything of it; past a cap it is dropped here: a
            # flood of small messages costs seconds, not the cell's time limit, and no kind of
            # message (a display update that rewrites outputs across cells, a widget's comm state)
            # is kept past the notebook's budget.
            size = message_size(msg) * self._copies(msg)
            self._output_bytes += size  # a cell's caps count what it sent, the notebook's budget what is kept
            self._output_messages += 1
            limit = (f"{self.max_output_messages} messages" if self._output_messages > self.max_output_messages
                     else f"{self.max_output_bytes} bytes" if self._output_bytes > self.max_output_bytes
                     else f"the notebook's budget of {self.max_notebook_output_bytes} bytes"
                     if self._notebook_bytes + size > self.max_notebook_output_bytes else None)
            if limit is None:
                self._notebook_bytes += size
            if limit is not None:
                self._cut(cell.outputs, cell_index, limit, notebook=limit.startswith("the notebook"))
                if not self._decides_grade(msg):
                    return None
                msg = _trimmed(msg)
        return super().process_message(msg, cell, cell_index)

    def _copies(self, msg) -> int:
        """How many outputs a message becomes: a display id's message rewrites every output that shares it."""
        transient = (msg.get("content") or {}).get("transient")
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if not display_id or msg.get("msg_type") not in ("display_data", "execute_result", "update_display_data"):
            return 1
        shared = sum(len(found) for found in self._display_id_map.get(display_id, {}).values())
        return max(1, shared + (msg.get("msg_type") != "update_display_data"))

    def _decides_grade(self, msg) -> bool:
        kind, content = msg.get("msg_type"), msg.get("content") or {}
        return kind == "error" or (kind == "stream" and content.get("name") == "stderr" and self._in_grade_cell)

    def _cut(self, outs, cell_index: int, limit: str, notebook: bool = False) -> None:
        """Drop this output; the first time in a cell, say so in the cell and in the grade report
        (the notebook's budget: once, from the cell where it ran out)."""
        if not self._output_cut:
            self._output_cut = True
            if not notebook:
                self._cut_cells.append(f"the output of cell {cell_index + 1} was cut at {limit}")
            elif not self._notebook_cut:
                self._notebook_cut = True
                self._cut_cells.append(f"the notebook's output was cut at {limit}, from cell {cell_index + 1} on")
            # stdout: nbgrader scores any stderr output of a grade cell as a failure
            outs.append(new_output("stream", name="stdout", text=f"\n[output limit of {limit} reached: "
                                                                  "the rest of this cell's output was dropped]\n"))
        return None


EVIDENCE_FILE = "evidence.log"  # in a notebook's folder, beside its student kernel's runtime


def notebook_folders(channels: Path) -> tuple[Path, Path]:
    """A notebook's folder (its student kernel's runtime, student/, inside) and its channel folder."""
    base = Path(tempfile.mkdtemp(prefix="perfcourse-grading-"))
    student_runtime(base).mkdir()
    return base, trusted_kernel.channel_folder(channels)


def student_runtime(base: Path) -> Path:
    return base / "student"


def message_size(msg) -> int:
    """What a kernel message costs to keep: its content as JSON, and its binary buffers."""
    size = len(json.dumps(msg.get("content", {}), default=str))
    for buffer in msg.get("buffers") or ():
        size += memoryview(buffer).nbytes
    return size


def _trimmed(msg) -> dict:
    """An error or stderr message past a budget, kept (it decides a grade) with each field cut short."""
    content = dict(msg.get("content") or {})
    for key in ("text", "ename", "evalue"):
        if isinstance(content.get(key), str):
            content[key] = content[key][:KEPT_CHARS]
    if isinstance(content.get("traceback"), list):
        content["traceback"] = [str(line)[:KEPT_CHARS] for line in content["traceback"][-20:]]
    return {**msg, "content": content, "buffers": []}


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


def run_anyway(cell, tag: str) -> None:
    """Remove `tag` from the cell's tags: nbclient does not run a cell that has it ("skip-execution"),
    and a grade cell that never runs shows no error, which nbgrader scores as passed. The grader runs
    every cell handed in; which cells it skips is decided from source/ (figures, the report), never
    from a student's tags."""
    tags = cell.get("metadata", {}).get("tags")
    if isinstance(tags, list) and tag in tags:
        cell.metadata["tags"] = [t for t in tags if t != tag]


def figure_sources(nb) -> set[str]:
    """The source text of the instructor's figure cells: grading skips a cell only when its text is
    one of these, so a tag a student adds to their own copy skips nothing."""
    return {cell.source for cell in nb.cells
            if cell.cell_type == "code" and FIGURE_TAG in cell.metadata.get("tags", [])}


def report_sources(nb) -> set[str]:
    """The source text of the instructor's lesson code cells after the last grade cell (the lesson's
    report: measurements for its figure). No test reads them and they earn no points, so grading
    skips them where they come after every grade cell of the notebook being graded; a cell the
    student wrote there still runs."""
    from nbgrader.utils import is_solution

    grades = [i for i, cell in enumerate(nb.cells) if is_grade(cell)]
    if not grades:
        return set()
    return {cell.source for cell in nb.cells[grades[-1] + 1:]
            if cell.cell_type == "code" and not is_solution(cell) and cell.source.strip()}


def lesson_imports(nb) -> str:
    """The import statements of the instructor's lesson cells that grade cells may rely on.

    Lesson cells (neither solution nor grade cells) before the last grade cell, in order: the
    report cells after it (plotting) are not needed by any check.
    """
    import ast

    from nbgrader.utils import is_grade, is_solution

    grades = [i for i, cell in enumerate(nb.cells) if is_grade(cell)]
    found = []
    for cell in nb.cells[: (grades[-1] if grades else 0)]:
        if cell.cell_type != "code" or is_grade(cell) or is_solution(cell):
            continue
        tree = python_of(cell)
        if tree is not None:
            found += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(dict.fromkeys(found))


# What nbgrader's exchange puts beside a submission and reads back when it releases feedback.
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")


def _keep_only_notebooks(folder: Path | None) -> None:
    """Remove from autograded/<student>/<lesson>/ what nbgrader copied beside the notebook.

    The kernel gets the submission's files in its own scratch folder; autograded/ (and so the
    feedback nbgrader copies from it) keeps the graded notebook, and the two files of nbgrader's
    exchange that `nbgrader release_feedback` (Formgrader's Release Feedback) reads from the
    feedback folder. Nothing here follows a link.
    """
    if folder is None or folder.is_symlink() or not folder.is_dir():
        return
    for entry in os.scandir(folder):
        if (entry.name.endswith(".ipynb") or entry.name in NBGRADER_FILES) and entry.is_file(follow_symlinks=False):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
