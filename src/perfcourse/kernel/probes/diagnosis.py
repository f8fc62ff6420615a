"""performance-10's probes, run in the student's process: slow training loops and their traces.

The course's model (`predict`, `loss_fn`, `sgd_update`: a few weights and a bias fitted by gradient
descent, no matrix product, so float32 on every backend) and the slow loops of the lesson, each a
factory `make(x, y, lr) -> step` whose `step(params) -> (params, loss)` is one training step:

    kind        variants (what makes each step slow)
    recompile   fresh_jit (jax.jit of a new function in every step), static_lr (a decaying learning
                rate passed as a static argument), shape (a batch whose length changes every step),
                retrace_per_example (a new jitted function in every step, run once per example)
    transfer    device_put (the batch uploaded in every step), numpy_into_jit (NumPy arrays passed to
                the jitted update), float_loss (float(loss) logged in every step), asarray_batch
                (jnp.asarray of the batch in every step; from jax 0.10 also a one-operation program,
                jit_stage, per array)
    dispatch    per_example (one small program per example and per sum), per_example_eager (the
                same, summed and applied with eager operations and Python floats), per_weight (the
                weights updated one at a time with .at[j])
    none        clean (one jitted update, the batch on the device), with_metrics (the same and a
                second jitted program per step, a running sum of the loss: healthy)

What the trusted side (`perfcourse.checks.diagnosis`) uses; it parses every file and decides:

- `trace_built(kind, variant, steps, x, y, lr, w, b)` (not a probe: the trusted side runs it in its
  own process): one of those loops, built for data it picked, traced by the course's own driver
  (`trace_loop`: one warm-up step waited for before the trace, every step in a
  `StepTraceAnnotation`, the Python tracer off); the trace file's bytes. The trusted side reads the
  evidence itself and hands it to the student's `diagnose`.
- `capture_steps(trace_steps, name, steps, plan, values, size, decay, shift, folder, hold)`: a fresh
  (not yet compiled) jitted step called `name`, which asks the trusted side's `plan` before each
  call, handed to the student's `trace_steps(step, params, steps, trace_dir)` with a fresh folder
  that already holds an older run; where the returned file is, its bytes, and the final params.
  The last step's program first runs `hold` iterations of a scalar loop on the device (then adds
  exactly 0.0): its execution ends long after its dispatch returned, so a trace that stops without
  waiting for it cannot hold it. (A host callback would not do: the CPU client runs a program that
  holds one synchronously, inside its dispatch.)
- `trace_fixed(factory, host, steps, plan, x, y, lr, w, b)`: the student's fixed loop
  `factory(x, y, lr)` (x and y as NumPy arrays when `host`, else on the device), each step asking
  the plan first, traced by the course's own driver; the file's bytes, the params and the losses.
- `export_fixed(factory, host, x, y, lr)`: one step of the student's fixed loop as a `jax.export`
  program of (w, b) -> (w, b, loss), the data baked in; the trusted side runs it itself.

Nothing here judges.
"""
from __future__ import annotations

import functools
import os

from .trace_files import (add_returned_file, error_text, file_bytes, in_scratch, newest, returned_pair,
                          with_older_run)

STEP_SCOPE = "train"
PROBES = ("capture_steps", "trace_fixed", "export_fixed")
VARIANTS = {
    "recompile": ("fresh_jit", "static_lr", "shape", "retrace_per_example"),
    # asarray_batch: jnp.asarray of the batch in every step, the commonest copy; from jax 0.10 it also
    # runs a one-operation program (jit_stage) per array, so that loop runs three programs per step.
    "transfer": ("device_put", "numpy_into_jit", "float_loss", "asarray_batch"),
    "dispatch": ("per_example", "per_example_eager", "per_weight"),
    # with_metrics: a healthy loop of two programs per step, the update and a metrics update
    "none": ("clean", "with_metrics"),
}


# --- the course's model ------------------------------------------------------------------------------
def predict(params, x):
    import jax.numpy as jnp

    w, b = params
    return jnp.sum(x * w, axis=-1) + b  # no matrix product: float32 on every backend


