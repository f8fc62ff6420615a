"""Claims the lessons make about JAX, checked on this CPU with the pinned JAX: each test names the
lesson and cell whose text it keeps honest. Claims about a TPU or a GPU are marked in the lesson
text as published, not measured, and are not tested here.
"""
import os

import jax
import jax.numpy as jnp


def _traces_of(calls) -> int:
    traces = []

    def fn(x):
        traces.append(1)
        return x @ x

    jitted = jax.jit(fn)
    for context in calls:
        with context():
            jax.block_until_ready(jitted(jnp.ones((4, 4), jnp.float32)))
    return len(traces)


def test_performance_02_the_configuration_context_is_in_the_trace_key():
    """performance-02, cell-02 and cell-31: a call inside a scoped configuration traces anew."""
    import contextlib

    plain = contextlib.nullcontext
    assert _traces_of([plain, plain]) == 1
    assert _traces_of([plain, lambda: jax.default_matmul_precision("float32")]) == 2
    assert _traces_of([plain, lambda: jax.numpy_rank_promotion("raise")]) == 2


PERSISTENT_CACHE_SCRIPT = """
import logging, sys
import jax, jax.numpy as jnp

lines = []
class Collect(logging.Handler):
    def emit(self, record):
        lines.append(record.getMessage())
logging.getLogger("jax").addHandler(Collect(logging.WARNING))

def explanations(value):
    lines.clear()
    jitted = jax.jit(lambda v: v + 1.0)
    jax.config.update("jax_explain_cache_misses", True)
    jax.block_until_ready(jitted(value))
    jax.block_until_ready(jitted(jax.device_put(value, jax.devices()[0])))  # compiles, no trace
    jax.config.update("jax_explain_cache_misses", False)
    return sum("cache miss" in line.lower() for line in lines)

print(explanations(jnp.arange(8.0)))
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
print(explanations(jnp.arange(16.0)))
"""


def test_performance_02_the_persistent_cache_explains_every_compile(tmp_path):
    """performance-02, cell-25 and cell-31: by default `jax_explain_cache_misses` explains a trace
    only, so a compile without a trace (the same array, committed) gets no line; with the
    persistent compilation cache on, JAX logs a cache-miss line for every compile too. (In a
    process of its own: a persistent cache, once on, stays on for the process.)"""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", PERSISTENT_CACHE_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "3"]  # the trace only; then the trace and a line per compile


def _compiles_during(call) -> int:
    """How many executables JAX compiles while `call()` runs (jax.monitoring's compile event)."""
    events = []

    def on_duration(event, duration_secs, **details):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        jax.block_until_ready(call())
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return len(events)


def test_performance_06_the_warm_up_must_run_the_loops_own_length():
    """performance-06, e2a7cba9: jnp.stack of a loop's losses is a program of its own for each count,
    so a warm-up of 2 steps leaves the 8-step loop's stack to compile inside the trace; a warm-up of
    the loop's own length leaves nothing to compile. The lesson warms up with STEPS."""
    import nbformat

    from conftest import ROOT

    step = jax.jit(lambda w: (w * 0.5, jnp.sum(w)))

    def train(steps):
        w, losses = jnp.ones(4), []
        for _ in range(steps):
            w, loss = step(w)
            losses.append(loss)
        return w, jnp.stack(losses)

    _compiles_during(lambda: step(jnp.ones(4)))
    assert _compiles_during(lambda: train(2)) >= 1
    assert _compiles_during(lambda: train(8)) == 1  # the stack of 8: compiled in the "fixed" trace
    assert _compiles_during(lambda: train(8)) == 0  # warmed up at its own length: nothing left
    nb = nbformat.read(ROOT / "source" / "performance-06" / "performance-06.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "e2a7cba9"]
    assert "jax.block_until_ready(train(train_step, params0, batch, STEPS))" in cell.source
    assert "batch, 2)" not in cell.source


def _best_seconds(fn, *args, calls: int = 9) -> float:
    """The fastest of `calls` synchronized calls of fn compiled for args (compiled and run once first)."""
    import time

    compiled = jax.jit(fn).lower(*args).compile()
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - start)
    return best


def test_performance_07_a_256_cubed_product_is_below_the_compute_ceiling_of_larger_ones():
    """performance-07, cell-09: the compute ceiling is the best of 512^3 and 1024^3 products, because
    a 256^3 product runs below the rate larger ones reach (here about 160 against 250 GFLOP/s)."""
    def rate(n):
        a = jnp.ones((n, n), jnp.float32)
        return 2 * n ** 3 / _best_seconds(lambda x, y: x @ y, a, a)

    assert max(rate(512), rate(1024)) > 1.1 * rate(256)


def test_performance_07_small_copies_run_from_cache_and_large_ones_from_memory():
    """performance-07, cell-09: v * 2 on a 1 MiB array (2 MiB moved) runs from the caches, on a 64 MiB
    array (128 MiB moved, beyond a 32 MiB last-level cache) from main memory, several times slower
    (here about 30 and 5 GB/s): two bandwidth roofs, and the lesson measures both."""
    import nbformat

    from conftest import ROOT

    def rate(mib):
        v = jnp.ones(mib * (1 << 20) // 4, jnp.float32)
        return 2 * v.nbytes / _best_seconds(lambda u: u * 2.0, v, calls=5)

    assert rate(1) > 2 * rate(64)
    nb = nbformat.read(ROOT / "source" / "performance-07" / "performance-07.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == "cell-10"]
    assert "for n in (512, 1024)" in cell.source and "SWEEP_MIB = (0.25, 1, 4, 16, 64)" in cell.source
    assert '"peak_bytes_per_second": memory_bandwidth' in cell.source
