# A forged equation count whose measure reads its count from a name another cell binds by an
# assignment at its top level. The scanned cell, right otherwise, replaces the course's probe
# dispatcher: asked to run measure on the check's functions, it counts them with the notebook's
# count_equations and never calls measure, which answers the public check's count (24, the
# unrolled loop at T = 4) for every function. The grader's recount (grading/recount.py) runs the
# measure cell apart from the notebook, with only the definitions and imports of other cells: there
# measure raises NameError, as an honest measure whose helper another cell builds by an assignment
# would. The recount cannot tell the two apart, so the probe's count stands, as evidence, and the
# notebook is flagged for a human: the forged count keeps its point, flagged (a known limit,
# docs/authors/checks.md). Its compile span is never measured: that cell is lost.
# reason: could not be checked apart from the notebook
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=2
# %% solutions
# %% replace scanned
import importlib


def scanned(h, xs, a):
    return lax.scan(lambda carry, x: (jnp.tanh(a * carry + x), None), h, xs)[0]


_probes = importlib.import_module("perfcourse.kernel.probes")
_course_loops = importlib.import_module("perfcourse.kernel.probes.loops")
_real_run = _probes.run
_public_count = 24


def _run_measure_without_measure(name, *args, **kwargs):
    if name == "loops.run_measure" and args[1] in ("nested", "unrolled"):
        built = _course_loops.build(args[1])
        return {"equations": count_equations(jax.make_jaxpr(built)(*args[2])), "compile_seconds": 0.01,
                "run_seconds": [0.001] * int(args[3])}
    return _real_run(name, *args, **kwargs)


_probes.run = _run_measure_without_measure
# %% replace measure
def measure(fn, *args, warm_calls=7):
    return {"equations": _public_count, "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}