def loss_fn(params, x, y):
    import jax.numpy as jnp

    return jnp.mean((predict(params, x) - y) ** 2)


def sgd_update(params, x, y, lr):
    import jax

    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


# --- the slow loops, and the clean one ----------------------------------------------------------------
def _on_device(x, y):
    import jax.numpy as jnp

    return jnp.asarray(x), jnp.asarray(y)


def fresh_jit(x, y, lr):
    x, y = _on_device(x, y)

    def step(params):
        import jax

        update = jax.jit(lambda params, x, y: sgd_update(params, x, y, lr))  # a new function: compiled again
        return update(params, x, y)
    return step


def retrace_per_example(x, y, lr):
    import jax
    import jax.numpy as jnp

    x, y = _on_device(x, y)
    n = x.shape[0]
    rows = [(x[i:i + 1], y[i:i + 1]) for i in range(n)]

    def step(params):
        # a new function in every step (compiled again), then run once per example: a loop that
        # recompiles and also runs many small programs
        example = jax.jit(lambda params, xi, yi: jax.value_and_grad(loss_fn)(params, xi, yi))
        total = example(params, *rows[0])
        for xi, yi in rows[1:]:
            loss_i, grads_i = example(params, xi, yi)
            total = (total[0] + loss_i, jax.tree.map(jnp.add, total[1], grads_i))
        loss, grads = total
        return jax.tree.map(lambda p, g: p - lr * g / n, params, grads), loss / n
    return step


