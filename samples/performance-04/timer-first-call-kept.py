# Times the compilation alone, right, and runs the compiled program through the course's timer,
# but puts the timer's first call (the program's first run) back among the warm samples, one
# warm call fewer so the count is right. Loses the compile-and-run points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = count_equations(jax.make_jaxpr(fn)(*args))
    first_run, warm_runs = time_completed(compiled, *args, warm_calls=warm_calls - 1)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": [first_run, *warm_runs]}
