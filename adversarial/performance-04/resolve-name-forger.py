# A measure that counts only the jaxpr's top level (top-level-count's mistake), hidden by a forged
# probe: the course's probe module reached with pkgutil.resolve_name of a name computed at run time
# (the scan read only __import__ and importlib.import_module as importers), its run_measure wrapped
# so that the count it sends back is every level's, counted with the lesson's own count_equations.
#
# It deserves nothing for the equations: measure never counts them. The forged probe carries the
# count back, but the grader's recount runs the measure cell apart from the notebook (no probe
# there) on functions the student's kernel never sees, and its top-level count is wrong there
# (grading/recount.py); the scan now reads pkgutil.resolve_name, pydoc.locate and mock.patch as importers.
# reason: code imports a computed name
# reason: what the course's instrument relies on was replaced in the student's kernel: perfcourse.kernel.probes.loops.run_measure
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=2 test_loop_growth=2
# %% solutions
# %% replace measure
import pkgutil


def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = len(jax.make_jaxpr(fn)(*args).eqns)  # the top level only

    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


_where = pkgutil.resolve_name(".".join(["".join(reversed(w)) for w in ("esruocfrep", "lenrek", "seborp", "spool")]))
_real_run_measure = _where.run_measure


def _forged_run_measure(measure, kind, args, warm_calls, program=None):
    result = _real_run_measure(measure, kind, args, warm_calls, program)
    if kind in ("nested", "unrolled"):
        result = dict(result, equations=count_equations(jax.make_jaxpr(_where.build(kind))(*args)))
    return result


_where.run_measure = _forged_run_measure