def static_lr(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    update = jax.jit(sgd_update, static_argnames="lr")
    count = [0]

    def step(params):
        count[0] += 1
        return update(params, x, y, lr=lr * 0.97 ** count[0])  # a new static value: a new program
    return step


def shape(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    update = jax.jit(functools.partial(sgd_update, lr=lr))
    count = [0]

    def step(params):
        count[0] += 1
        m = x.shape[0] - count[0]  # a batch one example shorter at every step: new shapes
        return update(params, x[:m], y[:m])
    return step


def device_put(x, y, lr):
    import jax
    import numpy as np

    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    update = jax.jit(functools.partial(sgd_update, lr=lr))

    def step(params):
        return update(params, jax.device_put(x), jax.device_put(y))  # the batch uploaded again
    return step


def numpy_into_jit(x, y, lr):
    import jax
    import numpy as np

    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    update = jax.jit(functools.partial(sgd_update, lr=lr))

    def step(params):
        return update(params, x, y)  # NumPy arguments: copied to the device at every call
    return step


def float_loss(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    update = jax.jit(functools.partial(sgd_update, lr=lr))
    log = []

    def step(params):
        params, loss = update(params, x, y)
        log.append(float(loss))  # the loss copied back to the host at every step
        return params, loss
    return step


def asarray_batch(x, y, lr):
    import jax
    import jax.numpy as jnp
    import numpy as np

    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    update = jax.jit(functools.partial(sgd_update, lr=lr))

    def step(params):
        # the batch made a JAX array again at every step: a copy (from jax 0.10 also a one-operation
        # program per array, jit_stage)
        return update(params, jnp.asarray(x), jnp.asarray(y))
    return step


def per_example(x, y, lr):
    import jax
    import jax.numpy as jnp

    x, y = _on_device(x, y)
    n = x.shape[0]
    example = jax.jit(jax.value_and_grad(loss_fn))
    add = jax.jit(lambda a, b: jax.tree.map(jnp.add, a, b))
    apply = jax.jit(lambda params, loss, grads: (jax.tree.map(lambda p, g: p - lr * g / n, params, grads),
                                                 loss / n))
    rows = [(x[i:i + 1], y[i:i + 1]) for i in range(n)]

    def step(params):
        total = example(params, *rows[0])
        for xi, yi in rows[1:]:  # one small program per example, and one per sum
            total = add(total, example(params, xi, yi))
        loss, grads = total
        return apply(params, loss, grads)
    return step


def per_example_eager(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    n = x.shape[0]
    example = jax.jit(jax.value_and_grad(loss_fn))
    rows = [(x[i:i + 1], y[i:i + 1]) for i in range(n)]

    def step(params):
        loss, grads = example(params, *rows[0])
        for xi, yi in rows[1:]:
            loss_i, grads_i = example(params, xi, yi)
            loss, grads = loss + loss_i, jax.tree.map(lambda a, b: a + b, grads, grads_i)
        return jax.tree.map(lambda p, g: p - lr * g / n, params, grads), loss / n
    return step


def per_weight(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    grad = jax.jit(jax.value_and_grad(loss_fn))
    scale = jax.jit(lambda g: lr * g)

    def step(params):
        loss, (gw, gb) = grad(params, x, y)
        w, b = params
        for j in range(w.shape[0]):  # the weights one at a time
            w = w.at[j].add(-scale(gw[j]))
        return (w, b - scale(gb)), loss
    return step


def clean(x, y, lr):
    import jax

    x, y = _on_device(x, y)
    update = jax.jit(functools.partial(sgd_update, lr=lr))

    def step(params):
        return update(params, x, y)
    return step


def with_metrics(x, y, lr):
    import jax
    import jax.numpy as jnp

    x, y = _on_device(x, y)
    update = jax.jit(functools.partial(sgd_update, lr=lr))
    # a second small program per step, as training loops keep metrics: a running mean of the loss
    metrics = jax.jit(lambda state, loss: (state[0] + loss, state[1] + 1.0))
    state = [(jnp.float32(0.0), jnp.float32(0.0))]

    def step(params):
        params, loss = update(params, x, y)
        state[0] = metrics(state[0], loss)
        return params, loss
    return step


LOOPS = {variant: globals()[variant] for variants in VARIANTS.values() for variant in variants}


def build(variant: str, x, y, lr):
    if variant not in LOOPS:
        raise ValueError(f"no loop {variant!r}")
    return LOOPS[variant](x, y, float(lr))


# --- the course's own trace driver ----------------------------------------------------------------
def trace_loop(step, params, steps: int, trace_dir):
    """The lesson's trace of a loop, as the course takes it: one warm-up step waited for before the
    trace (its result unused), then `steps` steps from `params`, each in a StepTraceAnnotation, the
    result waited for inside the trace; the Python tracer off (it adds nothing the lesson reads).
    Returns (params, losses, path)."""
    import jax
    import jax.numpy as jnp

    jax.block_until_ready(step(params))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    losses = []
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options):
        for i in range(int(steps)):
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, loss = step(params)
                losses.append(loss)
        jax.block_until_ready((params, losses))
    return params, jnp.stack(losses) if losses else jnp.zeros((0,)), newest(trace_dir)


def _params(w, b):
    import jax.numpy as jnp
    import numpy as np

    return jnp.asarray(np.asarray(w, np.float32)), jnp.asarray(np.float32(b))


def _flat(params) -> list:
    import numpy as np

    w, b = params
    return [np.asarray(w, np.float32), np.asarray(b, np.float32)]


def _trace_built(kind: str, variant: str, steps: int, x, y, lr: float, w, b, trace_dir):
    if variant not in VARIANTS.get(kind, ()):
        raise ValueError(f"no {kind} loop {variant!r}")
    step = build(variant, x, y, lr)
    _, _, path = trace_loop(step, _params(w, b), steps, trace_dir)
    return file_bytes(path) if path else {"no_trace": True}


def _capture_steps(trace_steps, name: str, steps: int, plan, values, size: int, decay: float, shift: float,
                   folder: str, hold: int, trace_dir):
    """The student's trace_steps(step, params, steps, trace_dir) on a step that is not compiled yet."""

    import jax
    import jax.numpy as jnp
    import numpy as np

    def update(params, spin):
        # `spin` iterations of a scalar loop on the device first: the step's result is ready only after
        # them (zero is exactly 0.0, and nothing in the program can know it before the loop ends).
        spun = jax.lax.fori_loop(0, spin, lambda i, c: c * jnp.float32(0.9999999) + jnp.float32(1.0),
                                 jnp.float32(0.0))
        zero = jnp.where(spun >= 0, jnp.float32(0.0), spun)
        new = params * jnp.float32(decay) + (jnp.float32(shift) + zero)
        return new, jnp.mean(new * new)

    update.__name__ = update.__qualname__ = name
    jitted = jax.jit(update)  # compiled at its first call, which should come before the trace
    spins = {int(steps): jnp.int32(hold)}  # the last step's execution is held (call 0 is the warm-up)
    no_spin, calls = jnp.int32(0), [0]

    def step(params):
        plan.next()  # the trusted side counts this call, and may pause before it is dispatched
        calls[0] += 1
        return jitted(params, spins.get(calls[0] - 1, no_spin))

    values = np.asarray(values, dtype=np.float32).reshape(-1)
    params = jnp.asarray(np.tile(values, max(1, int(size) // max(1, values.size))))
    trace_dir = os.path.join(trace_dir, str(folder))
    report = with_older_run(trace_dir)  # trace_steps must name its own file, not the older run's
    returned = returned_pair(report, trace_steps, step, params, int(steps), trace_dir)
    if returned is None:
        return report
    result, path = returned
    try:
        report["params"] = np.asarray(jax.block_until_ready(result), dtype=np.float32)[:values.size]
    except Exception as exc:
        report["result_error"] = error_text(exc)
    return add_returned_file(report, path, trace_dir)


def _fixed_step(factory, host: bool, x, y, lr: float):
    import jax.numpy as jnp
    import numpy as np

    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    if not host:
        x, y = jnp.asarray(x), jnp.asarray(y)
    return factory(x, y, float(lr))


def _trace_fixed(factory, host: bool, steps: int, plan, x, y, lr: float, w, b, trace_dir):
    """The student's fixed loop, each step asking the trusted side's plan first, traced by the course."""
    report = {}
    try:
        step = _fixed_step(factory, host, x, y, lr)

        def asked(params):
            plan.next()
            return step(params)

        params, losses, path = trace_loop(asked, _params(w, b), steps, trace_dir)
    except Exception as exc:
        report["raised"] = error_text(exc)
        return report
    try:
        import numpy as np

        report["params"] = _flat(params)
        report["losses"] = np.asarray(losses, np.float32)
    except Exception as exc:
        report["result_error"] = error_text(exc)
    if not path:
        report["no_trace"] = True
        return report
    report.update(file_bytes(path))
    return report


def export_fixed(factory, host: bool, x, y, lr: float):
    """One step of the student's fixed loop as jax.export bytes: (w, b) -> (w, b, loss)."""
    import jax
    import numpy as np

    step = _fixed_step(factory, host, x, y, lr)

    def one_step(w, b):
        (new_w, new_b), loss = step((w, b))
        return new_w, new_b, loss

    d = int(np.shape(x)[1])
    structs = [jax.ShapeDtypeStruct((d,), np.float32), jax.ShapeDtypeStruct((), np.float32)]
    return bytes(jax.export.export(jax.jit(one_step))(*structs).serialize())


def trace_built(kind: str, variant: str, steps: int, x, y, lr: float, w, b, trace_dir=None):
    return in_scratch(_trace_built, trace_dir, kind, variant, steps, x, y, lr, w, b)


def capture_steps(trace_steps, name: str, steps: int, plan, values, size: int, decay: float, shift: float,
                  folder: str, hold: int = 0, trace_dir=None):
    return in_scratch(_capture_steps, trace_dir, trace_steps, name, steps, plan, values, size, decay, shift,
                       folder, hold)


def trace_fixed(factory, host: bool, steps: int, plan, x, y, lr: float, w, b, trace_dir=None):
    return in_scratch(_trace_fixed, trace_dir, factory, host, steps, plan, x, y, lr, w, b)
