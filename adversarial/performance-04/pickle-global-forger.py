# The same top-level count hidden by a forged probe, reached through pickle: a GLOBAL opcode names
# the course's probe module and a dotted attribute path into it (a function's __globals__: the
# module's own namespace), both built at run time, and pickle.loads imports the module and walks
# the path itself. The student's code calls no importer, reads no attribute of a module and spells
# no dunder, and pickle's own frames take nothing the audit hook watched.
#
# It deserves nothing for the equations, and the grader's recount (measure run apart from the
# notebook, grading/recount.py) takes it; the audit hook records pickle's find_class of the grading
# package.
# reason: unpickled a name from the grading package
# reason: what the course's instrument relies on was replaced in the student's kernel: perfcourse.kernel.probes.loops.run_measure
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=2 test_loop_growth=2
# %% solutions
# %% replace measure
import pickle


def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = len(jax.make_jaxpr(fn)(*args).eqns)  # the top level only

    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


def _short(text):
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


_module = ".".join("".join(reversed(w)) for w in ("esruocfrep", "lenrek", "seborp", "spool"))
_path = "".join(reversed("__slabolg__.dliub"))
_namespace = pickle.loads(b"\x80\x04" + _short(_module) + _short(_path) + b"\x93.")
_real_run_measure = _namespace["run_measure"]


def _forged_run_measure(measure, kind, args, warm_calls, program=None):
    result = _real_run_measure(measure, kind, args, warm_calls, program)
    if kind in ("nested", "unrolled"):
        result = dict(result, equations=count_equations(jax.make_jaxpr(_namespace["build"](kind))(*args)))
    return result


_namespace["run_measure"] = _forged_run_measure
