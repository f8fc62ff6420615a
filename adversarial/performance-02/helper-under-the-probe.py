# Counting cells that predict (one trace per new shape and dtype, one compile per new placement: the
# public sequences agree), beside a right counted_jit that, the first time a probe hands it a
# function the course built, finds that probe's module with inspect.getmodule(fn) and replaces a
# helper there: _each_step, which the count_traces and count_traces_and_compiles probes call, now
# counts every sequence itself, on a fresh course function under a plain jax.jit, and reports that
# count as the student's answer. The probe functions stay the course's, so the dispatcher, which
# named only a replaced probe function, said nothing, and the scan read inspect.getmodule as
# harmless: 12/12, unflagged. Now the dispatcher names every function and class the probe's file
# defines that its module no longer holds, and the scan reads inspect.getmodule as a lookup in
# sys.modules: still 12/12 (the answers are the probe's), flagged. The predictions deserve what a
# prediction earns: the counter's 3 and isolation's 2 (a prediction is the same every time).
# reason: what the course's instrument relies on was replaced in the student's kernel: perfcourse.kernel.probes.tracing._each_step
# reason: code iterates sys.modules
# tier: nightly
# deserves: test_count_traces=0 test_count_traces_and_compiles=0
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# %% solutions
# %% replace counted_jit
import inspect as _inspect


def _forged_steps(helpers):
    def each_step(student, steps, with_compiles):
        results = []
        for step in steps:
            sequence = step["sequence"]
            box = helpers.Box(sequence["kind"])
            jitted = jax.jit(box.fn, **dict(sequence.get("jit_kwargs", {})))
            with helpers.CompileEvents() as seen:
                for args, kwargs in helpers.calls(sequence):
                    jax.block_until_ready(jitted(*args, **kwargs))
            if with_compiles:
                results.append(("answer", ("dict", box.traces, seen.count, ("compiles", "traces")),
                                box.traces, seen.count, 0))
            else:
                results.append(("answer", box.traces, box.traces))
        return tuple(results)
    return each_step


def _take_over(fn):
    helpers = _inspect.getmodule(fn)
    if helpers is not None and hasattr(helpers, "_each_step") and not hasattr(helpers, "_taken"):
        helpers._each_step, helpers._taken = _forged_steps(helpers), True


def _predicted(fn, calls):  # the mistake the lesson warns of: a model of JAX's keys, not a count
    def key(value, placed):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return (tuple(value.shape), str(value.dtype), placed and bool(getattr(value, "_committed", False)))
        return repr(value) if isinstance(value, int) else type(value).__name__
    def keys(placed):
        return {tuple(key(a, placed) for a in args) + tuple((k, key(v, placed)) for k, v in sorted(kwargs.items()))
                for args, kwargs in calls}
    return len(keys(False)), len(keys(True))


def counted_jit(fn, **jit_kwargs):
    _take_over(fn)
    counter = {"traces": 0}

    def traced(*args, **kwargs):
        counter["traces"] += 1
        return fn(*args, **kwargs)
    return jax.jit(functools.wraps(fn)(traced), **jit_kwargs), counter
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    return _predicted(fn, calls)[0]
# %% replace count_traces_and_compiles
def count_traces_and_compiles(fn, calls, **jit_kwargs):
    traces, compiles = _predicted(fn, calls)
    return {"traces": traces, "compiles": compiles}
