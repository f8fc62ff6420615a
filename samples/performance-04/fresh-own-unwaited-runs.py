# The compile span right and the program's first run kept apart, but the warm runs timed by its own loop
# that never waits for a result: each sample ends when the call returns, not "until its result is ready"
# as the task asks. Loses the compile-apart points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    began = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - began
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    jax.block_until_ready(compiled(*args))  # the first run, kept apart
    warm = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        compiled(*args)
        warm.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": warm}
