"""performance-09 (memory and data movement): the hidden checks without a kernel, the notebook, the artifact.

Without a channel `remote.probe` runs the probes in this process and the checks call the
functions below directly, so each right idiom must pass and each mistake fail its own check.
"""
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import ROOT

from perfcourse.checks import CheckFailed, memory
from perfcourse.course import read_notebook

LESSON = "performance-09"
FIELDS = memory.MEMORY_FIELDS


# --- right and wrong methods, as plain functions ------------------------------------------------
def breakdown_right(compiled):
    try:
        stats = compiled.memory_analysis()
        why = "memory_analysis() returned None"
    except Exception as error:
        stats, why = None, f"memory_analysis() raised {type(error).__name__}"
    result, missing = {}, {}
    for key, attribute in FIELDS.items():
        value = None if stats is None else getattr(stats, attribute, None)
        result[key] = value
        if value is None:
            missing[key] = why if stats is None else f"no {attribute}"
    parts = [result[key] for key in FIELDS]
    result["total_bytes"] = None if None in parts else parts[0] + parts[1] + parts[2] - parts[3]
    if result["total_bytes"] is None:
        missing["total_bytes"] = "a part is missing"
    result["peak_bytes"] = None if stats is None else getattr(stats, memory.PEAK_FIELD, None)
    if result["peak_bytes"] is None:
        missing["peak_bytes"] = why if stats is None else "no peak"
    result["missing"] = missing
    return result


def breakdown_peak_is_the_sum(compiled):
    return {**breakdown_right(compiled), "peak_bytes": breakdown_right(compiled)["total_bytes"]}


def breakdown_no_peak(compiled):
    result = breakdown_right(compiled)
    del result["peak_bytes"]
    result["missing"].pop("peak_bytes", None)
    return result


def breakdown_zero_when_missing(compiled):
    result = breakdown_right(compiled)
    return {**{k: (0 if v is None else v) for k, v in result.items() if k != "missing"}, "missing": {}}


def breakdown_ignores_alias(compiled):
    result = breakdown_right(compiled)
    if result["total_bytes"] is not None:
        result["total_bytes"] += result["alias_bytes"]
    return result


def breakdown_crashes_on_none(compiled):
    stats = compiled.memory_analysis()
    return breakdown_right(type("P", (), {"memory_analysis": lambda self: stats})())


def breakdown_no_reasons(compiled):
    return {**breakdown_right(compiled), "missing": {}}


def live_right(arrays, device):
    arrays = list(arrays)
    try:
        stats = device.memory_stats()
        why = f"memory_stats() is None on {device.platform}"
    except Exception as error:
        stats, why = None, f"memory_stats() raised {type(error).__name__}"
    result = {"arrays": len(arrays), "bytes": sum(int(a.nbytes) for a in arrays), "missing": {}}
    for key in memory.STAT_KEYS:
        value = None if stats is None else stats.get(key)
        result[key] = value
        if value is None:
            result["missing"][key] = why if stats is None else f"no {key}"
    return result


def live_zero_on_cpu(arrays, device):
    result = live_right(arrays, device)
    return {**{k: (0 if v is None else v) for k, v in result.items() if k != "missing"}, "missing": {}}


def live_counts_the_process(arrays, device):
    return live_right(jax.live_arrays(), device)


def live_crashes_on_error(arrays, device):
    stats = device.memory_stats()
    return live_right(arrays, type("D", (), {"platform": "x", "memory_stats": lambda self: stats})())


def sgd(params, grads, lr):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def update_right():
    return jax.jit(sgd, donate_argnums=0)


def update_by_name():
    return jax.jit(sgd, donate_argnames="params")


def update_not_donated():
    return jax.jit(sgd)


def update_not_jitted():
    return sgd


def update_donates_grads():
    return jax.jit(sgd, donate_argnums=1)


def update_donates_both():
    return jax.jit(sgd, donate_argnums=(0, 1))  # JAX drops the grads' donation here: no output left for them


def update_donates_learning_rate():
    return jax.jit(sgd, donate_argnames=("params", "lr"))


def update_wrong_values():
    return jax.jit(lambda params, grads, lr: jax.tree.map(lambda p, g: p + lr * g, params, grads), donate_argnums=0)


def evidence_right(fn, args, donate_argnums):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    alias = compiled.memory_analysis().alias_size_in_bytes
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": alias, "deleted": [a.is_deleted() for a in args],
            "not_usable": any("not usable" in str(w.message) for w in caught)}


