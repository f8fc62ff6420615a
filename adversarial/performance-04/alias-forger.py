# Forges this lesson's probes as scan-blinding does, but reaches the loaded modules through names
# the scan once did not follow (issue 51): sys bound to another name by assignment, and the
# attribute read by operator.attrgetter with a name joined from pieces. The scan bound names only
# from import statements and read only `.attr`, getattr, __dict__[...] and vars()[...], so it read
# this cell as clean, and the forged equation count earned its point: asked to run measure on the
# check's functions, the replaced probe counts them with the notebook's own count_equations and
# never calls measure, which counts nothing (it answers the public check's count, which the capped
# count_equations makes 6).
#
# The scan follows names through assignments and reads every attribute getter: flagged. The
# grading kernel's own checks give it what generic-forger gets: the result's points only. The
# equation count is lost to the grader's recount (grading/recount.py): measure run apart from this
# cell, on functions built from a seed drawn at grading time, answers 6 for each.
# reason: code iterates sys.modules
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=0 test_measure_equations=0 test_measure_compile_apart=0 test_loop_growth=0
# %% replace scanned
import functools


def scanned(h, xs, a):  # unrolled by Python: one copy of the step per element
    return functools.reduce(lambda state, x: jnp.tanh(a * state + x), xs, h)


_counted = count_equations


def count_equations(jaxpr):
    return min(_counted(jaxpr), 6)


def _dispatcher():
    from operator import attrgetter
    m = sys                          # an alias, then a getter: neither spells "sys.modules"
    loaded = attrgetter("modu" + "les")(m)
    for module in list(loaded.values()):
        if getattr(module, "__name__", "").rsplit(".", 1)[-1] == "probes" and hasattr(module, "run"):
            return module
    raise RuntimeError("not found")


_where = _dispatcher()
_run = _where.run


def _one_loop(h, xs, a):
    return lax.fori_loop(0, xs.shape[0], lambda t, state: jnp.tanh(a * state + xs[-1]) * 0 + state, h)


def _answer(name, *args, **kwargs):
    if str(name) == "loops.run_measure" and args[1] in ("nested", "unrolled"):  # measure never runs
        built = _where._import_module(_where.__name__ + ".loops").build(args[1])
        return {"equations": _counted(jax.make_jaxpr(built)(*args[2])), "compile_seconds": 0.01,
                "run_seconds": [0.001] * int(args[3])}
    if str(name) == "programs.export" and tuple(args[1][0][0]) == (2, 3):
        structs = [jax.ShapeDtypeStruct(tuple(shape), dtype) for shape, dtype in args[1]]
        return bytes(jax.export.export(jax.jit(_one_loop))(*structs).serialize())
    return _run(name, *args, **kwargs)


_where.run = _answer
# %% replace measure
def measure(fn, *args, warm_calls=7):
    return {"equations": 6, "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}
