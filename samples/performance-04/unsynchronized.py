# Compiles apart, but reads the clock as soon as each call returns: the run times measure
# dispatch, not the computation. It loses the synchronization points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_measure_run_synchronized=0
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = count_equations(jax.make_jaxpr(fn)(*args))

    run_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        compiled(*args)
        run_seconds.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
