# Counts the equations first: jax.make_jaxpr traces fn, and the timed .lower() reuses that
# trace, so the compile span leaves out tracing (the lesson says to time the compilation first,
# for this reason). Loses the compile points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    equations = count_equations(jax.make_jaxpr(fn)(*args))

    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)  # the first run kept apart
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
