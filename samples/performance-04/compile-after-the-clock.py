# Times the trace and the lowering, then compiles after the second clock read: the span leaves
# out XLA's compilation, the stage the lesson is about. Loses the compile points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# %% solutions
# %% replace measure
def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    compile_seconds = time.perf_counter() - start
    compiled = lowered.compile()

    equations = count_equations(jax.make_jaxpr(fn)(*args))
    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)  # the first run kept apart
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
