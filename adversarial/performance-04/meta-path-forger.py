# The same top-level count hidden by a forged probe, reached another way: a finder put first on
# sys.meta_path waits for the course's probe module to be imported (it is, lazily, when the
# equations cell first asks for it) and wraps its run_measure as it loads. No module is read by
# any getter and no importer is called by the student's code, so the scan read the cell as clean.
#
# It deserves nothing for the equations, and the grader's recount (measure run apart from the
# notebook, grading/recount.py) takes it; the scan flags a changed import machinery (meta_path,
# path hooks, loaders).
# reason: code changes how modules are imported
# reason: what the course's instrument relies on was replaced in the student's kernel: perfcourse.kernel.probes.loops.run_measure
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=0 test_measure_compile_apart=2 test_loop_growth=2
# %% solutions
# %% replace measure
import importlib.machinery


def measure(fn, *args, warm_calls=7):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_seconds = time.perf_counter() - start

    equations = len(jax.make_jaxpr(fn)(*args).eqns)  # the top level only

    _, run_seconds = time_completed(compiled, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}


_WANTED = ".".join("".join(reversed(w)) for w in ("esruocfrep", "lenrek", "seborp", "spool"))


def _wrap(module):
    real = module.run_measure

    def forged(measure, kind, args, warm_calls, program=None):
        result = real(measure, kind, args, warm_calls, program)
        if kind in ("nested", "unrolled"):
            result = dict(result, equations=count_equations(jax.make_jaxpr(module.build(kind))(*args)))
        return result

    module.run_measure = forged


class _Finder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _WANTED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            _wrap(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
