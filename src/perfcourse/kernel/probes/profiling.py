"""performance-06's probes, run in the student's process: what a profiler trace recorded.

- `capture_region(capture, scope, name, size, plan, values, scale, offset, folder, trace_dir)`
  builds a workload *here* for values picked on the trusted side: a jitted elementwise function
  called `name` (so its compiled module is `jit_<name>`), dispatched inside a
  `TraceAnnotation(scope)` as many times as the trusted side's `plan` allows, asked before each
  dispatch (the plan is the trusted side's own object: it counts the dispatches itself, and
  pauses before some of them for lengths it never tells), on arrays holding `values`, and
  returned without waiting for it. It puts an older run's trace file in a fresh folder named
  `folder` (two: one right under it, one in a run folder named to sort last), hands the workload
  and the folder to the student's `capture(fn, trace_dir)`, and
  returns where the file the student's function named is and **its bytes**, with the result.
  The trusted side decompresses and parses the file itself.
- `load_written(load_trace, data, trace_dir)` writes the bytes of a gzip-compressed JSON trace
  file made on the trusted side here and returns what the student's `load_trace` read from it
  (the probe is handed the file's bytes, not the trace: answering without reading them would
  take decompressing and parsing them, which is the task).
- `trace_training(train, name, steps, plan, values, size, decay, shift, trace_dir)` builds a jitted step
  `step(params, batch) -> (params, loss)` called `name`, which asks the trusted side's `plan`
  before each dispatch (the trusted side counts the steps the student's loop takes, and pauses
  before some), captures a trace of the student's `train(step, params, batch, steps)` with
  `jax.profiler` (the probe's own capture, not the student's) from parameters holding `values`
  (tiled to `size`), waits for the result inside it, and returns the trace file's bytes with the
  result.
- `three_numbers_run(three_numbers, name, schedule, calls, trace_dir)` builds a jitted program
  called `name` (a device loop whose trip count is an argument, beside a small matrix product, so
  XLA's CPU client runs it asynchronously, as an accelerator would), compiled here first, behind a
  function that asks the trusted side's `schedule` (checks/profiling.py's `Calls`) before each
  dispatch: the trusted side holds each call for a time it never tells and then gives its trip
  count, counting the calls and timing them on its own clock, and is told (`dispatched()`) once the
  program is dispatched, when it may hold the call again while the work runs; the probe tells it (`finished()`) as
  soon as the student's function returns. It hands that function and its
  argument to the student's `three_numbers(fn, *args, module, trace_dir, calls)` and returns the
  three numbers and **the bytes** of the newest trace file under `trace_dir`.

Nothing here judges: the trusted side (`perfcourse.checks.profiling`) parses the files and decides.
"""
from __future__ import annotations

import os
import shutil

from .trace_files import (OLDER_MTIME, TRACE_FILE, add_returned_file, error_text, in_scratch, newest_bytes,
                          returned_pair, with_older_run)

PROBES = ("capture_region", "load_written", "trace_training", "three_numbers_run")
# Calls that make the host wait for a device result, as the profiler names them: a Python-level
# event "$file.py:LINE function" (the Python tracer), JAX's own annotation of a transfer, or the CPU
# runtime's record of a wait for a buffer (Array.block_until_ready is C++, which the Python tracer
# does not see).
SYNC_CALLS = ("__float__", "__int__", "__bool__", "__index__", "item", "tolist", "__array__", "_value",
              "block_until_ready", "device_get", "np.asarray(jax.Array)", "CommonPjRtBuffer::Await")


def function_name(name: str) -> str:
    """'$array.py:297 __float__' -> '__float__'; any other event name as it is."""
    name = str(name)
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else name


def _elementwise(name: str):
    import jax
    import jax.numpy as jnp

    def workload(a, scale, offset):
        return jnp.tanh(a * scale + offset)

    workload.__name__ = workload.__qualname__ = name
    return jax.jit(workload)


def _capture_region(capture, scope: str, name: str, size: int, plan, values, scale: float, offset: float,
                    folder: str, trace_dir):
    """The student's capture(fn, trace_dir) around a workload that returns before it has run."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    work = _elementwise(name)
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    start = jnp.asarray(np.tile(values, max(1, int(size) // max(1, values.size))))
    scale, offset = np.float32(scale), np.float32(offset)
    jax.block_until_ready(work(start, scale, offset))  # compiled before the trace

    def fn():
        with jax.profiler.TraceAnnotation(scope):
            out = start
            while plan.next():  # the trusted side says, one dispatch at a time, whether to go on
                out = work(out, scale, offset)
        return out  # not waited for: the capture must wait for it inside the trace

    trace_dir = os.path.join(trace_dir, str(folder))
    report = with_older_run(trace_dir)  # the capture must name its own file, not the older run's
    # And one right under the folder, older still: a recursive glob or os.walk lists it first, so a capture
    # that takes the first file found, not the newest, names it whatever order the folder lists its runs in.
    oldest = os.path.join(trace_dir, TRACE_FILE)
    shutil.copyfile(report["older"], oldest)
    os.utime(oldest, (OLDER_MTIME - 100, OLDER_MTIME - 100))
    returned = returned_pair(report, capture, fn, trace_dir)
    if returned is None:
        return report
    result, path = returned
    report["result"] = np.asarray(jax.block_until_ready(result))[:values.size] if hasattr(result, "shape") else None
    return add_returned_file(report, path, trace_dir)


def _load_written(load_trace, data: bytes, trace_dir):
    """Write `data` (a gzip-compressed JSON trace) as a file here; what the student's load_trace reads back."""
    path = os.path.join(trace_dir, TRACE_FILE)
    with open(path, "wb") as handle:
        handle.write(bytes(data))
    try:
        return {"returned": load_trace(path)}
    except Exception as exc:
        return {"raised": error_text(exc)}


