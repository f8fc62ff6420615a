"""The two kernels of each graded notebook: the student's and the trusted one, started, kept and stopped.

The student's kernel runs the student's cells, the trusted kernel the grade cells (grading/execute.py
tells which runs where). Both start at once, each inside its sandbox (grading/sandbox.py): the
student's with the evidence hook, the value channel and the output caps installed before any cell,
its messages bounded (grading/bounded_kernel.py); the trusted one connects to the student's kernel
through the channel and imports the lesson's modules while the first cells run. Inside a worker a
trusted kernel is kept for the next notebook when nothing happened to it (trusted_kernel.py), and
the next notebook's student kernel is started while this one runs (ready_kernel.py).

`KernelPair` is a part of GuardedExecute: it reads the executor's limits (`kernel_name`, `sandbox`,
the LIMITS, `xla_flags`, `startup_timeout`) and overrides nbclient's kernel start
(`create_kernel_manager`, `async_start_new_kernel`, `async_start_new_kernel_client`). Its state for
one notebook is declared in `reset_kernel_pair`.
"""
from __future__ import annotations

import asyncio
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

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.utils import ensure_async, run_sync

from . import fork_server, interruption, ready_kernel, sandbox, trusted_kernel
from .bounded_kernel import BoundedKernelManager, MessageWatch, wait_until_answering

EVIDENCE_FILE = "evidence.log"  # in a notebook's folder, beside its student kernel's runtime


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


def notebook_folders(channels: Path) -> tuple[Path, Path]:
    """A notebook's folder (its student kernel's runtime, student/, inside) and its channel folder."""
    base = Path(tempfile.mkdtemp(prefix="perfcourse-grading-"))
    student_runtime(base).mkdir()
    return base, trusted_kernel.channel_folder(channels)


def student_runtime(base: Path) -> Path:
    return base / "student"


class KernelPair:
    """The student's kernel and the trusted kernel of the notebook being graded (a part of GuardedExecute)."""

    def reset_kernel_pair(self) -> None:
        """No kernels yet: the state of one notebook's pair, declared."""
        self.student_km = self.student_kc = None  # the student's kernel, once started (nbclient's km, kc)
        self.trusted_km = self.trusted_kc = None  # the trusted kernel, for grade cells
        self._trusted = None         # its trusted_kernel.TrustedKernel: kept, started ahead, or new
        self._ready_km = None        # the student's kernel, when started ahead for this submission
        self._submission = None      # submitted/<student>/<lesson>/, copied into the student's scratch folder
        self._base = self._channel_dir = self._student_runtime = self._evidence = None  # this notebook's folders
        self._socket = ""            # the value channel's socket, in the channel folder
        self._end = None             # the grader's own connection to the channel: ends serve()
        self._pin = None             # the trusted kernel's set-up request for this notebook, until awaited
        self._lesson_imports = ""    # what the trusted kernel imports for this notebook
        self._watch = None           # MessageWatch of the student's kernel's connections
        self._trusted_wait = 0.0     # seconds the first grade cell waited for the trusted kernel's imports
        self._trusted_clean = True   # nothing has happened to the trusted kernel in this notebook (kept only then)

    def take_kernels(self, submission: Path | None, digest: str | None, lesson_imports: str) -> bool:
        """This notebook's folders and kernels: the trusted kernel kept from the worker's last
        notebook or started for this one, the student's kernel started ahead for this submission
        (ready_kernel.py) or not yet. True when the student's kernel was started ahead."""
        self._submission, self._lesson_imports = submission, lesson_imports
        self._trusted = trusted_kernel.take(self._trusted_settings())
        ready = (ready_kernel.take(self._launch_key(submission), digest) if submission is not None else None)
        if ready is not None and not ready.alive():
            ready.stop()
            ready = None
        if ready is not None:
            self._base, self._channel_dir, self._ready_km = ready.base, ready.channel, ready.km
        else:
            self._base, self._channel_dir = notebook_folders(self._trusted.channels)
        self._student_runtime, self._evidence = student_runtime(self._base), self._base / EVIDENCE_FILE
        self._trusted.begin()
        self._socket = str(self._channel_dir / trusted_kernel.SOCKET)
        self.extra_arguments = self._student_arguments(self._socket)
        return ready is not None

    def _kernel_said(self) -> str:
        """The last line a kernel that died wrote to its own log (the launcher's refusal, Python's
        last error), for the reason the report gives."""
        for who, km, runtime in (("student", self.km, self._student_runtime),
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
                 f"{self._socket!r}, {self._lesson_imports!r})")
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

    def _stop_trusted(self, student_lost: bool = False):
        """This notebook is done with the trusted kernel: kept for the next one, or stopped (always
        when the student's kernel was lost: what it did to the trusted one meanwhile is unknown)."""
        clean = self._trusted_clean and not student_lost and self._pin is None
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

    def _kill_kernels(self) -> None:
        """Both kernels of this notebook, killed now (a worker's SIGTERM: interruption.py)."""
        for km in (self.student_km or self.km, self.trusted_km):  # during a grade cell self.km is the trusted one
            self._kill(km)

    @staticmethod
    def _kill(km):
        """Kill a kernel's sandbox process; bubblewrap takes the kernel with it (--die-with-parent)."""
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()

    @staticmethod
    async def _still_running(km, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not await ensure_async(km.is_alive()):
                return False
            await asyncio.sleep(0.05)
        return bool(await ensure_async(km.is_alive()))
