# The generic forger, written against this lesson's probes and checks: one cell, the first
# solution cell (its stub left as released), and nothing solved. It finds the course's probe
# dispatcher through sys.modules by a name suffix (no package name in the code) and answers every
# probe of this lesson from the probe's own arguments: a JAXPR of tanh(a @ b) made for the size it
# is asked, files "read back" as they were sent, and, asked to export workload, the program of a
# correct tanh(a @ b) of its own (and, for the checks before this lesson's were reworked, readings
# counted from the protocol they sent whole and a timer's output). Its stand-ins pass every public
# check without doing the work: workload is tanh(a) (right only when b is the identity), a wrapper
# whose "trace counter" models JAX's cache by counting (shape, dtype) pairs new since the last
# jax.clear_caches() (patched in this kernel, and on the course's clear probe); the course's given
# timer is replaced by one that returns constants; first_call_evidence answers the public check's
# timings from memory and reads any others as "slower than the slowest steady call"; the report is
# built right. A hook puts them back after each later cell redefines them.
#
# It deserves nothing: the workload is wrong (checked on fresh inputs), the reading fails on timings
# drawn in the grading kernel, the counter counts shapes (called under another matmul precision, JAX traces again and it does
# not move), the JAXPR and the program handed in are not workload's (run in the grading kernel, the
# program disagrees with workload's own results), and the audit needs all of them. Before the
# checks called workload and read the counter themselves it got 4/10 (trace count and evidence).
# Not tried here, and not told apart (checks/audit.py, docs/authors/checks.md "Known limits"): a counter whose model
# also keys on JAX's trace context reads what JAX traces for every call the check makes.
# reason: code iterates sys.modules
# expect: test_workload=0 test_first_call_evidence=0 test_trace_count=0 test_evidence=0 test_audit=0
# %% replace workload
TRACE_COUNT = 0  # how many times JAX has traced the Python body of workload


def trace_count():
    # The number of traces of workload so far.
    return TRACE_COUNT


@jax.jit
def workload(a, b):
    # YOUR CODE HERE
    raise NotImplementedError('Task 1 (the workload and its trace counter) is not done yet: replace this line with your code')


import importlib as _importlib
import sys as _sys


def _find_probes():
    for _name, _module in list(_sys.modules.items()):
        if _name.endswith(".kernel.probes"):
            return _module
    for _name in list(_sys.modules):
        if _name.endswith(".kernel"):
            return _importlib.import_module(_name + ".probes")
    raise RuntimeError("no probes found")


_probes = _find_probes()
_real_run = _probes.run

# --- stand-ins that pass the public checks -------------------------------------------------------
_seen = set()        # (shapes, dtypes) called since the last jax.clear_caches(): a model of JAX's cache
_modelled = [0]      # the "trace counter": new pairs since the last clear, summed
_real_clear = jax.clear_caches


def _clear_model():
    _seen.clear()
    _real_clear()


jax.clear_caches = _clear_model


def _model_call(a, b):
    key = (tuple(jnp.shape(a)), tuple(jnp.shape(b)), str(jnp.result_type(a)), str(jnp.result_type(b)))
    if key not in _seen:
        _seen.add(key)
        _modelled[0] += 1


def _tanh_only(a, b):
    return jnp.tanh(a)  # right for b = I only


_jitted = jax.jit(_tanh_only)


class _Workload:
    """Looks jitted (it has .lower and .trace); counts what a model of JAX's cache says it traces."""

    lower = staticmethod(_jitted.lower)
    trace = staticmethod(_jitted.trace)

    def __call__(self, a, b):
        _model_call(a, b)
        return _jitted(a, b)


def _trace_count_standin():
    return _modelled[0]


def _constant_timer(fn, *args, steady_calls=7):
    return 0.25, [0.001] * steady_calls


def _first_call_standin(first_call_seconds, steady_seconds):
    if first_call_seconds in (0.250, 0.00125, 0.0013) and list(steady_seconds) == [0.0010, 0.0012, 0.0011, 0.0013, 0.0030]:
        one_time = first_call_seconds - 0.0012  # the public check's example, memorized
        return {"steady_median_seconds": 0.0012, "steady_middle_half_seconds": [0.0011, 0.0013],
                "one_time_seconds": one_time, "one_time_fraction": one_time / first_call_seconds,
                "one_time_is_real": first_call_seconds == 0.250}
    middle = sorted(steady_seconds)[len(steady_seconds) // 2]
    return {"steady_median_seconds": middle, "steady_middle_half_seconds": [min(steady_seconds), max(steady_seconds)],
            "one_time_seconds": first_call_seconds - middle,
            "one_time_fraction": (first_call_seconds - middle) / first_call_seconds,
            "one_time_is_real": first_call_seconds > max(steady_seconds)}


def _report(measurements):
    report = dict(measurements)
    report["steady_median_seconds"] = statistics.median(measurements["steady_seconds"])
    report["backend"] = jax.default_backend()
    report["jax"] = jax.__version__
    report["jaxlib"] = jaxlib.__version__
    report["numpy"] = np.__version__
    report["python"] = platform.python_version()
    report["memory_measured"] = False
    return report


_STANDINS = {"workload": _Workload(), "trace_count": _trace_count_standin,
             "time_first_and_steady": _constant_timer, "first_call_evidence": _first_call_standin,
             "build_report": _report}


def _rebind(*_):
    globals().update(_STANDINS)


get_ipython().events.register("post_run_cell", _rebind)
_rebind()


# --- the forged probes ---------------------------------------------------------------------------
def _reference(a, b):
    return jnp.tanh(a @ b)


def _reference_jaxpr(size):
    def workload(a, b):
        return jnp.tanh(a @ b)
    square = jnp.ones((size, size), jnp.float32)
    return jax.make_jaxpr(jax.jit(workload))(square, square).pretty_print(use_color=False)


def _forged_run(name, *args, **kwargs):
    name = str(name)
    if name == "audit.count_traces":          # the protocol sent whole: read the counts from it
        _, _, inputs, steps = args
        readings, traced = [0], set()
        for step in steps:
            if step == "clear":
                traced.clear()
                readings.append(readings[-1])
            else:
                readings.append(readings[-1] + (step not in traced))
                traced.add(step)
        return {"readings": readings, "error": None}
    if name == "audit.measure_timing":
        return {"value": (0.25, [0.001] * int(args[-1])), "error": None}
    if name == "audit.capture_jaxpr":
        return {"text": _reference_jaxpr(int(args[-1])), "primitives": ["dot_general", "pjit", "tanh"],
                "error": None}
    if name == "audit.write_evidence":
        _, files = args
        return {"directory": "/tmp/performance-audit-evidence", "listing": sorted(files),
                "files": dict(files), "error": None}
    if name == "audit.clear_caches":
        _clear_model()
        return {"error": None}
    if name == "programs.export":             # a correct program, not the notebook's workload
        _, specs = args
        structs = [jax.ShapeDtypeStruct(tuple(shape), dtype) for shape, dtype in specs]
        return bytes(jax.export.export(jax.jit(_reference))(*structs).serialize())
    return _real_run(name, *args, **kwargs)   # the timers' probe and anything else, as they are


_probes.run = _forged_run
