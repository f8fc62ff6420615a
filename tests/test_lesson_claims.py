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
