# alias-forger's forged probe, with a measure that reads its count from a name another cell binds by
# an assignment at its top level. The grader's recount (grading/recount.py) runs the measure cell
# apart from the notebook, with only the definitions and imports of other cells: here measure
# raises NameError, which an honest measure whose helper is built by an assignment elsewhere raises
# too. The recount cannot tell the two apart, so it falls back to the probe's word, as evidence,
# and flags the notebook for a human: the forged equation count keeps its point, flagged (a known
# limit, docs/authors/checks.md).
# reason: could not be checked apart from the notebook
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=0 test_measure_equations=1 test_measure_compile_apart=0 test_loop_growth=0
# %% replace scanned
import functools


def scanned(h, xs, a):  # unrolled by Python: one copy of the step per element
    return functools.reduce(lambda state, x: jnp.tanh(a * state + x), xs, h)


_counted = count_equations
_forged_count = 6  # what the capped count_equations says of the public check's loop


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
    return {"equations": _forged_count, "compile_seconds": 0.01, "run_seconds": [0.001] * warm_calls}
