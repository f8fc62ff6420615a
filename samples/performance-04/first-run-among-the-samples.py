# Times the compilation alone, right, but times warm_calls runs of the compiled program in a loop
# of its own, the first of them among the samples: the first run pays one-time costs the lesson
# keeps apart (the timer's first call). The grader holds a first run longer than any warm one, in
# every run. Loses the compile-and-run points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
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
        jax.block_until_ready(compiled(*args))
        run_seconds.append(time.perf_counter() - start)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
