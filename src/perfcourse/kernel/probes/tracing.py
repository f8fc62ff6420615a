"""Trace and compile counting, built in the student's process from a plain description picked by the
trusted side.

The trusted side (`perfcourse.checks.tracing`) describes call sequences as data: the kind of
function to jit, and for every call its arguments as specs (below). Here, in the student's
process, every sequence is turned into real objects (fresh functions that count their own traces,
real JAX and NumPy arrays and scalars, real `functools.partial`s, lambdas and
`jax.tree_util.Partial`s, arrays committed to a device), the student's `counted_jit`,
`count_traces` or `count_traces_and_compiles` is run on them, and what happened comes back as
plain numbers: the student's answers and counter readings, how many times each function's body
really ran (its traces) and how many compilations JAX reported meanwhile. The trusted side
builds the same calls from the same description with its own copy of `calls` below and counts a
plain `jax.jit` itself.

Compiles are observed with `CompileEvents`: a `jax.monitoring` listener for the one event JAX
records each time it obtains a new executable (`COMPILE_EVENT`). This module is the only place
the course names that event; the trusted side checks that the JAX running it still reports it
before it grades a compile count.

A spec is a dict with a tag "t":

    {"t": "py", "v": 2.5}                       a Python float or int (weakly typed)
    {"t": "np", "dtype": "float32", "v": 2.5}   a NumPy scalar of that dtype (strongly typed)
    {"t": "jnp", "v": 2.5, "dtype": None}       jnp.asarray(v) (weak), or jnp.asarray(v, dtype)
    {"t": "array", "data": ndarray, "numpy": b, "device": k}
                                                the array as a JAX array, or as the NumPy array itself;
                                                with an int "device", a JAX array committed to
                                                jax.devices()[k] with jax.device_put
    {"t": "partial", "fn": "scaled"|"shifted", "args": [...], "kwargs": {...}, "tree": b, "share": s}
                                                functools.partial (tree: jax.tree_util.Partial) of a
                                                function of this module; calls that name the same
                                                `share` within one sequence get the very same object
    {"t": "lambda", "factor": 2.5}              a new `lambda v: v * factor`
    {"t": "negative"}                           jnp.negative
    {"t": "list" | "tuple", "items": [...]}, {"t": "dict", "items": {...}}   containers of specs

A sequence is {"kind": KIND, "jit_kwargs": {...}, "calls": [[[arg specs], {keyword: spec}], ...]}.
Results go back as tuples (values, never the student's containers).
"""
from __future__ import annotations

import contextlib

import functools

PROBES = ("count_traces", "counted_jit", "count_traces_and_compiles", "listeners")

# The jax.monitoring duration event JAX records once per executable it obtains for a jitted call
# (compiled, or loaded from a persistent compilation cache when one is configured). The same name
# from jax 0.4 to 0.10; not a promised interface, so the trusted side checks it fires first.
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class CompileEvents:
    """Count JAX's compile events while the block runs: `with CompileEvents() as seen: ...; seen.count`."""

    def __init__(self):
        self.count, self._active = 0, False

    def _listener(self, event, duration_secs, *args, **kwargs):
        if self._active and event == COMPILE_EVENT:
            self.count += 1

    def __enter__(self):
        import jax

        self._active = True
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc):
        import jax

        self._active = False  # an older JAX that cannot remove a listener leaves it inert
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            unregister(self._listener)
        return False


def _scaled(x, factor):
    return x * factor


def _shifted(x, offset):
    return x + offset


PARTIAL_FUNCTIONS = {"scaled": _scaled, "shifted": _shifted}


class Box:
    """A function JAX has never seen, and the number of times its body ran (its traces, under jax.jit)."""

    def __init__(self, kind: str):
        self.kind, self.traces = kind, 0
        self.fn = _function(self, kind)


def _function(box: Box, kind: str):
    import jax
    import jax.numpy as jnp

    if kind == "affine":
        def fn(x, scale):
            box.traces += 1
            return x * scale + 1
    elif kind == "power":
        def fn(x, n):
            box.traces += 1
            result = jnp.ones_like(x)
            for _ in range(n):  # needs n's value: n must be static
                result = result * x
            return result
    elif kind in ("apply", "tree"):
        def fn(x, act):
            box.traces += 1
            return act(x)
    elif kind == "total":
        def fn(xs):
            box.traces += 1
            return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(xs))
    else:
        raise ValueError(f"unknown function kind {kind!r}")
    return fn


