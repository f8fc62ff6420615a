# Times the first call of the jitted function and calls it the compile time: the first
# call compiles and then runs, so the measurement holds a run too. Its run times are right.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_measure_run_synchronized=2
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    jitted = jax.jit(fn)

    start = time.perf_counter()
    jax.block_until_ready(jitted(*args))
    compile_seconds = time.perf_counter() - start

    run_seconds = []
    for _ in range(warm_calls):
        start = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        run_seconds.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