def evidence_warning_from_alias(fn, args, donate_argnums):
    result = evidence_right(fn, args, donate_argnums)
    return {**result, "not_usable": bool(donate_argnums) and result["alias_bytes"] == 0}


def evidence_deletion_assumed(fn, args, donate_argnums):
    result = evidence_right(fn, args, donate_argnums)
    return {**result, "deleted": [i in donate_argnums for i in range(len(args))]}


def evidence_alias_from_arguments(fn, args, donate_argnums):
    result = evidence_right(fn, args, donate_argnums)
    return {**result, "alias_bytes": sum(int(args[i].nbytes) for i in donate_argnums)}


def evidence_warnings_not_caught(fn, args, donate_argnums):
    compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": compiled.memory_analysis().alias_size_in_bytes,
            "deleted": [a.is_deleted() for a in args], "not_usable": False}


def evidence_never_traces(fn, args, donate_argnums):
    return {"alias_bytes": 0, "deleted": [False] * len(args), "not_usable": False}


def sweep_right(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size // 4, np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        gets = [timer(get, jax.block_until_ready(put(host))) for _ in range(repeats)]
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows


def sweep_lambdas(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.zeros(size, np.uint8)  # size bytes, another dtype: bytes are what is counted
        puts = [timer(lambda: put(host)) for _ in range(repeats)]
        gets = []
        for _ in range(repeats):
            device = put(host)
            device.block_until_ready()
            gets.append(timer(lambda: get(device)))
        rows.append({"bytes": size, "put_seconds": statistics.median(puts), "get_seconds": statistics.median(gets)})
    return rows


def sweep_put_in_flight(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size // 4, np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        gets = [timer(get, put(host)) for _ in range(repeats)]  # the fresh put is never waited for
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows


def sweep_reuses_device_array(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size // 4, np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        device = put(host)
        gets = [timer(get, device) for _ in range(repeats)]
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows


def sweep_warm_get_first(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size // 4, np.float32)
        puts = [timer(put, host) for _ in range(repeats)]
        gets = []
        for _ in range(repeats):
            device = put(host)
            get(device)  # a warm-up fetch: the timed one then finds the host copy
            gets.append(timer(get, device))
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows


def sweep_statistic(statistic):
    def sweep(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
        rows = []
        for size in sizes:
            host = np.ones(size // 4, np.float32)
            puts = [timer(put, host) for _ in range(repeats)]
            gets = [timer(get, jax.block_until_ready(put(host))) for _ in range(repeats)]
            rows.append({"bytes": size, "put_seconds": float(statistic(puts)), "get_seconds": float(statistic(gets))})
        return rows
    return sweep


def sweep_elements_not_bytes(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size, np.float32)  # `size` values: four times the bytes asked for
        puts = [timer(put, host) for _ in range(repeats)]
        gets = [timer(get, put(host)) for _ in range(repeats)]
        rows.append({"bytes": size, "put_seconds": float(np.median(puts)), "get_seconds": float(np.median(gets))})
    return rows


def sweep_both_in_one(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    rows = []
    for size in sizes:
        host = np.ones(size // 4, np.float32)
        both = [timer(lambda: get(put(host))) for _ in range(repeats)]
        rows.append({"bytes": size, "put_seconds": float(np.median(both)), "get_seconds": float(np.median(both))})
    return rows


def sweep_one_call(sizes, repeats=5, put=jax.device_put, get=jax.device_get, timer=None):
    return sweep_right(sizes, 1, put, get, timer)


def fit_right(nbytes, seconds):
    slope, intercept = np.polyfit(nbytes, seconds, 1, w=1 / np.asarray(seconds, float))
    return {"fixed_seconds": intercept, "bytes_per_second": 1 / slope}


def fit_centred(nbytes, seconds):
    x, y = np.asarray(nbytes, float), np.asarray(seconds, float)
    w = y ** -2.0
    mx, my = np.average(x, weights=w), np.average(y, weights=w)
    slope = (w * (x - mx) * (y - my)).sum() / (w * (x - mx) ** 2).sum()
    return {"fixed_seconds": my - slope * mx, "bytes_per_second": 1 / slope}


def fit_plain(nbytes, seconds):
    slope, intercept = np.polyfit(nbytes, seconds, 1)
    return {"fixed_seconds": intercept, "bytes_per_second": 1 / slope}


def fit_weights_one_over_t(nbytes, seconds):
    slope, intercept = np.polyfit(nbytes, seconds, 1, w=np.asarray(seconds, float) ** -0.5)
    return {"fixed_seconds": intercept, "bytes_per_second": 1 / slope}


def fit_through_origin(nbytes, seconds):
    x, y = np.asarray(nbytes, float), np.asarray(seconds, float)
    return {"fixed_seconds": 0.0, "bytes_per_second": float((x * x).sum() / (x * y).sum())}


def fit_log_log(nbytes, seconds):
    slope, intercept = np.polyfit(np.log(nbytes), np.log(seconds), 1)
    return {"fixed_seconds": float(np.exp(intercept)), "bytes_per_second": float(1 / np.exp(slope))}


def fit_endpoints(nbytes, seconds):
    slope = (seconds[-1] - seconds[0]) / (nbytes[-1] - nbytes[0])
    return {"fixed_seconds": seconds[0] - slope * nbytes[0], "bytes_per_second": 1 / slope}


def fit_slope_not_inverted(nbytes, seconds):
    slope, intercept = np.polyfit(nbytes, seconds, 1)
    return {"fixed_seconds": intercept, "bytes_per_second": slope}


def fit_bytes_on_seconds(nbytes, seconds):
    slope, intercept = np.polyfit(seconds, nbytes, 1)  # bytes = a + b * seconds, inverted
    return {"fixed_seconds": -intercept / slope, "bytes_per_second": slope}


def settings_right(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir, "jax_persistent_cache_min_compile_time_secs": 0.0,
            "jax_persistent_cache_min_entry_size_bytes": -1}


def settings_default_min_compile_time(cache_dir):
    return {"jax_compilation_cache_dir": cache_dir}


def settings_fixed_folder(cache_dir):
    return {**settings_right(cache_dir), "jax_compilation_cache_dir": cache_dir + "-elsewhere"}


def settings_dumps_only(cache_dir):
    return {"jax_dump_ir_to": cache_dir}  # the same files in both processes, no cache at all


def settings_cache_elsewhere(cache_dir):
    return {**settings_right(cache_dir + "-elsewhere"), "jax_dump_ir_to": cache_dir}


def settings_not_an_option(cache_dir):
    return {**settings_right(cache_dir), "jax_cache_everything": True}


def hit_right(first, second):
    from jax._src.cache_key import xla_flags_to_exclude_from_cache_key as left_out

    def key(c):
        return tuple(c["shape"]), c["dtype"], c["jax_version"], sorted(
            f for f in c["xla_flags"] if f.split("=")[0] not in left_out)
    return key(first) == key(second)


def hit_flags_as_a_set(first, second):
    from jax._src.cache_key import xla_flags_to_exclude_from_cache_key as left_out

    def key(c):
        return tuple(c["shape"]), c["dtype"], c["jax_version"], frozenset(
            f for f in c["xla_flags"] if f.split("=")[0] not in left_out)
    return key(first) == key(second)


def hit_every_dump_flag_left_out(first, second):
    def key(c):
        return tuple(c["shape"]), c["dtype"], c["jax_version"], frozenset(
            f for f in c["xla_flags"] if not f.startswith("--xla_dump"))
    return key(first) == key(second)


def hit_only_dump_to_left_out(first, second):
    def key(c):
        return tuple(c["shape"]), c["dtype"], c["jax_version"], frozenset(
            f for f in c["xla_flags"] if not f.startswith("--xla_dump_to="))
    return key(first) == key(second)


def hit_flags_as_written(first, second):
    return hit_right(first, second) and list(first["xla_flags"]) == list(second["xla_flags"])


def hit_values_matter(first, second):
    return hit_right(first, second) and first["argument_seed"] == second["argument_seed"]


def hit_version_ignored(first, second):
    return hit_right({**first, "jax_version": ""}, {**second, "jax_version": ""})


def hit_new_process_misses(first, second):
    return hit_right(first, second) and first["process"] == second["process"]


def layer(h, w):
    return jnp.tanh(h @ w), None


def scanned(body):
    def loss(weights, x):
        h, _ = jax.lax.scan(body, x, weights)
        return jnp.mean(h * h)
    return loss


def remat_right(policy):
    return scanned(layer if policy is None else jax.checkpoint(layer, policy=policy))


def remat_prevent_cse_off(policy):
    return scanned(layer if policy is None else jax.remat(layer, policy=policy, prevent_cse=False))


def remat_whole_network(policy):
    loss = scanned(layer)
    return loss if policy is None else jax.checkpoint(loss, policy=policy)


def remat_policy_ignored(policy):
    return scanned(jax.checkpoint(layer))


def remat_none_checkpointed(policy):
    return scanned(jax.checkpoint(layer, policy=policy))


def remat_unrolled(policy):
    body = layer if policy is None else jax.checkpoint(layer, policy=policy)

    def loss(weights, x):
        h = x
        for i in range(weights.shape[0]):
            h, _ = body(h, weights[i])
        return jnp.mean(h * h)
    return loss


def remat_other_network(policy):
    def other(h, w):
        return jnp.sin(h @ w), None
    return scanned(other if policy is None else jax.checkpoint(other, policy=policy))


# --- test_memory_breakdown ----------------------------------------------------------------------
def test_a_right_breakdown_passes():
    for seed in range(4):
        memory.check_memory_breakdown(breakdown_right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong, words", [
    (breakdown_zero_when_missing, "never 0"),
    (breakdown_ignores_alias, "total_bytes"),
    (breakdown_crashes_on_none, "raised"),
    (breakdown_no_reasons, "'missing' names"),
    (breakdown_peak_is_the_sum, "peak_bytes"),
    (breakdown_no_peak, "peak_bytes"),
])
def test_breakdown_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_memory_breakdown(wrong, np.random.default_rng(0))


def test_the_real_statistics_are_a_donating_program_with_temporaries():
    fields = memory.real_memory_fields(np.random.default_rng(3))
    assert fields["alias_size_in_bytes"] > 0 and fields["temp_size_in_bytes"] > 0 and fields[memory.PEAK_FIELD] > 0
    assert set(memory.OTHER_FIELDS) <= set(fields)


# --- test_live_memory ---------------------------------------------------------------------------
def test_right_live_memory_passes():
    for seed in range(3):
        memory.check_live_memory(live_right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong, words", [
    (live_zero_on_cpu, "never 0"),
    (live_counts_the_process, "jax.live_arrays"),
    (live_crashes_on_error, "raised"),
])
def test_live_memory_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_live_memory(wrong, np.random.default_rng(1))


def test_arrays_are_held_beside_the_ones_given_in_every_case():
    """Sent over the channel, the arrays given would be the student's process's only ones, and
    counting jax.live_arrays() would pass: the probe holds more beside them in every case."""
    for seed in range(3):
        before = {id(a): a for a in jax.live_arrays()}  # held: no new array takes one of their ids
        beside = []

        def live(arrays, device):
            gc.collect()  # the last case's arrays, freed
            given = {id(a) for a in arrays}
            beside.append(sum(id(a) not in given and id(a) not in before for a in jax.live_arrays()))
            return live_right(arrays, device)
        memory.check_live_memory(live, np.random.default_rng(seed))
        assert len(beside) == len(memory.device_cases(np.random.default_rng(0))) and min(beside) >= 1, beside


# --- test_donated_update ------------------------------------------------------------------------
@pytest.mark.parametrize("right", [update_right, update_by_name])
def test_a_donating_update_passes(right):
    memory.check_donated_update(right, np.random.default_rng(0))


@pytest.mark.parametrize("wrong, words", [
    (update_not_donated, "does not donate the params"),
    (update_not_jitted, "does not donate the params"),
    (update_donates_grads, "does not donate the params"),
    (update_donates_both, "grads or the learning rate too"),
    (update_donates_learning_rate, "grads or the learning rate too"),
    (update_wrong_values, "differ from an independent"),
])
def test_update_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_donated_update(wrong, np.random.default_rng(0))


def test_donation_marks_are_read_from_the_exported_text():
    memory.donation_instrument()
    text = ('func.func public @main(%arg0: tensor<3xf32> {mhlo.sharding = "{replicated}", '
            'tf.aliasing_output = 0 : i32} loc("a"), %arg1: tensor<3xf32> {jax.buffer_donor = true}, '
            '%arg2: tensor<f32>) -> (tensor<3xf32>) {')
    assert memory.donated_arguments(text) == [True, True, False]
    assert memory.donated_arguments("module {}") is None


# --- test_donation_evidence ---------------------------------------------------------------------
def test_right_evidence_passes():
    for seed in range(3):
        memory.check_donation_evidence(evidence_right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong, words", [
    (evidence_warning_from_alias, "not_usable"),
    (evidence_deletion_assumed, "deleted"),
    (evidence_alias_from_arguments, "alias_bytes"),
    (evidence_warnings_not_caught, "not_usable"),
    (evidence_never_traces, "never traced"),
])
def test_evidence_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_donation_evidence(wrong, np.random.default_rng(0))


def test_the_evidence_cases_tell_the_proxies_apart():
    """The silent case (no warning, nothing deleted, no alias) and the half-usable one are always there."""
    expected = {}
    for _, kind, count, argnums in memory.donation_cases(np.random.default_rng(0)):
        values = [jnp.ones((4, 6), jnp.float32) for _ in range(count)]
        expected[(kind, argnums)] = memory.reference_evidence(memory.DonationCase(kind, 1.5, (6, 4)), values, argnums)
    assert expected[("narrow", (0,))] == {"alias_bytes": 0, "deleted": [False], "not_usable": False}
    assert expected[("sum", (0,))] == {"alias_bytes": 0, "deleted": [False], "not_usable": True}
    both = expected[("scale_add", (0, 1))]
    assert both["alias_bytes"] == 96 and both["deleted"] == [True, False] and both["not_usable"]


# --- test_transfer_sweep ------------------------------------------------------------------------
@pytest.mark.parametrize("right", [sweep_right, sweep_lambdas])
def test_a_right_sweep_passes(right):
    for seed in range(4):
        memory.check_transfer_sweep(right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong, words", [
    (sweep_reuses_device_array, "already fetched"),
    (sweep_warm_get_first, "already fetched"),
    (sweep_put_in_flight, "nobody waited for"),
    (sweep_statistic(np.mean), "median"),
    (sweep_statistic(np.min), "median"),
    (sweep_statistic(lambda times: sorted(times)[len(times) // 2]), "median"),  # a middle element, not the mean of two
    (sweep_elements_not_bytes, "bytes"),
    (sweep_both_in_one, "more than one transfer"),
    (sweep_one_call, "repeats"),
])
def test_sweep_mistakes_are_caught(wrong, words):
    for seed in range(3):
        with pytest.raises(CheckFailed, match=words):
            memory.check_transfer_sweep(wrong, np.random.default_rng(seed))


def test_the_instruments_take_no_time():
    import time
    start = time.perf_counter()
    memory.check_transfer_sweep(sweep_right, np.random.default_rng(5))
    assert time.perf_counter() - start < 5  # no sleeping: the times are values picked by the check


# --- test_transfer_fit --------------------------------------------------------------------------
@pytest.mark.parametrize("right", [fit_right, fit_centred])
def test_a_right_fit_passes(right):
    for seed in range(5):
        memory.check_fit_transfer(right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong", [fit_through_origin, fit_log_log, fit_endpoints, fit_slope_not_inverted,
                                   fit_bytes_on_seconds, fit_plain, fit_weights_one_over_t])
def test_fit_mistakes_are_caught(wrong):
    with pytest.raises(CheckFailed, match="least-squares"):
        memory.check_fit_transfer(wrong, np.random.default_rng(0))


# --- test_cache_settings (fresh processes) ------------------------------------------------------
# Unmarked: the only case where a correct answer passes this check (two fresh processes, 1-2 s), kept in make check.
def test_right_settings_pass_across_two_processes():
    memory.check_cache_settings(settings_right, np.random.default_rng(0))


@pytest.mark.parametrize("wrong, words", [
    (settings_default_min_compile_time, "wrote nothing"),
    (settings_fixed_folder, "wrote nothing"),
    (settings_not_an_option, "could not apply"),
    (settings_dumps_only, "never looked its program up"),
    (settings_cache_elsewhere, "never looked its program up"),
    (lambda folder: [("jax_compilation_cache_dir", folder)], "a dict"),
])
def test_settings_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_cache_settings(wrong, np.random.default_rng(1))


# --- test_cache_invalidation --------------------------------------------------------------------
KEY_RULES = r"""
import json, os, sys
import jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
events = []
jax.monitoring.register_event_listener(lambda event, **kwargs: events.append(event))
base = os.environ.get("XLA_FLAGS", "")
program = jax.jit(lambda x: jnp.tanh(x @ x.T) * 1.75)
found = {}
def compile_(label, shape=(24, 24), dtype=jnp.float32, flags=None):
    os.environ["XLA_FLAGS"] = (base + " " + " ".join(flags or [])).strip()
    jax.clear_caches()  # what a new process starts with: no in-memory cache
    events.clear()
    program.lower(jax.ShapeDtypeStruct(shape, dtype)).compile()
    found[label] = events.count("/jax/compilation_cache/cache_hits") > 0
flag, other = "--xla_cpu_enable_fast_min_max=true", "--xla_cpu_multi_thread_eigen=false"
compile_("first", flags=[flag, other])
compile_("again", flags=[flag, other])
compile_("flags reordered", flags=[other, flag])
compile_("dump folder added", flags=[flag, other, "--xla_dump_to=" + sys.argv[1] + "-dumps"])
compile_("dump as text added", flags=[flag, other, "--xla_dump_hlo_as_text=true"])
compile_("device count added", flags=[flag, other, "--xla_force_host_platform_device_count=8"])
compile_("unlisted dump flag added", flags=[flag, other, "--xla_dump_large_constants=true"])
compile_("another shape", shape=(24, 25), flags=[flag, other])
compile_("another dtype", dtype=jnp.bfloat16, flags=[flag, other])
compile_("a flag removed", flags=[flag])
compile_("a flag written twice", flags=[flag, other, flag])
print(json.dumps(found))
"""


@pytest.mark.slow
def test_the_cache_key_rules_hold_on_this_jax(tmp_path):
    """What check_cache_hit expects, seen in a real process: XLA_FLAGS are read when the key is
    computed, so changing them between compiles (each after jax.clear_caches) shows the key."""
    proc = subprocess.run([sys.executable, "-c", KEY_RULES, str(tmp_path / "cache")], capture_output=True,
                          text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    flags = ["--xla_cpu_enable_fast_min_max=true", "--xla_cpu_multi_thread_eigen=false"]
    first = {"shape": [24, 24], "dtype": "float32", "argument_seed": 0, "xla_flags": flags,
             "jax_version": jax.__version__, "process": 1}
    seconds = {"again": {**first, "process": 2}, "flags reordered": {**first, "xla_flags": flags[::-1]},
               "dump folder added": {**first, "xla_flags": flags + [memory.DUMP_FLAG]},
               "dump as text added": {**first, "xla_flags": flags + ["--xla_dump_hlo_as_text=true"]},
               "device count added": {**first, "xla_flags": flags + ["--xla_force_host_platform_device_count=8"]},
               "unlisted dump flag added": {**first, "xla_flags": flags + [memory.KEPT_DUMP_FLAG]},
               "another shape": {**first, "shape": [24, 25]}, "another dtype": {**first, "dtype": "bfloat16"},
               "a flag removed": {**first, "xla_flags": flags[:1]},
               "a flag written twice": {**first, "xla_flags": flags + flags[:1]}}
    assert found["first"] is False
    for label, second in seconds.items():
        assert found[label] == memory.expected_hit(first, second), label
    assert found["dump as text added"] and found["device count added"] and not found["unlisted dump flag added"]
    assert not found["a flag written twice"]  # hashed twice: a set of flags would call it a hit


def test_the_lesson_counts_the_flags_left_out_of_the_key():
    """performance-09 says: in JAX 0.9 and 0.10 the list holds 24 names, 17 of them dump settings,
    the host device count flag, four TPU checker flags and two GPU ones."""
    names = memory.excluded_flags()
    if not jax.__version__.startswith(("0.9.", "0.10.")):
        pytest.skip(f"the lesson counts the list of jax 0.9 and 0.10, not {jax.__version__}")
    assert len(names) == 24
    assert sum(n.startswith("--xla_dump_") for n in names) == 17
    assert "--xla_force_host_platform_device_count" in names
    assert sum(n.startswith("--xla_tpu_") for n in names) == 4 and sum(n.startswith("--xla_gpu_") for n in names) == 2


def test_the_entry_size_default_means_no_limit_on_open_source_jax():
    """performance-09's table: the default 0 leaves the size to JAX's override for the cache's filesystem,
    which open-source JAX (0.9 and 0.10) answers with 0, no limit; -1 turns the limit off."""
    from jax._src import compilation_cache

    nb = read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")
    text = " ".join(" ".join(c.source for c in nb.cells if c.cell_type == "markdown").split())
    assert "open-source JAX's override returns 0, so there 0 means no limit" in text
    assert compilation_cache.default_min_cache_entry_size() == 0


def test_right_cache_hit_passes():
    for seed in range(5):
        memory.check_cache_hit(hit_right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong", [hit_flags_as_written, hit_flags_as_a_set, hit_values_matter, hit_version_ignored,
                                   hit_new_process_misses, hit_every_dump_flag_left_out, hit_only_dump_to_left_out])
def test_cache_hit_mistakes_are_caught(wrong):
    with pytest.raises(CheckFailed, match="cache key"):
        memory.check_cache_hit(wrong, np.random.default_rng(0))


# --- test_remat_policies ------------------------------------------------------------------------
# One correct answer on one seed stays in make check; the other seed and variant run in make test.
@pytest.mark.parametrize("right, seed", [(remat_right, 0), pytest.param(remat_right, 1, marks=pytest.mark.slow),
                                         *(pytest.param(remat_prevent_cse_off, seed, marks=pytest.mark.slow)
                                           for seed in range(2))])
def test_right_remat_passes(right, seed):
    memory.check_remat_policies(right, np.random.default_rng(seed))


@pytest.mark.parametrize("wrong, words", [
    (remat_whole_network, "policies ask"),
    (remat_policy_ignored, "policies ask"),
    (remat_none_checkpointed, "policies ask"),
    (remat_unrolled, "policies ask"),
    (remat_other_network, "not the gradient"),
])
def test_remat_mistakes_are_caught(wrong, words):
    with pytest.raises(CheckFailed, match=words):
        memory.check_remat_policies(wrong, np.random.default_rng(0))


def test_the_float64_gradient_is_the_gradient():
    rng = np.random.default_rng(0)
    weights = (rng.standard_normal((3, 5, 5)) / 3).astype(np.float32)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    with jax.default_matmul_precision("float32"):
        want = np.asarray(jax.grad(remat_right(None))(weights, x))
    assert np.allclose(memory.network_gradient(weights, x), want, rtol=1e-5, atol=1e-7)


# --- the notebook -------------------------------------------------------------------------------
POINTS = {"test_memory_breakdown": 3, "test_live_memory": 2, "test_donated_update": 2, "test_donation_evidence": 3,
          "test_transfer_sweep": 3, "test_transfer_fit": 2, "test_cache_settings": 2, "test_cache_invalidation": 2,
          "test_remat_policies": 2}


def notebook():
    return read_notebook(ROOT / "source" / LESSON / f"{LESSON}.ipynb")


def grade_cells():
    return {c.metadata["nbgrader"]["grade_id"]: c for c in notebook().cells
            if c.metadata.get("nbgrader", {}).get("grade")}


def test_grade_cells_and_points():
    assert {gid: c.metadata["nbgrader"]["points"] for gid, c in grade_cells().items()} == POINTS


def test_public_tests_need_no_course_code_and_hidden_tests_call_the_checks():
    for gid, cell in grade_cells().items():
        public, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        assert "perfcourse" not in public and "assert" in public
        assert "from perfcourse.checks import memory" in hidden and "memory.check_" in hidden


def test_task_headings_precede_every_solution_cell():
    headings = [c.source.split("## ")[1].split(":")[0] for c in notebook().cells
                if c.cell_type == "markdown" and "## Task " in c.source]
    assert headings == [f"Task {n}" for n in range(1, 10)]


def test_the_report_and_figure_cells_come_after_every_test():
    cells = notebook().cells
    last_grade = max(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade"))
    tagged = [i for i, c in enumerate(cells) if {"report", "figure"} & set(c.metadata.get("tags", []))]
    assert tagged and min(tagged) > last_grade
    assert sum("report" in c.metadata.get("tags", []) for c in cells) == 1


def test_the_timer_is_given_not_asked():
    cells = notebook().cells
    given = [c for c in cells if c.cell_type == "code" and "def time_call" in c.source]
    assert len(given) == 1 and not given[0].metadata.get("nbgrader", {}).get("solution")


# --- the artifact -------------------------------------------------------------------------------
def report():
    artifact = json.loads((ROOT / "artifacts" / "cpu" / f"{LESSON}.json").read_text())
    return artifact, json.loads(artifact["stdout"])


def test_the_report_shows_donation_the_cpu_statistics_and_the_cache():
    _, found = report()
    breakdowns = found["memory_breakdowns"]
    plain, donated = breakdowns["update, nothing donated"], breakdowns["update, params donated"]
    assert plain["alias_bytes"] == 0 and donated["alias_bytes"] == (256 * 256 + 256) * 4  # the params: w and b
    assert donated["total_bytes"] == plain["total_bytes"] - donated["alias_bytes"]
    assert found["backend"] == "cpu"
    for state in ("before", "holding_4_MiB", "after_delete"):
        live = found["live"][state]
        assert live["bytes_in_use"] is None and "None" in live["missing"]["bytes_in_use"]
    assert found["live"]["holding_4_MiB"]["bytes"] - found["live"]["before"]["bytes"] == 4 << 20
    runs = found["compilation_cache"]
    assert runs["first process"]["misses"] == 1 and runs["first process"]["new_files"]
    assert runs["second process"]["hits"] == 1 and not runs["second process"]["new_files"]
    assert runs["another shape"]["new_files"] and runs["another XLA flag"]["new_files"]
    assert found["device_get_shares_device_memory"] is True
    aligned = found["device_put_of_aligned_buffer"]
    assert aligned["shares_memory"] is True and aligned["sees_later_writes"] is True
    assert aligned["sweep_puts"] == 7 * 5 * 2  # 5 timed and 5 untimed puts per size


def test_the_report_shows_the_remat_trade():
    _, found = report()
    stats = {name: {"temp": r["temp_bytes"], "flops": r["flops"], "transcendentals": r["transcendentals"]}
             for name, r in found["remat"].items()}
    assert memory.policy_problems({"none": stats["no remat"], "dots_saveable": stats["dots_saveable"],
                                   "nothing_saveable": stats["nothing_saveable"]}) == []


def test_the_report_sweep_and_fit_agree():
    _, found = report()
    sweep = found["transfer_sweep"]
    assert [row["bytes"] for row in sweep] == [1024 * 4**k for k in range(7)]
    for kind in ("put", "get"):
        fixed, bandwidth = memory.least_squares([r["bytes"] for r in sweep], [r[f"{kind}_seconds"] for r in sweep])
        fit = found["transfer_fit"][kind]
        assert math.isclose(fit["bytes_per_second"], bandwidth, rel_tol=1e-6)
        assert math.isclose(fit["fixed_seconds"], fixed, rel_tol=1e-6, abs_tol=1e-12)


def test_the_artifact_draws_four_panels_and_a_flow():
    artifact, _ = report()
    memory_panel, sweep_panel, remat_panel, cache_panel = artifact["data"]["panels"]
    assert memory_panel["kind"] == "bar" and sweep_panel["yscale"] == "log"
    assert all(len(s) == 5 for s in sweep_panel["series"][0]["samples"])
    assert artifact["diagram"]["panel"]["kind"] == "flow"


def test_remat_statistics_are_left_out_elsewhere_than_on_the_cpu_and_said_so(monkeypatch, capsys):
    """Recorded on a TPU, the policies' compiled statistics (the CPU compiler's reading) are not
    judged: one line says so, and the gradients are still checked against NumPy."""
    import jax

    from perfcourse.checks import on_the_grading_backend

    assert on_the_grading_backend("x", "y") and capsys.readouterr().out == ""
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    assert not on_the_grading_backend("what the compiled gradients save", "why")
    assert capsys.readouterr().out == ("not checked on tpu: what the compiled gradients save (why); "
                                       "grading checks it on the CPU\n")


def test_an_update_carrying_a_donating_twins_lower_and_trace_is_refused():
    """adversarial/performance-09/donation-stapled-on.py: an update that donates nothing, carrying a
    donating twin's `lower` and `trace` (jax.jit copies them onto what it returns), passed as the twin."""
    def sgd(params, grads, lr):
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)
    donating, kept = jax.jit(sgd, donate_argnums=0), jax.jit(sgd)

    def update(params, grads, lr):
        return kept(params, grads, lr)
    update.lower, update.trace = donating.lower, donating.trace
    with pytest.raises(CheckFailed, match="carries a `lower` or `trace` of its own"):
        memory.check_donated_update(lambda: update)
    kept.lower = donating.lower  # on a jitted function too
    with pytest.raises(CheckFailed, match="carries a `lower` or `trace` of its own"):
        memory.check_donated_update(lambda: kept)
