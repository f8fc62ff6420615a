"""performance-02 (count traces and compiles): the trace- and compile-counting checks on right and
wrong methods, without a kernel; the notebook's grade cells and text; and the committed
artifact's evidence. tests/test_performance_02_devices.py does the same on 8 devices."""
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import ROOT

from perfcourse.channel.codec import Codec
from perfcourse.checks import CheckFailed, tracing, verdict
from perfcourse.checks.tracing import (Sequence, array, audit_count_traces, audit_count_traces_and_compiles,
                                       audit_counted_jit, audit_isolation, call, compile_sequences,
                                       hidden_sequences, jnp_scalar, np_scalar, partial, py, random_sequence,
                                       reference_count, reference_counts)
from perfcourse.course import read_notebook
from perfcourse.kernel.probes import tracing as probes
from perfcourse.kernel.probes.tracing import COMPILE_EVENT, Box, CompileEvents

LESSON = "performance-02"

# The notebook's sequences and the counts worked out by hand from jit's cache key; the same on
# the pinned JAX and the newest.
NOTEBOOK_COUNTS = {"repeat": 1, "new shape": 2, "new dtype": 2, "new value": 1, "weak type": 2,
                   "keyword": 2, "static": 2, "partial": 3, "tree Partial": 1}


# Right methods.

def counted_jit(fn, **jit_kwargs):
    counter = {"traces": 0}

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        counter["traces"] += 1
        return fn(*args, **kwargs)

    return jax.jit(traced, **jit_kwargs), counter


def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]


def _count_then_call(fn, counter, *args, **kwargs):
    counter["traces"] += 1
    return fn(*args, **kwargs)


def counted_jit_by_partial(fn, **jit_kwargs):
    """No functools.wraps: static arguments work because they are passed by keyword."""
    counter = {"traces": 0}
    return jax.jit(functools.partial(_count_then_call, fn, counter), **jit_kwargs), counter


def count_traces_by_log(fn, calls, **jit_kwargs):
    log = []

    def logged(*args, **kwargs):
        log.append(jax.tree_util.tree_map(lambda leaf: str(getattr(leaf, "aval", leaf)), (args, kwargs)))
        return fn(*args, **kwargs)

    jitted = jax.jit(logged, **jit_kwargs)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return np.int64(len(log))  # a NumPy integer is a whole number too


_kept = {}


def count_traces_clearing_caches(fn, calls, **jit_kwargs):
    """Reuses one counted function per fn, but clears JAX's caches first: also a fresh count."""
    key = (fn, tuple(sorted(jit_kwargs.items())))
    if key not in _kept:
        _kept[key] = counted_jit(fn, **jit_kwargs)
    jitted, counter = _kept[key]
    jax.clear_caches()
    counter["traces"] = 0
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]


def counted_jit_decorated(fn, **jit_kwargs):
    """jax.jit applied as a decorator through functools.partial, the counter bumped through a closure."""
    counter = {"traces": 0}
    bump = counter.update

    @functools.partial(jax.jit, **jit_kwargs)
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        bump(traces=counter["traces"] + 1)
        return fn(*args, **kwargs)

    return traced, counter


def count_traces_nonlocal(fn, calls, **jit_kwargs):
    traces = 0

    def body(*args, **kwargs):
        nonlocal traces
        traces += 1
        return fn(*args, **kwargs)

    body = jax.jit(functools.wraps(fn)(body), **jit_kwargs)  # jitted after it was written
    for args, kwargs in calls:
        body(*args, **kwargs)
    return traces


# Wrong methods, each as a student might write it.

def counted_jit_counting_calls(fn, **jit_kwargs):
    counter = {"traces": 0}
    compiled = jax.jit(fn, **jit_kwargs)

    def jitted(*args, **kwargs):
        counter["traces"] += 1
        return compiled(*args, **kwargs)

    return jitted, counter


def counted_jit_not_jitted(fn, **jit_kwargs):
    counter = {"traces": 0}

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counter["traces"] += 1
        return fn(*args, **kwargs)

    return counted, counter


