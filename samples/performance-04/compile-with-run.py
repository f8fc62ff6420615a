# Hands the jitted function to the course's timer and calls its first call the compile time: the
# first call traces, lowers and compiles, and then runs, so the measurement holds a run too. Its
# run times (the timer's warm samples) are right.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    compile_seconds, run_seconds = time_completed(jax.jit(fn), *args, warm_calls=warm_calls)
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
