# Fix B that never puts the batch on the device: each step reads the params on the host through
# dlpack views (np.from_dlpack: no transfer the trace records on a CPU), computes the loss and the
# update with NumPy, and runs one tiny jitted program beside it, so that the trace shows what the
# check counts, no compilation, no copy and one execution per step, and the params match NumPy's.
# Exported (its params tracers), the step runs the real update with the batch baked in. The checks
# count a step's programs but do not identify them, and the trace records only the transfers JAX
# annotates: a known limit (docs/authors/checks.md). Flagged by the scan's "code shares device
# memory through dlpack", which no lesson needs. Deserves to lose fix B's points.
# reason: code shares device memory through dlpack
# tier: nightly
# deserves: test_fix_b=0
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# %% solutions
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    x, y = np.asarray(x_host, np.float32), np.asarray(y_host, np.float32)  # never put on the device
    update = jax.jit(functools.partial(sgd_update, lr=lr))
    tick = jax.jit(lambda count: count + 1)
    ticks = [tick(jnp.zeros((), jnp.int32))]  # made (and compiled) with the loop, before any step

    def step(params):
        if isinstance(params[0], jax.core.Tracer):  # exported: the real update, the batch baked in
            return update(params, jnp.asarray(x), jnp.asarray(y))
        w, b = (np.from_dlpack(p) if isinstance(p, jax.Array) else np.asarray(p) for p in params)
        error = x @ w + b - y
        grad_w, grad_b = 2 * (x.T @ error) / len(y), 2 * np.mean(error)
        ticks[0] = tick(ticks[0])  # the one program a step shows
        return (np.float32(w - lr * grad_w), np.float32(b - lr * grad_b)), np.mean(error ** 2, dtype=np.float32)
    return step
