# Reads the compile span on time.process_time(), the process's CPU time, instead of the wall clock the task
# names (time.perf_counter()): time the compiler spends waiting, or work on threads that sleep, is not in it.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.process_time()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.process_time() - start
    _, runs = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": runs}