def value(spec, shared: dict):
    """The object a spec describes (see the module docstring)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    tag = spec["t"]
    if tag == "py":
        return spec["v"]
    if tag == "np":
        return np.dtype(spec["dtype"]).type(spec["v"])
    if tag == "jnp":
        return jnp.asarray(spec["v"]) if spec.get("dtype") is None else jnp.asarray(spec["v"], spec["dtype"])
    if tag == "array":
        data = np.asarray(spec["data"])
        if spec.get("numpy"):
            return data.copy()
        if spec.get("device") is not None:
            devices = jax.devices()
            return jax.device_put(jnp.asarray(data), devices[int(spec["device"]) % len(devices)])
        return jnp.asarray(data)
    if tag == "partial":
        share = spec.get("share")
        if share is not None and share in shared:
            return shared[share]
        make = jax.tree_util.Partial if spec.get("tree") else functools.partial
        made = make(PARTIAL_FUNCTIONS[spec["fn"]], *[value(s, shared) for s in spec.get("args", ())],
                    **{k: value(s, shared) for k, s in spec.get("kwargs", {}).items()})
        if share is not None:
            shared[share] = made
        return made
    if tag == "lambda":
        factor = spec["factor"]
        return lambda v: v * factor
    if tag == "negative":
        return jnp.negative
    if tag == "list":
        return [value(s, shared) for s in spec["items"]]
    if tag == "tuple":
        return tuple(value(s, shared) for s in spec["items"])
    if tag == "dict":
        return {k: value(s, shared) for k, s in spec["items"].items()}
    raise ValueError(f"unknown spec tag {tag!r}")


def calls(sequence: dict) -> list:
    """The sequence's calls as (args, kwargs) pairs of new objects."""
    shared = {}
    return [(tuple(value(s, shared) for s in args), {k: value(s, shared) for k, s in kwargs.items()})
            for args, kwargs in sequence["calls"]]


class NotAnArray:
    """An argument no jitted function accepts: the call raises TypeError before anything runs."""

    def __repr__(self):
        return "NotAnArray()"


def duration_listeners() -> int | None:
    """How many jax.monitoring duration listeners are registered now; None where this JAX does
    not say (it keeps them in jax._src.monitoring, jax 0.4 to 0.10)."""
    try:
        from jax._src import monitoring
    except ImportError:
        return None
    get = getattr(monitoring, "get_event_duration_listeners", None)
    listeners = get() if get is not None else getattr(monitoring, "_event_duration_secs_listeners", None)
    return len(listeners) if isinstance(listeners, list) else None


