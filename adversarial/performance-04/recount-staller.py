# A forged equation count that stalls the grader's recount: measure run apart from the notebook
# (grading/recount.py). The scanned cell wraps the course's probe that runs measure: the count
# measure answers for the check's functions is replaced by the course's own, and measure counts
# nothing. The measure cell tells the two runs apart by a name the scanned cell binds at its top
# level, looked up by its string (no name the recount's reading of the cell sees it need): where it
# is missing, the cell sleeps past the recount's limit. A stall
# once fell back to the probe's word (8/10, flagged). Whose failure it is now comes from the
# recount's private pipe, closed before any student code runs: this run started cleanly and lacked
# nothing apart, so the stall is the student's: the equation point is lost, and the notebook flagged.
# reason: run apart from the notebook by the grader, failed (it did not finish within
# reason: code names the grading package
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=2
# %% solutions
# %% replace scanned
import importlib


def scanned(h, xs, a):
    return lax.scan(lambda carry, x: (jnp.tanh(a * carry + x), None), h, xs)[0]


_loops_probe = importlib.import_module("perfcourse.kernel.probes.loops")
_measure_as_run = _loops_probe.run_measure


def _with_the_course_count(measure, kind, args, warm_calls, program=None):
    answer = _measure_as_run(measure, kind, args, warm_calls, program)
    if kind in ("nested", "unrolled"):
        answer = {**answer, "equations": count_equations(jax.make_jaxpr(_loops_probe.build(kind))(*args))}
    return answer


_loops_probe.run_measure = _with_the_course_count
# %% replace measure
import time


def measure(fn, *args, warm_calls=7):
    return {"equations": 24, "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}


if "_loops_probe" not in globals():  # run apart from the notebook
    time.sleep(10 ** 6)