def counted_jit_with_a_twins_lower(fn, **jit_kwargs):
    """Not jitted, but carrying a jitted twin's `lower` (adversarial/performance-audit/lower-stapled-on.py's
    mechanism): jax.jit's own type tells it apart."""
    counted, counter = counted_jit_not_jitted(fn, **jit_kwargs)
    counted.lower = jax.jit(fn, **jit_kwargs).lower
    return counted, counter


def counted_jit_dropping_static(fn, **jit_kwargs):
    return counted_jit(fn)


_shared = {"traces": 0}


def counted_jit_sharing_one_counter(fn, **jit_kwargs):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        _shared["traces"] += 1
        return fn(*args, **kwargs)

    return jax.jit(traced, **jit_kwargs), _shared


_made = {}


def counted_jit_memoized(fn, **jit_kwargs):
    if fn not in _made:
        _made[fn] = counted_jit(fn, **jit_kwargs)
    return _made[fn]


def count_calls(fn, calls, **jit_kwargs):
    return len(calls)


def count_by_guessing_the_key(fn, calls, **jit_kwargs):
    """Right about structure, shapes, dtypes and statics; blind to weak types; traces nothing."""
    static = set(jit_kwargs.get("static_argnames", ()))
    keys = set()
    for args, kwargs in calls:
        dynamic = {k: v for k, v in kwargs.items() if k not in static}
        leaves, structure = jax.tree_util.tree_flatten((args, dynamic))
        types = tuple((jnp.shape(leaf), jnp.result_type(leaf)) for leaf in leaves)
        keys.add((structure, types, tuple((k, kwargs[k]) for k in sorted(static & kwargs.keys()))))
    return len(keys)


def count_guessing_after_tracing(fn, calls, **jit_kwargs):
    """Traces fn for real, then answers with its guess anyway."""
    count_traces(fn, calls, **jit_kwargs)
    return count_by_guessing_the_key(fn, calls, **jit_kwargs)


_running = {"traces": 0}


def count_never_reset(fn, calls, **jit_kwargs):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        _running["traces"] += 1
        return fn(*args, **kwargs)

    jitted = jax.jit(traced, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return _running["traces"]


_reused = {}


def count_reusing_the_jit(fn, calls, **jit_kwargs):
    key = (fn, tuple(sorted(jit_kwargs.items())))
    if key not in _reused:
        _reused[key] = counted_jit(fn, **jit_kwargs)
    jitted, counter = _reused[key]
    counter["traces"] = 0
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]


def count_as_float(fn, calls, **jit_kwargs):
    return float(count_traces(fn, calls, **jit_kwargs))


