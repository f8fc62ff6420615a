# Compiles apart, but times each run by calling fn itself, synchronized: op by op, not the
# compiled program. Its durations look like runs; fn's Python code running once per run shows
# it. It loses the run points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_measure_run_synchronized=0
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = count_equations(jax.make_jaxpr(fn)(*args))

    run_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        run_seconds.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
