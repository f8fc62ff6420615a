"""performance-02 (count traces): the trace-counting checks on right and wrong methods, without a
kernel; the notebook's grade cells; and the committed artifact's evidence."""
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import ROOT

from perfcourse.channel.codec import Codec
from perfcourse.checks import tracing
from perfcourse.checks.tracing import (Sequence, array, audit_count_traces, audit_counted_jit, audit_isolation,
                                       call, hidden_sequences, jnp_scalar, np_scalar, partial, py,
                                       random_sequence, reference_count)
from perfcourse.course import read_notebook
from perfcourse.kernel.probes.tracing import Box

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


@pytest.mark.parametrize("right", [count_traces, count_traces_by_log, count_traces_clearing_caches,
                                   count_traces_nonlocal])
def test_right_counts_pass(right):
    assert audit_count_traces(right, np.random.default_rng(0)) == []
    assert audit_count_traces(right) == []
    assert audit_isolation(right) == []


@pytest.mark.parametrize("wrong,why", [
    (counted_jit_counting_calls, "count traces, not calls"),
    (counted_jit_counting_calls, "not compiled with jax.jit"),
    (counted_jit_not_jitted, "not compiled with jax.jit"),
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


# The notebook.

def notebook():
    return read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")


def grade_cells():
    return {c.metadata["nbgrader"]["grade_id"]: c for c in notebook().cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in grade_cells().items()} == {
        "test_counted_jit": 3, "test_count_traces": 4, "test_count_traces_isolated": 2}


def test_public_tests_need_no_course_code_and_hidden_tests_read_no_version_text():
    checks_source = (ROOT / "src" / "perfcourse" / "checks" / "tracing.py").read_text()
    for cell in grade_cells().values():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public
        assert "perfcourse.checks.tracing" in hidden
        for text in (public + hidden, checks_source):
            for version_dependent in ("explain_cache_misses", "jax.monitoring", "TRACING CACHE MISS",
                                      "jaxpr_trace", "backend_compile", "repr(", "make_jaxpr"):
                assert version_dependent not in text


def test_the_notebook_names_the_hand_counted_sequences_and_asks_for_predictions():
    sources = "\n".join(c.source for c in notebook().cells)
    for name in NOTEBOOK_COUNTS:
        assert f'"{name}": (' in sources and f'"{name}": None,' in sources
    release = read_notebook(ROOT / "release" / LESSON / f"{LESSON}.ipynb")
    assert any("predictions = {" in c.source and "None" in c.source for c in release.cells)


# The artifact.

def committed():
    return json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())


def test_artifact_has_a_flow_diagram():
    # The seed layout itself: tests/test_artifacts.py, for every lesson.
    diagram = committed()["diagram"]
    assert diagram["panel"]["kind"] == "flow"
    assert diagram["panel"]["steps"] == ["call", "build key", "look up", "miss: trace", "lower, compile", "run"]
    assert len(diagram["panel"]["notes"]) == len(diagram["panel"]["steps"])
    assert diagram["prediction"].endswith("?") and diagram["alt"] == diagram["reading"]
    assert "not measured durations" in diagram["alt"]


def test_artifact_report_counts_every_sequence_exactly():
    report = json.loads(committed()["stdout"])
    assert report["jax"] == "0.9.2" and report["memory_measured"] is False and report["run_time_measured"] is False
    counts = {s["name"]: s["traces"] for s in report["sequences"]}
    assert counts == NOTEBOOK_COUNTS
    for s in report["sequences"]:
        assert s["traces"] <= s["calls"]
        # JAX's own evidence was collected beside the counter (display only; never graded).
        assert s["cache_miss_explanations"] >= 1 and s["jax_compile_events"] >= 1
        assert s["backend_compile_seconds"] > 0
    mixed = report["mixed_sequence"]
    assert len(mixed["calls"]) == len(mixed["traces_so_far"]) == len(mixed["compile_events_so_far"]) == 8
    assert mixed["traces_so_far"] == [1, 1, 2, 3, 3, 4, 5, 5]
    assert all(b >= a for a, b in zip(mixed["compile_events_so_far"], mixed["compile_events_so_far"][1:]))
    assert any("compile" in name for name in report["jax_event_names"])


def test_artifact_panels_draw_the_report():
    artifact = committed()
    report = json.loads(artifact["stdout"])
    by_name = {s["name"]: s for s in report["sequences"]}
    *bars, line = artifact["data"]["panels"]
    assert [p["kind"] for p in bars] == ["bar"] * 3 and line["kind"] == "line"
    assert sorted(label for p in bars for label in p["labels"]) == sorted(NOTEBOOK_COUNTS)
    for panel in bars:
        traces, explained = panel["series"]
        assert traces["y"] == [by_name[label]["traces"] for label in panel["labels"]]
        assert explained["y"] == [by_name[label]["cache_miss_explanations"] for label in panel["labels"]]
    assert line["x"] == list(range(1, 9))
    assert [s["y"] for s in line["series"]] == [report["mixed_sequence"]["traces_so_far"],
                                               report["mixed_sequence"]["compile_events_so_far"]]