def count_dispatch_cache_entries(fn, calls, **jit_kwargs):
    """A fresh wrapper per count, but it reads jit's dispatch cache, which is not its trace count."""
    jitted = jax.jit(functools.wraps(fn)(lambda *args, **kwargs: fn(*args, **kwargs)), **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return jitted._cache_size()


# Counting traces and compiles, each apart: right methods.

def count_traces_and_compiles(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    compiles = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for args, kwargs in calls:
            jax.block_until_ready(jitted(*args, **kwargs))
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return {"traces": counter["traces"], "compiles": len(compiles)}


class _CompileTally:
    def __init__(self):
        self.spans = []

    def __call__(self, event, start_time, end_time, **details):
        if event.endswith("backend_compile_duration"):
            self.spans.append(end_time - start_time)


def count_both_by_time_spans(fn, calls, **jit_kwargs):
    """No counted_jit: a list appended to while tracing; compiles from time-span events."""
    traced = []
    jitted = jax.jit(lambda *args, **kwargs: traced.append(1) or fn(*args, **kwargs), **jit_kwargs)
    tally = _CompileTally()
    jax.monitoring.register_event_time_span_listener(tally)
    try:
        for args, kwargs in calls:
            jitted(*args, **kwargs)
    finally:
        jax.monitoring.unregister_event_time_span_listener(tally)
    return dict(traces=np.int32(len(traced)), compiles=len(tally.spans))  # NumPy integers are whole numbers


# ... and wrong ones.

def count_compiles_as_traces(fn, calls, **jit_kwargs):
    """The old claim: every compile comes with a trace, so one count serves both."""
    traces = count_traces(fn, calls, **jit_kwargs)
    return {"traces": traces, "compiles": traces}


def count_traces_as_compiles(fn, calls, **jit_kwargs):
    """Counts the compile events and reports them as the traces too."""
    compiles = count_traces_and_compiles(fn, calls, **jit_kwargs)["compiles"]
    return {"traces": compiles, "compiles": compiles}


_compile_log = []


def _log_compiles(event, duration_secs, **details):
    if event == COMPILE_EVENT:
        _compile_log.append(duration_secs)


def count_compiles_never_reset(fn, calls, **jit_kwargs):
    """One listener for good and a log never emptied: every count includes the ones before it."""
    if not _compile_log:
        jax.monitoring.register_event_duration_secs_listener(_log_compiles)
        _compile_log.append("registered")
    return {"traces": count_traces(fn, calls, **jit_kwargs), "compiles": len(_compile_log) - 1}


def count_every_event(fn, calls, **jit_kwargs):
    """Counts every duration event (tracing, lowering, compiling) as a compile."""
    events = []
    listener = lambda event, duration_secs, **details: events.append(event)  # noqa: E731
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        traces = count_traces(fn, calls, **jit_kwargs)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return {"traces": traces, "compiles": len(events)}


def count_compiles_by_placement_guess(fn, calls, **jit_kwargs):
    """Traces measured; compiles predicted as a new compile per trace and per device seen, blind to
    whether an array is committed."""
    devices = {str(next(iter(leaf.devices()))) for args, kwargs in calls
               for leaf in jax.tree_util.tree_leaves((args, kwargs)) if isinstance(leaf, jax.Array)}
    traces = count_traces(fn, calls, **jit_kwargs)
    return {"traces": traces, "compiles": traces + len(devices) - 1}


def count_both_as_tuple(fn, calls, **jit_kwargs):
    counts = count_traces_and_compiles(fn, calls, **jit_kwargs)
    return counts["traces"], counts["compiles"]


# The reference count and the sequences.

def notebook_sequences():
    """The notebook's nine sequences, as the specs the checks hand to the student's kernel."""
    x8, x16 = array(np.arange(8, dtype=np.float32)), array(np.arange(16, dtype=np.float32))
    i8 = array(np.arange(8, dtype=np.int32))
    two = py(2.0)
    partials = [call(x8, act=partial("scaled", factor=two)) for _ in range(3)]
    tree = [call(x8, partial("scaled", factor=two, tree=True)) for _ in range(3)]
    return {
        "repeat": Sequence("affine", [call(x8, two)] * 3, ""),
        "new shape": Sequence("affine", [call(x8, two), call(x16, two), call(x8, two)], ""),
        "new dtype": Sequence("affine", [call(x8, two), call(i8, two), call(x8, two)], ""),
        "new value": Sequence("affine", [call(x8, py(1.0)), call(x8, py(2.5)), call(x8, py(3.0))], ""),
        "weak type": Sequence("affine", [call(x8, two), call(x8, jnp_scalar(2.0, "float32")),
                                         call(x8, np_scalar(2.0))], ""),
        "keyword": Sequence("affine", [call(x8, two), call(x8, scale=two)], ""),
        "static": Sequence("power", [call(x8, n=py(2)), call(x8, n=py(3)), call(x8, n=py(2))], ""),
        "partial": Sequence("apply", partials, ""),
        "tree Partial": Sequence("tree", tree, ""),
    }


@pytest.mark.parametrize("name", NOTEBOOK_COUNTS)
def test_the_reference_count_agrees_with_the_hand_count(name):
    sequence = notebook_sequences()[name]
    assert reference_count(sequence) == NOTEBOOK_COUNTS[name]
    assert count_traces(Box(sequence.kind).fn, sequence.build(), **sequence.jit_kwargs) == NOTEBOOK_COUNTS[name]


def test_the_reference_count_starts_from_a_new_function_every_time():
    sequence = notebook_sequences()["new shape"]
    assert [reference_count(sequence) for _ in range(3)] == [2, 2, 2]
    box = Box("affine")
    jax.jit(box.fn)(jnp.ones(3), 2.0)
    jax.jit(box.fn)(jnp.ones(3), 2.0)  # JAX's cache is keyed on the function: a second jit hits
    assert box.traces == 1


def test_hidden_sequences_are_fresh_draws_with_every_kind_and_weak_types():
    rng = np.random.default_rng(7)
    sequences = hidden_sequences(rng)
    assert {s.kind for s in sequences} == set(tracing.VARIANTS)
    assert sum("Python" in s.label for s in sequences) == 3
    for s in sequences:
        assert len(s.calls) >= 3 and all(isinstance(a, tuple) and isinstance(k, dict) for a, k in s.calls)
        count = reference_count(s)
        assert 1 <= count <= len(s.calls)
    draws = {tuple(args[0]["data"].shape for args, _ in random_sequence(np.random.default_rng(seed), "affine").calls)
             for seed in range(5)}
    assert len(draws) > 1  # a new draw for every check


def test_weak_type_sequences_separate_python_scalars_from_arrays():
    for sequence in tracing.weak_type_sequences(np.random.default_rng(0)):
        assert reference_count(sequence) == 2
        assert count_by_guessing_the_key(None, sequence.build()) == 1


def test_numpy_arguments_share_a_trace_but_not_a_dispatch_cache_entry():
    sequence = tracing.numpy_sequence(np.random.default_rng(0))
    assert reference_count(sequence) == 2
    assert count_dispatch_cache_entries(Box("affine").fn, sequence.build()) == 3


def test_descriptions_cross_the_channel_as_values_and_build_the_same_calls():
    """Nothing in a description crosses as a reference: the student's kernel rebuilds it from data."""
    sender, receiver = Codec(make_proxy=None), Codec(make_proxy=lambda handle, info: pytest.fail(info))
    for sequence in hidden_sequences(np.random.default_rng(3)) + list(notebook_sequences().values()):
        sent = json.loads(json.dumps(sender.encode(sequence.description())))
        assert '"ref"' not in json.dumps(sent)
        received = receiver.decode(sent)
        here, there = sequence.build(), tracing.builder.calls(received)
        assert jax.tree_util.tree_structure(here) == jax.tree_util.tree_structure(there)
        for a, b in zip(jax.tree_util.tree_leaves(here), jax.tree_util.tree_leaves(there)):
            assert type(a) is type(b) and np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
            assert getattr(a, "weak_type", None) == getattr(b, "weak_type", None)


# The audits.

@pytest.mark.parametrize("right", [counted_jit, counted_jit_by_partial, counted_jit_decorated])
def test_right_counted_jits_pass(right):
    assert audit_counted_jit(right, np.random.default_rng(0)) == []
    assert audit_counted_jit(right) == []


# The reference stays in make check (a correct answer must pass there too); the variants run in make test.
@pytest.mark.parametrize("right", [count_traces,
                                   *(pytest.param(variant, marks=pytest.mark.slow) for variant in
                                     [count_traces_by_log, count_traces_clearing_caches, count_traces_nonlocal])])
def test_right_counts_pass(right):
    # One protocol drawn from a seed here; grading draws a fresh one (the graded samples prove that path).
    assert audit_count_traces(right, np.random.default_rng(0)) == []
    assert audit_isolation(right) == []


@pytest.mark.parametrize("wrong,why", [
    (counted_jit_counting_calls, "count traces, not calls"),
    (counted_jit_counting_calls, "not compiled with jax.jit"),
    (counted_jit_not_jitted, "not compiled with jax.jit"),
    pytest.param(counted_jit_with_a_twins_lower, "not compiled with jax.jit", marks=pytest.mark.slow),
    (counted_jit_not_jitted, "three identical calls: the counter says 3, JAX traced the function 3"),
    (counted_jit_dropping_static, "pass jax.jit's keyword arguments on"),
    (counted_jit_memoized, "a second counted_jit(fn) needs its own jitted function"),
])
def test_wrong_counted_jits_are_caught(wrong, why):
    problems = audit_counted_jit(wrong)
    assert any(why in p for p in problems), problems


def test_one_counter_shared_by_every_counted_jit_is_caught():
    _shared["traces"] = 5
    problems = audit_counted_jit(counted_jit_sharing_one_counter)
    assert len(problems) == 1 and "fresh counter reading" in problems[0], problems
    _shared["traces"] = 0  # reads zero at first, but a second counted_jit shares it
    problems = audit_counted_jit(counted_jit_sharing_one_counter)
    assert any("its own counter" in p for p in problems), problems


@pytest.mark.parametrize("wrong,why", [
    (count_calls, "(measure, do not predict)"),
    (count_by_guessing_the_key, "(measure, do not predict)"),
    (count_guessing_after_tracing, "a Python float, then a float32 scalar"),
    (count_never_reset, "count_traces answered"),
    (count_as_float, "must return an int"),
    (count_dispatch_cache_entries, "a NumPy array and scalar where JAX ones of the same type were"),
])
def test_wrong_counts_are_caught(wrong, why):
    problems = audit_count_traces(wrong)
    assert any(why in p for p in problems), problems


@pytest.mark.slow
def test_a_guess_made_after_tracing_is_still_caught_on_weak_types():
    problems = audit_count_traces(count_guessing_after_tracing, np.random.default_rng(0))
    weak = {s.label for s in tracing.weak_type_sequences(np.random.default_rng(0))}
    assert {p.split(":")[0] for p in problems} >= weak


@pytest.mark.parametrize("wrong", [count_never_reset, count_reusing_the_jit])
def test_counts_that_depend_on_earlier_counts_are_caught(wrong):
    problems = audit_isolation(wrong)
    assert len(problems) == 1 and "must start from a function JAX has never traced" in problems[0]


@pytest.mark.parametrize("consistent", [count_calls, count_by_guessing_the_key, count_dispatch_cache_entries])
def test_isolation_grades_isolation_only(consistent):
    assert audit_isolation(consistent) == []


def test_a_report_that_is_not_the_probes_is_refused(monkeypatch):
    """A forged report (too short, of the wrong kind) fails the audit instead of being read."""
    monkeypatch.setattr(tracing.remote, "probe", lambda name, fn, steps: (("answer", 1, 1),))
    for audit in (audit_counted_jit, audit_count_traces, audit_isolation):
        assert audit(count_traces) == ["the student's kernel sent back a report that is not the probe's"]


def test_failures_are_reported_not_raised():
    def broken(fn, *args, **kwargs):
        raise NotImplementedError()

    assert "failed with NotImplementedError" in audit_counted_jit(broken)[0]
    assert all("failed with NotImplementedError" in p for p in audit_count_traces(broken))
    assert "failed with NotImplementedError" in audit_isolation(broken)[0]


# Traces and compiles, each apart.

def _placed(data, device=0):
    return jax.device_put(jnp.asarray(data), jax.devices()[device])


def test_committing_an_array_compiles_without_tracing():
    """The claim the lesson once made, that every compile comes with a trace, is false on one device."""
    box, x = Box("affine"), jnp.arange(8, dtype=jnp.float32)
    jitted = jax.jit(box.fn)
    readings = []
    for arg in (x, x, _placed(x), x, _placed(x)):
        with CompileEvents() as seen:
            jax.block_until_ready(jitted(arg, 2.0))
        readings.append((box.traces, seen.count))
    assert readings == [(1, 1), (1, 0), (1, 1), (1, 0), (1, 0)]


def test_the_compile_instrument_counts_one_event_per_compiled_program():
    tracing.compile_instrument()
    x = jnp.ones(5)  # built outside the block: making an array can compile a program of its own
    with CompileEvents() as outer:
        with CompileEvents() as inner:
            jax.block_until_ready(jax.jit(Box("affine").fn)(x, 1.0))
    assert inner.count == outer.count == 1
    jax.block_until_ready(jax.jit(Box("affine").fn)(x, 1.0))
    assert inner.count == outer.count == 1  # nothing counted after the block


def test_a_jax_without_the_compile_event_stops_the_check_instead_of_failing_the_student(monkeypatch):
    monkeypatch.setattr(probes, "COMPILE_EVENT", "/jax/renamed/compile")
    with pytest.raises(tracing.InstrumentMissing) as caught:
        audit_count_traces_and_compiles(count_traces_and_compiles)
    assert not isinstance(caught.value, CheckFailed) and "/jax/renamed/compile" in str(caught.value)


@pytest.mark.slow
def test_compile_sequences_compile_more_than_they_trace_on_one_device():
    for seed in range(6):
        sequences = compile_sequences(np.random.default_rng(seed), devices=1)
        assert [s.kind for s in sequences[:2]] == ["affine", "power"] and len(sequences) == 3
        for sequence in sequences[:2]:
            traces, compiles = reference_counts(sequence)
            assert 1 <= traces < compiles <= len(sequence.calls), (seed, sequence.label, traces, compiles)
        traces, compiles = reference_counts(sequences[2])
        assert traces == compiles  # no placement changes: one compile per trace
    # On one device every committed array is on device 0.
    placed = [spec for s in compile_sequences(np.random.default_rng(1), devices=1) for args, kwargs in s.calls
              for spec in [*args, *kwargs.values()] if isinstance(spec, dict) and "device" in spec]
    assert placed and {spec["device"] for spec in placed} == {0}


def test_a_sequence_without_placements_compiles_once_per_trace():
    for name, sequence in notebook_sequences().items():
        assert reference_counts(sequence) == (NOTEBOOK_COUNTS[name],) * 2


# The reference stays in make check; the variant runs in make test.
@pytest.mark.parametrize("right", [count_traces_and_compiles,
                                   pytest.param(count_both_by_time_spans, marks=pytest.mark.slow)])
def test_right_trace_and_compile_counts_pass(right):
    assert audit_count_traces_and_compiles(right, np.random.default_rng(0)) == []
    assert audit_count_traces_and_compiles(right) == []


@pytest.mark.parametrize("wrong,why", [
    (count_compiles_as_traces, "a compile can happen without a trace: count compiles apart from traces"),
    (count_traces_as_compiles, "the traces it reports are the compiles"),
    (count_compiles_never_reset, "count JAX's compile events while the calls run, from zero"),
    (count_every_event, "count JAX's compile events while the calls run, from zero"),
    (count_compiles_by_placement_guess, "a compile can happen without a trace"),
    (count_both_as_tuple, "must return a dict {'traces': T, 'compiles': C}"),
])
def test_wrong_trace_and_compile_counts_are_caught(wrong, why):
    problems = audit_count_traces_and_compiles(wrong, np.random.default_rng(0))
    assert any(why in p for p in problems), problems
    placement = compile_sequences(np.random.default_rng(0), devices=1)[0].label
    if wrong is not count_both_as_tuple:
        assert any(p.startswith(placement) for p in problems), problems


def count_with_the_listener_removed_after_the_loop(fn, calls, **jit_kwargs):
    """Right counts, but the listener is removed after the loop, not in `finally:`: a call that
    raises leaves it registered."""
    jitted, counter = counted_jit(fn, **jit_kwargs)
    compiles = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    jax.monitoring.unregister_event_duration_listener(on_duration)
    return {"traces": counter["traces"], "compiles": len(compiles)}


def count_with_the_listener_never_removed(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    compiles = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            compiles.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    for args, kwargs in calls:
        jax.block_until_ready(jitted(*args, **kwargs))
    return {"traces": counter["traces"], "compiles": len(compiles)}


@pytest.mark.parametrize("wrong,how", [(count_with_the_listener_removed_after_the_loop, "raised"),
                                       (count_with_the_listener_never_removed, "returned")])
def test_a_listener_left_registered_is_caught(wrong, how):
    from perfcourse.kernel.probes.tracing import duration_listeners

    before = duration_listeners()
    try:
        problems = audit_count_traces_and_compiles(wrong, np.random.default_rng(0))
    finally:
        from jax._src import monitoring
        del monitoring._event_duration_secs_listeners[before:]  # what the wrong counters left
    assert len(problems) == 1 and f"still registered after count_traces_and_compiles {how}" in problems[0], problems
    assert "finally:" in problems[0]


def test_a_count_of_compiles_that_is_right_once_is_still_caught_when_counted_again():
    """The first sequence is counted again at the end, with the same function."""
    first = []

    def right_once(fn, calls, **jit_kwargs):
        first.append(fn)
        if first.count(fn) == 1:
            return count_traces_and_compiles(fn, calls, **jit_kwargs)
        return {"traces": count_traces(fn, calls, **jit_kwargs), "compiles": 0}

    problems = audit_count_traces_and_compiles(right_once, np.random.default_rng(0))
    assert len(problems) == 1 and "counted again after the others" in problems[0], problems


@pytest.mark.parametrize("forged", [
    lambda steps: tuple(("answer", ("dict", 1, 2, ("compiles", "traces")), 1) for _ in steps),  # too short
    lambda steps: tuple(("answer", {"traces": 1, "compiles": 2}, 1, 2) for _ in steps),  # not the probe's reading
    lambda steps: (("answer", ("dict", 1, 2, ()), 1, 2),),  # too few results
])
def test_a_forged_compile_report_is_refused(monkeypatch, forged):
    monkeypatch.setattr(tracing.remote, "probe", lambda name, fn, steps: forged(steps))
    assert audit_count_traces_and_compiles(count_traces_and_compiles) == [
        "the student's kernel sent back a report that is not the probe's"]


def test_verdict_raises_the_problems_for_the_student():
    verdict([])
    with pytest.raises(CheckFailed, match="a compile can happen without a trace"):
        verdict(audit_count_traces_and_compiles(count_compiles_as_traces, np.random.default_rng(0)))


# The notebook.

def notebook():
    return read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")


def grade_cells():
    return {c.metadata["nbgrader"]["grade_id"]: c for c in notebook().cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in grade_cells().items()} == {
        "test_counted_jit": 3, "test_count_traces": 4, "test_count_traces_isolated": 2,
        "test_count_traces_and_compiles": 3}


def _public_code(public: str) -> list[str]:
    return [line for line in public.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_every_test_cell_has_a_public_check_and_hidden_ones_that_raise_for_the_student():
    for grade_id, cell in grade_cells().items():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert any(line.lstrip().startswith("assert ") for line in _public_code(public)), grade_id
        assert "assert not _problems" not in hidden and "_problems" not in hidden
        assert "from perfcourse.checks import verdict" in hidden
        code = _public_code(hidden.partition("### END HIDDEN TESTS")[0])
        assert code[-1].startswith("verdict(audit_"), grade_id


def test_public_tests_need_no_course_code_and_hidden_tests_read_no_version_text():
    checks_source = (ROOT / "src" / "perfcourse" / "checks" / "tracing.py").read_text()
    for cell in grade_cells().values():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public
        assert "perfcourse.checks.tracing" in hidden
        for text in (public + hidden, checks_source):
            for version_dependent in ("explain_cache_misses", "TRACING CACHE MISS", "jaxpr_trace",
                                      "backend_compile", "repr(", "make_jaxpr"):
                assert version_dependent not in text
    # The one name of JAX's that is graded: the compile event, named in one place, and checked
    # (compile_instrument) before any compile count is judged.
    probes_source = (ROOT / "src" / "perfcourse" / "kernel" / "probes" / "tracing.py").read_text()
    assert probes_source.count('"/jax/core/compile/backend_compile_duration"') == 1
    assert "compile_instrument()" in checks_source.partition("def audit_count_traces_and_compiles")[2]


def _markdown() -> str:
    return "\n".join(c.source for c in notebook().cells if c.cell_type == "markdown")


def test_the_lesson_no_longer_says_every_miss_traces_then_compiles():
    """The old claims: "a call whose key JAX has not seen makes it trace your Python function again,
    then lower and compile", drawn as "miss: trace -> lower, compile". A compile needs no trace."""
    text = " ".join(_markdown().split())
    assert "key JAX has not seen before makes it *trace* your Python function again, then lower" not in text
    assert "without tracing" in text and "compile without a trace" in text.lower()
    for phrase in ("committed", "device", "sharding", "trace cache", "compile cache"):
        assert phrase in text, phrase
    sources = "\n".join(c.source for c in notebook().cells)
    steps = committed()["diagram"]["panel"]["steps"]
    assert steps == ["call", "trace cache", "miss: trace", "compile cache", "miss: lower, compile", "run"]
    for a, b in zip(steps, steps[1:]):
        assert not (a.startswith("miss: trace") and "compile" in b and "cache" not in b), (a, b)
    assert '"steps": ["call", "trace cache", "miss: trace", "compile cache", "miss: lower, compile", "run"]' in sources


def test_the_notebook_teaches_two_counts_with_a_placement_sequence_on_any_device_count():
    sources = "\n".join(c.source for c in notebook().cells)
    assert 'COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"' in sources
    assert "jax.device_put(x8, jax.devices()[0])" in sources  # a compile without a trace on one device
    assert "if jax.device_count() > 1:" in sources and "jax.devices()[1]" in sources  # and a device change on several
    test = grade_cells()["test_count_traces_and_compiles"].source
    assert '"committed": {"traces": 1, "compiles": 2}' in test and '"another device"' in test


def test_the_notebook_names_the_hand_counted_sequences_and_asks_for_predictions():
    sources = "\n".join(c.source for c in notebook().cells)
    for name in NOTEBOOK_COUNTS:
        assert f'"{name}": (' in sources and f'"{name}": None,' in sources
    release = read_notebook(ROOT / "release" / LESSON / f"{LESSON}.ipynb")
    assert any("predictions = {" in c.source and "None" in c.source for c in release.cells)


# The artifact.

def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


# On one device (the committed artifact); tests/test_performance_02_devices.py adds "another device" on 8.
PLACEMENT_COUNTS = {"committed": (1, 2), "shapes only": (2, 2)}


def test_artifact_has_a_flow_diagram_with_two_caches():
    # The seed layout itself: tests/test_artifacts.py, for every lesson.
    diagram = committed()["diagram"]
    assert diagram["panel"]["kind"] == "flow"
    assert diagram["panel"]["steps"] == ["call", "trace cache", "miss: trace", "compile cache",
                                         "miss: lower, compile", "run"]
    assert len(diagram["panel"]["notes"]) == len(diagram["panel"]["steps"])
    assert diagram["prediction"].endswith("?") and diagram["alt"] == diagram["reading"]
    assert "not measured durations" in diagram["alt"]
    assert "compiles when only the placement changed" in diagram["alt"]


def test_artifact_report_counts_traces_and_compiles_exactly():
    report = json.loads(committed()["stdout"])
    assert report["jax"] == "0.9.2" and report["memory_measured"] is False and report["run_time_measured"] is False
    assert report["devices"] == 1 and report["compile_event"] == COMPILE_EVENT
    counts = {s["name"]: (s["traces"], s["compiles"]) for s in report["sequences"]}
    assert counts == {**{name: (n, n) for name, n in NOTEBOOK_COUNTS.items()}, **PLACEMENT_COUNTS}
    for s in report["sequences"]:
        assert s["traces"] <= s["compiles"] <= s["calls"]
        # JAX's own evidence was collected beside the counters (display only; never graded).
        assert s["cache_miss_explanations"] == s["traces"]  # it explains tracing misses, never a compile alone
        assert s["backend_compile_seconds"] > 0
    mixed = report["mixed_sequence"]
    assert len(mixed["calls"]) == len(mixed["traces_so_far"]) == len(mixed["compiles_so_far"]) == 9
    assert mixed["traces_so_far"] == [1, 1, 2, 3, 3, 4, 5, 5, 5]
    assert mixed["compiles_so_far"] == [1, 1, 2, 3, 4, 5, 6, 6, 6]  # call 5: committed, compiles without a trace


def test_artifact_panels_draw_the_report():
    artifact = committed()
    report = json.loads(artifact["stdout"])
    by_name = {s["name"]: s for s in report["sequences"]}
    *bars, line = artifact["data"]["panels"]
    assert [p["kind"] for p in bars] == ["bar"] * 4 and line["kind"] == "line"
    assert sorted(label for p in bars for label in p["labels"]) == sorted([*NOTEBOOK_COUNTS, *PLACEMENT_COUNTS])
    for panel in bars:
        traces, compiles, explained = panel["series"]
        assert traces["y"] == [by_name[label]["traces"] for label in panel["labels"]]
        assert compiles["y"] == [by_name[label]["compiles"] for label in panel["labels"]]
        assert explained["y"] == [by_name[label]["cache_miss_explanations"] for label in panel["labels"]]
    assert line["x"] == list(range(1, 10))
    assert [s["y"] for s in line["series"]] == [report["mixed_sequence"]["traces_so_far"],
                                               report["mixed_sequence"]["compiles_so_far"]]
