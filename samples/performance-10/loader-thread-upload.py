# Takes the copies off the step's thread instead of out of the loop: a loader thread uploads the
# batch again while each step runs (prefetching the next one), so the step's own thread shows no
# copy, but the loop still copies in every step. The lesson's fixed loop copies nothing in its
# steps and puts the batch on the device once, when it is built. Loses the points for loop B only.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=0 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    from concurrent.futures import ThreadPoolExecutor

    update = jax.jit(functools.partial(sgd_update, lr=lr))
    loader = ThreadPoolExecutor(max_workers=1)
    upload = lambda: jax.device_put((x_host, y_host))  # noqa: E731
    pending = [loader.submit(upload)]

    def step(params):
        x, y = pending[0].result()
        pending[0] = loader.submit(upload)  # the next step's batch, copied meanwhile on the loader
        return update(params, x, y)
    return step
