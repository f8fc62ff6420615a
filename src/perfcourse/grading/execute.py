"""nbgrader's Execute, made safe for a class: sandboxed kernels, hard limits, trusted verdicts.

`GuardedExecute` replaces nbgrader's Execute in autograde (see grader_config.py):
- the kernel starts through `grading.sandbox` (bubblewrap, limits) and talks over Unix sockets;
- the kernel runs `grading.integrity` before any student cell; every grade cell must come back
  with a record signed by that guard, saying it ran as written, raised only if an error shows,
  and found nothing tampered with; otherwise the cell gets an error output and scores zero;
- a cell that outlives the per-cell timeout is interrupted; a kernel that ignores the
  interrupt, dies, or exceeds the notebook's wall-clock limit is killed, and every cell not yet
  run gets an error output naming why, so the notebook is still scored, never left for manual
  grading;
- each cell keeps at most `max_output_bytes` of output.
"""
from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.utils import ensure_async, run_sync
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from traitlets import Integer, Unicode

from nbgrader.preprocessors import Execute

from . import integrity
from .sandbox import ENV_SETTINGS, bubblewrap


def _error(name: str, message: str):
    return new_output("error", ename=name, evalue=message, traceback=[f"{name}: {message}"])


class GuardedExecute(Execute):
    sandbox = Unicode("bwrap", help="'bwrap' to sandbox kernels, 'none' to run them unsandboxed").tag(config=True)
    notebook_timeout = Integer(900, help="Wall-clock seconds for the whole notebook").tag(config=True)
    interrupt_grace = Integer(5, help="Seconds a kernel has to stop after an interrupt").tag(config=True)
    max_output_bytes = Integer(1_000_000, help="Output bytes kept per cell").tag(config=True)
    memory_bytes = Integer(2 << 30, help="Address-space limit of the kernel").tag(config=True)
    cpu_seconds = Integer(1800, help="CPU-time limit of the kernel").tag(config=True)
    file_bytes = Integer(64 << 20, help="Largest file the kernel may write").tag(config=True)

    # --- one notebook ------------------------------------------------------------------------
    def preprocess(self, nb, resources=None, km=None):
        if self.sandbox == "bwrap" and not bubblewrap():
            raise RuntimeError("bubblewrap (bwrap) is not installed: refusing to grade unsandboxed")
        self._lost = None
        self._deadline = time.monotonic() + self.notebook_timeout
        self._runtime = Path(tempfile.mkdtemp(prefix="perfcourse-kernel-"))
        self._secret = secrets.token_bytes(32)
        secret_file = self._runtime / "secret"
        secret_file.write_bytes(self._secret)
        secret_file.chmod(0o600)
        self.extra_arguments = [
            "--HistoryManager.hist_file=:memory:",
            f"--IPKernelApp.exec_lines=[\"__import__('perfcourse.grading.integrity').grading.integrity"
            f".install({str(secret_file)!r})\"]",
        ]
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            shutil.rmtree(self._runtime, ignore_errors=True)
        self._judge(nb)
        return nb, resources

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.transport = "ipc"
        km.ip = str(self._runtime / "ipc")
        km.connection_file = str(self._runtime / "connection.json")
        spec = km.kernel_spec
        spec.argv = [sys.executable, "-m", "perfcourse.grading.sandbox", *spec.argv]
        # Signals do not cross into the sandbox's PID namespace: interrupt over the control channel.
        spec.interrupt_mode = "message"
        return km

    async def async_start_new_kernel(self, **kwargs):
        env = dict(os.environ)
        env[ENV_SETTINGS] = json.dumps({
            "mode": self.sandbox,
            "runtime": str(self._runtime),
            "limits": {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds,
                       "file_bytes": self.file_bytes, "open_files": 1024},
        })
        kwargs["env"] = env
        return await super().async_start_new_kernel(**kwargs)

    async def async_start_new_kernel_client(self):
        result = await super().async_start_new_kernel_client()
        # The kernel is up, so the guard has read its secret: student code will not find it on disk.
        (self._runtime / "secret").unlink(missing_ok=True)
        return result

    # nbclient binds its synchronous wrappers to its own methods; point them at these.
    start_new_kernel = run_sync(async_start_new_kernel)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    # --- each cell ---------------------------------------------------------------------------
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        if self._lost is None and time.monotonic() > self._deadline:
            self._lost = f"the notebook ran past its {self.notebook_timeout} s limit"
            self._kill()
        if self._lost is not None:
            cell.outputs = [_error("NotRun", f"not run: {self._lost}")]
            return cell, resources
        self._output_bytes = 0
        try:
            return super().preprocess_cell(cell, resources, index)
        except Exception as exc:
            if self._lost is None and not isinstance(exc, DeadKernelError):
                raise
            self._lost = self._lost or f"the kernel died in cell {index} (exit, crash or a resource limit)"
            cell.outputs.append(_error("KernelDied", self._lost))
            return cell, resources

    async def _async_handle_timeout(self, timeout, cell=None):
        reply = await super()._async_handle_timeout(timeout, cell)  # interrupts the kernel
        if not await self._responds(self.interrupt_grace):
            self._lost = f"a cell ran past the {timeout} s cell limit and ignored the interrupt; the kernel was killed"
            self._kill()
        return reply

    async def _responds(self, grace: float) -> bool:
        """Does the kernel answer a trivial request within `grace` seconds of an interrupt?"""
        probe = self.kc.execute("", silent=True, store_history=False)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                msg = await ensure_async(self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic())))
            except Exception:  # queue.Empty, or the kernel is gone
                continue
            if msg.get("parent_header", {}).get("msg_id") == probe:
                return True
        return False

    def _kill(self):
        """Kill the sandbox process; bubblewrap takes the kernel with it (--die-with-parent)."""
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {})))
        self._output_bytes = getattr(self, "_output_bytes", 0) + size
        if self._output_bytes > self.max_output_bytes:
            if self._output_bytes - size <= self.max_output_bytes:
                outs.append(new_output("stream", name="stderr",
                                       text=f"\n[output limit of {self.max_output_bytes} bytes reached: "
                                            "the rest of this cell's output was dropped]\n"))
            return None
        return super().output(outs, msg, display_id, cell_index)

    # --- the verdict -------------------------------------------------------------------------
    def _judge(self, nb) -> None:
        """Fail every grade cell the guard did not vouch for; drop the guard's records."""
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            records = [out for out in cell.get("outputs", []) if integrity.MIME in out.get("data", {})]
            cell.outputs = [out for out in cell.get("outputs", []) if integrity.MIME not in out.get("data", {})]
            if not cell.metadata.get("nbgrader", {}).get("grade"):
                continue
            if any(out.output_type == "error" and out.ename in ("NotRun", "KernelDied") for out in cell.outputs):
                continue
            problem = self._problem(cell, records)
            if problem:
                cell.outputs.append(_error("IntegrityError", problem))

    def _problem(self, cell, records) -> str | None:
        if len(records) != 1:
            return ("this test cell left no record from the grading guard: the kernel was tampered "
                    "with (the guard was removed or execution was redirected)")
        record = records[0]["data"][integrity.MIME]
        expected = integrity.signature(self._secret, record.get("cell", ""), record.get("tampered", []),
                                       record.get("raised", False))
        if not hmac.compare_digest(expected, str(record.get("signature", ""))):
            return "this test cell's guard record is forged"
        if record["cell"] != integrity.cell_hash(cell.source):
            return "this test cell did not run as written"
        if record["tampered"]:
            return "the kernel was tampered with: " + "; ".join(record["tampered"])
        if record["raised"] and not any(out.output_type == "error" for out in cell.outputs):
            return "this test cell raised an error that was hidden from its output"
        return None
