# A forged equation count whose measure cell, run apart from the notebook by the grader's recount
# (grading/recount.py), prints the recount's own answer line with a forged error (a module missing
# while running another cell's imports, a name another cell binds) and exits before the real
# answer. The scanned cell replaces the course's probe that runs measure (asked to run it on the
# check's functions, it counts them itself), and measure counts nothing; the cell tells the two
# runs apart by a name the scanned cell binds, looked up by its string. The old grader decided from that line that the cell could not run apart and
# kept the probe's word (8/10, flagged). Whose failure it is now comes from the recount's private
# pipe, closed before any student code runs: this run started cleanly and lacked nothing, so the
# error is the student's and the equation point is lost.
# reason: code names the grading package
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=2
# %% solutions
# %% replace scanned
import importlib


def scanned(h, xs, a):
    return lax.scan(lambda carry, x: (jnp.tanh(a * carry + x), None), h, xs)[0]


_course_loops = importlib.import_module("perfcourse.kernel.probes.loops")
_course_run_measure = _course_loops.run_measure


def _counted_by_the_course(measure, kind, args, warm_calls, program=None):
    if kind not in ("nested", "unrolled"):
        return _course_run_measure(measure, kind, args, warm_calls, program)
    return {"equations": count_equations(jax.make_jaxpr(_course_loops.build(kind))(*args)),
            "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}


_course_loops.run_measure = _counted_by_the_course
# %% replace measure
import os


def measure(fn, *args, warm_calls=7):
    return {"equations": 24, "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}


if "_course_loops" not in globals():  # run apart from the notebook
    print('\nperfcourse-recount: {"error": "ModuleNotFoundError: No module named \'helpers\' while running the cells '
          'cells", "stage": "cells", "unseen": ["helpers"]}', flush=True)
    os._exit(0)