def _fault(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    except Exception:  # noqa: BLE001 (an exception whose message cannot be read)
        return type(exc).__name__


def _each_step(student, steps, with_compiles: bool):
    """Call `student(fn, calls, **jit_kwargs)` once per step, fn shared by steps of one label.

    Each result: ("answer", the answer, traces of fn while it ran[, compile events while it ran,
    listeners it left registered]) or ("error", text[, listeners it left registered]). A step with
    "then_raise" ends its calls with one that raises TypeError (an argument that is not an array).
    The calls are built before the student's function starts, so building them is never inside a
    count.
    """
    boxes, results = {}, []
    for step in steps:
        sequence = step["sequence"]
        box = boxes.get(step["function"])
        if box is None:
            box = boxes[step["function"]] = Box(sequence["kind"])
        made = calls(sequence) + ([((NotAnArray(),), {})] if step.get("then_raise") else [])
        before, registered = box.traces, duration_listeners()
        seen = CompileEvents() if with_compiles else contextlib.nullcontext()
        try:
            with seen:
                answer = student(box.fn, made, **dict(sequence.get("jit_kwargs", {})))
        except Exception as exc:  # noqa: BLE001 (any failure is the student's to see)
            left = _left(registered)
            results.append(("error", _fault(exc), left) if with_compiles else ("error", _fault(exc)))
            continue
        if with_compiles:
            results.append(("answer", _counts(answer), box.traces - before, seen.count, _left(registered)))
        else:
            results.append(("answer", answer, box.traces - before))
    return tuple(results)


def listeners() -> int | None:
    """How many jax.monitoring duration listeners are registered now (None: this JAX does not say)."""
    return duration_listeners()


def _left(registered: int | None) -> int | None:
    """Listeners registered now that were not before the student's call (None: cannot tell)."""
    now = duration_listeners()
    return None if registered is None or now is None else now - registered


def count_traces(count_traces, steps):
    """Run the student's `count_traces(fn, calls, **jit_kwargs)` once per step.

    steps: [{"function": LABEL, "sequence": SEQUENCE}]; steps that name the same label get the same
    function. Each result: ("answer", the student's answer, traces of fn while it ran) or
    ("error", text).
    """
    return _each_step(count_traces, steps, with_compiles=False)


def _number(value):
    """A plain int, float, NumPy number or array as itself (they cross by value); anything else as
    its type's name."""
    import jax
    import numpy as np

    if type(value) in (int, float, bool) or isinstance(value, (np.generic, np.ndarray, jax.Array)):
        return value
    return f"a {type(value).__name__}"


def _counts(answer):
    """The student's {"traces": T, "compiles": C} as plain data, read without calling its methods."""
    if not isinstance(answer, dict):
        return ("other", _repr(answer))
    try:
        keys = tuple(sorted(str(k)[:40] for k in dict.keys(answer)))
        return ("dict", _number(dict.get(answer, "traces")), _number(dict.get(answer, "compiles")), keys)
    except Exception:  # noqa: BLE001
        return ("other", _repr(answer))


def count_traces_and_compiles(count_traces_and_compiles, steps):
    """Run the student's `count_traces_and_compiles(fn, calls, **jit_kwargs)` once per step.

    steps as for `count_traces`. Each result: ("answer", the answer as plain data (see `_counts`),
    traces of fn while it ran, compile events while it ran) or ("error", text).
    """
    return _each_step(count_traces_and_compiles, steps, with_compiles=True)


def _reading(counter):
    try:
        return counter.get("traces") if isinstance(counter, dict) else None
    except Exception:  # noqa: BLE001
        return None


def _repr(value) -> str:
    try:
        return repr(value)[:100]
    except Exception:  # noqa: BLE001
        return f"a {type(value).__name__}"


def counted_jit(counted_jit, steps):
    """Run the student's `counted_jit(fn, **jit_kwargs)` and its results, step by step.

    steps, in order:
      {"make": NAME, "function": LABEL, "kind": KIND, "jit_kwargs": {...}}
          -> ("made", counter is a dict, its reading, jitted is what jax.jit returns,
              (names of earlier counters that are this very object), repr(counter))  or ("error", text)
      {"run": NAME, "sequence": SEQUENCE, "outputs": bool}
          -> ("ran", (outputs, if asked), ((NAME, reading), ...), ((LABEL, traces), ...))
             or ("error", text)
    """
    import jax

    boxes, made, results = {}, {}, []
    for step in steps:
        if "make" in step:
            box = boxes.get(step["function"])
            if box is None:
                box = boxes[step["function"]] = Box(step["kind"])
            try:
                jitted, counter = counted_jit(box.fn, **dict(step.get("jit_kwargs", {})))
            except Exception as exc:  # noqa: BLE001
                results.append(("error", _fault(exc)))
                continue
            shares = tuple(name for name, (_, other) in made.items() if other is counter)
            made[step["make"]] = (jitted, counter)
            # jax.jit's own type: a function carrying a jitted twin's `lower` is not jitted.
            results.append(("made", isinstance(counter, dict), _reading(counter),
                            isinstance(jitted, type(jax.jit(abs))), shares, _repr(counter)))
        else:
            if step["run"] not in made:
                results.append(("error", "counted_jit did not return a function to call"))
                continue
            jitted, _ = made[step["run"]]
            try:
                outputs = tuple(jax.block_until_ready(jitted(*args, **kwargs))
                                for args, kwargs in calls(step["sequence"]))
            except Exception as exc:  # noqa: BLE001
                results.append(("error", _fault(exc)))
                continue
            results.append(("ran", outputs if step.get("outputs") else (),
                            tuple((name, _reading(counter)) for name, (_, counter) in made.items()),
                            tuple((label, box.traces) for label, box in boxes.items())))
    return tuple(results)
