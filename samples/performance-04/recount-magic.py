# Correct, with an IPython magic in the measure cell (the precision numbers are shown at). The
# grader's recount runs the measure cell apart from the notebook in plain Python, where the magic,
# read as IPython reads it, is a call of get_ipython(): that name was missing there, the cell raised
# NameError apart and lost its point, unflagged. The recount now gives the cell a shell of its own.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace measure
%precision 4


def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": count_equations(jax.make_jaxpr(fn)(*args)), "compile_seconds": compile_seconds,
            "run_seconds": run_seconds}