def _train_step(name: str, plan):
    """The jitted step called `name`, behind a function that asks the trusted side's plan first."""
    import jax
    import jax.numpy as jnp

    def step(params, batch):
        # One elementwise update (no matrix product: float32 on every backend) and its loss.
        decay, shift = batch
        new = params * decay + shift
        return new, jnp.mean(new * new)

    step.__name__ = step.__qualname__ = name
    jitted = jax.jit(step)

    def asked(params, batch):
        plan.next()  # the trusted side counts this step, and may pause before it is dispatched
        return jitted(params, batch)

    return jitted, asked


def _trace_training(train, name: str, steps: int, plan, values, size: int, decay: float, shift: float, trace_dir):
    """The student's train(step, params, batch, steps) under the probe's own trace: the file's bytes."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    jitted, step = _train_step(name, plan)
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    params = jnp.asarray(np.tile(values, max(1, int(size) // max(1, values.size))))
    batch = (jnp.float32(decay), jnp.float32(shift))
    jax.block_until_ready(jitted(params, batch))  # compiled before the trace
    report = {}
    try:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            out = train(step, params, batch, int(steps))
            jax.block_until_ready(out)
    except Exception as exc:
        report["raised"] = error_text(exc)
        return report
    try:
        new_params, losses = out
        report["losses_on_device"] = isinstance(losses, jax.Array)  # one array, not numbers or a list of them
        report["params"] = np.asarray(new_params, dtype=np.float32)
        report["losses"] = np.asarray(losses, dtype=np.float32)
    except Exception as exc:
        report["result_error"] = error_text(exc)
    report.update(newest_bytes(trace_dir))
    return report


MATRIX = 256  # the product beside the loop (as checks/timing.py's instrument): dispatched asynchronously on a CPU


def _spin_program(name: str):
    """A jitted device loop of a given trip count, called `name` (its module: jit_<name>)."""
    import jax
    import jax.numpy as jnp

    def spin(iterations, matrix):
        spun = jax.lax.fori_loop(0, iterations, lambda i, c: c * jnp.float32(0.9999999) + 1.0, jnp.float32(0))
        return (matrix @ matrix)[:2, :2] * 0 + (spun * 0 + 1)

    spin.__name__ = spin.__qualname__ = name
    return jax.jit(spin)


def _three_numbers_run(three_numbers, name: str, schedule, calls: int, trace_dir):
    """The student's three_numbers on a function each of whose calls the trusted side holds and sizes."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    program = _spin_program(name)
    matrix = jnp.ones((MATRIX, MATRIX), jnp.float32)
    jax.block_until_ready(program(np.int32(1), matrix))  # compiled before it is handed over

    def fn(matrix):
        out = program(np.int32(schedule.next_call()), matrix)
        schedule.dispatched()  # the trusted side may hold the call again while its work runs
        return out

    report = {}
    try:
        numbers = three_numbers(fn, matrix, module=f"jit_{name}", trace_dir=trace_dir, calls=int(calls))
    except Exception as exc:
        report["raised"] = error_text(exc)
        return report
    finally:
        schedule.finished()  # the trusted side's clock: the function's return, before any file is read
    try:
        report["numbers"] = {key: float(numbers[key]) for key in ("latency", "throughput", "device")}
    except Exception as exc:
        report["returned"] = error_text(exc)
        return report
    report.update(newest_bytes(trace_dir))
    return report


def capture_region(capture, scope: str, name: str, size: int, plan, values, scale: float, offset: float,
                   folder: str, trace_dir=None):
    return in_scratch(_capture_region, trace_dir, capture, scope, name, size, plan, values, scale, offset, folder)


def load_written(load_trace, data: bytes, trace_dir=None):
    return in_scratch(_load_written, trace_dir, load_trace, data)


def trace_training(train, name: str, steps: int, plan, values, size: int, decay: float, shift: float,
                   trace_dir=None):
    return in_scratch(_trace_training, trace_dir, train, name, steps, plan, values, size, decay, shift)


def three_numbers_run(three_numbers, name: str, schedule, calls: int, trace_dir=None):
    return in_scratch(_three_numbers_run, trace_dir, three_numbers, name, schedule, calls)
