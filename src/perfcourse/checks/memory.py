"""Grade performance-09 (memory and data movement): what a program allocates, what is live,
donation, transfers, the persistent compilation cache and remat policies.

Students write `memory_breakdown(compiled)`, `live_memory(arrays, device)`, `make_update()` (the
lesson's SGD update, jitted with its params donated), `donation_evidence(fn, args,
donate_argnums)`, `transfer_sweep(sizes, repeats, put, get, timer)`, `fit_transfer(nbytes,
seconds)`, `cache_settings(cache_dir)`, `cache_hit(first, second)` and `remat_loss(policy)`.

What this kernel believes, it observed or verified itself; inputs are picked at grading time and
messages never name them. Per cell:

- test_memory_breakdown (`check_memory_breakdown`), *values only*: this kernel calls
  `memory_breakdown` itself (over the channel) on stand-in compiled programs of this module
  (`LentProgram`, lent: their `memory_analysis()` answers from here), shuffled: the real
  statistics of a donating program compiled here at fresh shapes (every attribute XLA's
  CompiledMemoryStats has, host_* and generated code among them), fresh numbers, `None`,
  exceptions a backend raises, stats without `alias_size_in_bytes` or without
  `peak_memory_in_bytes`, and real zeros. Present fields must be the compiler's numbers,
  `total_bytes` argument + output + temp - alias, `peak_bytes` the compiler's peak (its own
  number, missing only when it is), missing ones `None` (never 0) and named in "missing" with a
  reason. Answering the scripts right is the task's own arithmetic.
- test_live_memory (`check_live_memory`), *values only*: called from here with fresh arrays
  (shapes and dtypes drawn here, sent by value, so they are the student's process's own JAX
  arrays) and stand-in devices (`LentDevice`) whose `memory_stats()` returns None (CPU), a GPU's
  or a TPU's statistics with fresh numbers, statistics without a key, or raises. The call is made
  by a probe (`memory.live_memory_beside`) that holds one to three more fresh arrays in that
  process while it runs, in every case, so `jax.live_arrays()` there never lists only the arrays
  given. The count and bytes must be those of the arrays given, the statistics the device's
  numbers or `None` with a reason.
- test_donated_update (`check_donated_update`), *verified*: `make_update()`'s function exported
  in the student's process for params and grads of fresh shapes (probe `memory.export_update`)
  and read here (`programs.program_from`): each params argument of the program carries XLA's
  donation mark (`tf.aliasing_output`, or `jax.buffer_donor` where JAX leaves the pairing to
  XLA), no grads argument nor the learning rate does, and the program, run here on fresh values,
  computes params - lr * grads. Before judging, this kernel exports its own donating update and
  reads it the same way (InstrumentMissing if this JAX marks donation otherwise). A forger must
  send a program that donates exactly the params and computes the update: the task. A donation
  JAX cannot use leaves no mark (it only warns, and deletes nothing), so `donate_argnums=(0, 1)`,
  whose grads have no output left to pair with, would read as the params' alone: a second export,
  with bfloat16 params (whose buffers no float32 result can take) and a scalar leaf, leaves the
  results to the grads and then the learning rate, and neither may carry a mark there.
- test_donation_evidence (`check_donation_evidence`), *observed*: this kernel calls
  `donation_evidence` itself on functions of this module built at grading time (`DonationCase`:
  products with fresh constants, a sum, a narrowing cast, a reshape, two outputs), lent: the
  student's process traces them through stand-ins, so each trace comes back here, and arrays of
  fresh shapes sent by value. What it returns (the compiled program's alias bytes, which
  arguments were deleted by one call, whether JAX warned that donated buffers were not usable)
  must equal what this kernel sees when it runs the same experiment itself (`reference_evidence`),
  and the function must have been traced. The cases include a donation XLA drops silently (a
  float32 argument and a bfloat16 result: no warning, nothing deleted, no alias) and one where
  only one of two donated arguments can be used, so neither "alias bytes > 0", "no warning" nor
  "every donated argument is deleted" stands in for the others.
- test_transfer_sweep (`check_transfer_sweep`), *observed*: `transfer_sweep` is called from here
  with this module's instruments as `put`, `get` and `timer` (lent). `put` records the bytes of
  each host array it is handed (NumPy; a jax.Array, on the device already, is refused) and
  returns a device array carrying a tag; `get` records which
  array it fetched; `timer` calls what it is handed and returns the seconds this kernel assigns
  to the transfers made inside (a fixed cost plus bytes over a bandwidth, all drawn here, with
  jitter and one stalled call per size and kind); a get of an array fetched before costs almost
  nothing, as JAX's cached host copy does. Every size must be timed `repeats` times each way on
  host arrays of that many bytes, each get on a fresh array whose put was waited for (`put`
  returns a `LentArray`, in flight until its `block_until_ready()` is called, here, by the
  timer, or by a get), one transfer per timer call, and the rows must hold the medians of exactly
  those times. No clock is read: the instruments' times are
  values this kernel picks.
- test_transfer_fit (`check_fit_transfer`), *values only*: fresh sweeps (sizes over several
  decades, a fixed cost and a bandwidth drawn here, noise, and one sweep whose largest transfer
  is slow); the fit must be the line seconds = fixed + bytes / bandwidth by least squares of the
  relative errors (weights 1 / seconds**2, NumPy's lstsq here), to 1e-6 relative: plain least
  squares, which the largest transfers decide, differs on every noisy sweep.
- test_cache_settings (`check_cache_settings`), *verified*: the settings `cache_settings` returns
  for a fresh folder made here (plain values only) are applied by two Python processes this
  kernel starts itself, one after the other, each compiling the same program (a shape and a
  constant drawn here, so no earlier entry can serve it). This kernel lists the folder before
  and after each: the first process must write an entry and report a cache miss (and no hit),
  the second must write nothing and report a hit (and no miss): it compiled nothing. The children
  run this module's own script with plain values, so their jax.monitoring events are observed
  here; files alone are not a cache (settings that only dump IR write the same files twice), and
  jax_compilation_cache_dir must name the folder given (or one inside it). Two processes cost
  about a second of this kernel's time.
- test_cache_invalidation (`check_cache_hit`), *values only*: pairs of compile descriptions
  drawn here (shapes, dtypes, argument values, XLA_FLAGS in another order or with a dump folder
  or a listed dump flag or the host device count flag added, an unlisted --xla_dump_ flag added,
  another flag, a flag written twice, another jax version, another process): every run draws each
  of these, and `cache_hit` must say whether the second
  finds the first's entry, by what JAX's cache key hashes (jax/_src/cache_key.py: the program,
  with its shapes and dtypes; jaxlib's version; the backend; XLA_FLAGS, sorted (a list, not a set:
  a flag written twice is hashed twice, so flags compared as a set fail), the flags named in
  this JAX's `xla_flags_to_exclude_from_cache_key` left out, by the name before "="; the compile
  options and devices). tests/test_performance_09.py
  confirms each rule on the pinned JAX with real processes.
- test_remat_policies (`check_remat_policies`), *verified*: for a network of a fresh depth,
  batch and width, `jax.grad` of `remat_loss(policy)` for no policy, dots_saveable and
  nothing_saveable is exported in the student's process (probe `memory.export_gradients`) and
  compiled and run here: each must compute the network's gradient on fresh values against
  float64 NumPy backpropagation (tolerance of the matrix-product precision measured here), and
  the three compiled programs' statistics must show what each policy saves and recomputes (per
  layer, as XLA counts a scan's body): a policy doubles the transcendentals (the tanh computed
  again), dots_saveable keeps the flops and nothing_saveable adds a third (the product computed
  again), and each policy keeps fewer temporary bytes than the one before (`policy_problems`;
  the margins, measured, are beside their constants).
  Checkpointing the whole network, ignoring the policy, or checkpointing where no policy is
  given each miss one of these.

What a forger would have to do: nothing a replaced probe sends is believed. The values-only cells
are the task's own arithmetic on inputs it sees only at grading time; the observed ones call the
student's function from here with instruments and functions of this module; the verified ones
compile and run the programs the student's process exported. Limit: in test_donation_evidence,
what the experiment found in the student's process (deleted arguments, a warning) comes back as
values; a function that predicted them from the traced program without running it (knowing
JAX's and XLA's pairing rules) would pass, and that prediction is the lesson's content anyway.
"""
from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

from . import CheckFailed, InstrumentMissing, numerics, on_the_grading_backend, programs, remote
from .student_calls import call_student, number

# --- shared -------------------------------------------------------------------------------------
def _plain(value, what: str):
    """A plain copy of what the student's function returned (values only)."""
    try:
        return remote.values_only(value)
    except CheckFailed:
        raise CheckFailed(f"{what} should return plain values (numbers, strings, lists and dicts)") from None


def _missing_problems(result: dict, expected: dict) -> list[str]:
    """`result` against `expected` (None where missing): numbers equal, None where missing, and
    result["missing"] naming exactly the missing keys, each with a reason."""
    problems = []
    for key, want in expected.items():
        if key not in result:
            problems.append(f"the result has no {key!r}")
            continue
        got = result[key]
        if want is None:
            if got is not None:
                problems.append(f"{key}: nothing was reported for it, but the result says {got!r} (a missing "
                                "number is None, never 0 or a guess)")
        elif got is None:
            problems.append(f"{key}: a number was reported{' (a zero)' if want == 0 else ''}, but the result "
                            "says None: keep the reported number as it is")
        elif number(got) is None or not math.isclose(float(got), float(want), rel_tol=1e-12, abs_tol=0):
            problems.append(f"{key}: {got!r} is not the number reported")
    missing = result.get("missing")
    absent = sorted(key for key, want in expected.items() if want is None)
    if not isinstance(missing, dict):
        problems.append(f"'missing' should be a dict naming each missing number with a reason, got "
                        f"{type(missing).__name__}")
    else:
        if sorted(map(str, missing)) != absent:
            problems.append(f"'missing' names {sorted(map(str, missing))}, the missing numbers are {absent}")
        empty = sorted(str(k) for k, reason in missing.items() if not isinstance(reason, str) or not reason.strip())
        if empty:
            problems.append(f"'missing' gives no reason for {empty}")
    return problems


def _shuffled(cases: list, rng: np.random.Generator) -> list:
    random.Random(int(rng.integers(2**31))).shuffle(cases)
    return cases


# --- test_memory_breakdown ----------------------------------------------------------------------
MEMORY_FIELDS = {"argument_bytes": "argument_size_in_bytes", "output_bytes": "output_size_in_bytes",
                 "temp_bytes": "temp_size_in_bytes", "alias_bytes": "alias_size_in_bytes"}
PEAK_FIELD = "peak_memory_in_bytes"  # what the program holds at one time, by the compiler's schedule
OTHER_FIELDS = ("generated_code_size_in_bytes", "host_argument_size_in_bytes", "host_output_size_in_bytes",
                "host_alias_size_in_bytes", "host_temp_size_in_bytes", "host_generated_code_size_in_bytes")


class LentStats:
    """What `memory_analysis()` returns: attributes only (an absent one raises AttributeError)."""

    def __init__(self, fields: dict):
        for name, value in fields.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        return "CompiledMemoryStats(...)"


class LentProgram:
    """A compiled program's `memory_analysis()`, answered as scripted here."""

    def __init__(self, answer):
        self._answer = answer  # ("returns", LentStats | None) or ("raises", exception)

    def memory_analysis(self):
        kind, value = self._answer
        if kind == "raises":
            raise value
        return value

    def __repr__(self) -> str:
        return "<Compiled>"


def expected_breakdown(fields: dict | None) -> dict:
    """The breakdown of stats with these attributes (None: no stats at all)."""
    found = {key: (None if fields is None else fields.get(attribute)) for key, attribute in MEMORY_FIELDS.items()}
    parts = [found[key] for key in MEMORY_FIELDS]
    found["total_bytes"] = (None if any(p is None for p in parts)
                            else found["argument_bytes"] + found["output_bytes"] + found["temp_bytes"]
                            - found["alias_bytes"])
    found["peak_bytes"] = None if fields is None else fields.get(PEAK_FIELD)
    return found


def real_memory_fields(rng: np.random.Generator) -> dict:
    """Every attribute of the CompiledMemoryStats of a donating program compiled here at fresh
    shapes: it has arguments, outputs, temporaries and an alias."""
    import jax
    import jax.numpy as jnp

    rows, width = int(rng.integers(8, 64)), int(rng.integers(8, 48))
    scale = float(rng.uniform(0.5, 2.0))

    def program(x, w):
        return x * scale, jnp.tanh(jnp.tanh(x @ w) @ w.T).sum(axis=0)

    compiled = jax.jit(program, donate_argnums=0).lower(
        jax.ShapeDtypeStruct((rows, width), jnp.float32), jax.ShapeDtypeStruct((width, width), jnp.float32)).compile()
    stats = compiled.memory_analysis()
    fields = {name: int(getattr(stats, name)) for name in (*MEMORY_FIELDS.values(), PEAK_FIELD, *OTHER_FIELDS)
              if isinstance(getattr(stats, name, None), int)}
    return fields


def breakdown_cases(rng: np.random.Generator) -> list[tuple[str, tuple, dict]]:
    """(what, answer of memory_analysis(), expected breakdown), fresh numbers each time."""
    def fresh(alias=True):
        numbers_ = {attribute: int(rng.integers(1, 10**7)) for attribute in MEMORY_FIELDS.values()}
        numbers_["alias_size_in_bytes"] = (int(rng.integers(1, numbers_["argument_size_in_bytes"] + 1))
                                           if alias else 0)
        numbers_[PEAK_FIELD] = int(rng.integers(1, sum(numbers_.values()) + 1))
        numbers_.update({name: int(rng.integers(0, 10**5)) for name in OTHER_FIELDS})
        return numbers_

    cases = []
    real = real_memory_fields(rng)
    cases.append(("the statistics of a donating program compiled at grading time",
                  ("returns", LentStats(real)), expected_breakdown(real)))
    numbers_ = fresh()
    cases.append(("fresh statistics with an alias", ("returns", LentStats(numbers_)), expected_breakdown(numbers_)))
    cases.append(("memory_analysis() returning None", ("returns", None), expected_breakdown(None)))
    import jax

    cases.append(("memory_analysis() raising an error of the backend",
                  ("raises", jax.errors.JaxRuntimeError("UNIMPLEMENTED: memory analysis is not supported")),
                  expected_breakdown(None)))
    cases.append(("memory_analysis() raising NotImplementedError",
                  ("raises", NotImplementedError("no memory analysis")), expected_breakdown(None)))
    numbers_ = fresh()
    del numbers_["alias_size_in_bytes"]
    cases.append(("statistics without alias_size_in_bytes", ("returns", LentStats(numbers_)),
                  expected_breakdown(numbers_)))
    numbers_ = fresh()
    del numbers_[PEAK_FIELD]
    cases.append(("statistics without peak_memory_in_bytes", ("returns", LentStats(numbers_)),
                  expected_breakdown(numbers_)))
    numbers_ = fresh(alias=False)
    numbers_["temp_size_in_bytes"] = 0
    cases.append(("a program with no temporaries and no alias (real zeros)", ("returns", LentStats(numbers_)),
                  expected_breakdown(numbers_)))
    return _shuffled(cases, rng)


def check_memory_breakdown(memory_breakdown, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for what, answer, expected in breakdown_cases(rng):
        result = call_student(f"memory_breakdown for a compiled program with {what}", memory_breakdown,
                              LentProgram(answer), advice="a backend may return None or raise; report the numbers "
                              "as missing")
        result = _plain(result, "memory_breakdown")
        if not isinstance(result, dict):
            raise CheckFailed(f"memory_breakdown should return a dict, got {type(result).__name__}")
        problems = _missing_problems(result, expected)
        if problems:
            raise CheckFailed(f"for a compiled program with {what}: " + "; ".join(problems))


# --- test_live_memory ---------------------------------------------------------------------------
STAT_KEYS = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
ARRAY_DTYPES = ("float32", "bfloat16", "int8", "float16", "int32")


class LentDevice:
    """A device whose `memory_stats()` answers as scripted here."""

    def __init__(self, platform: str, answer):
        self.platform = platform
        self.id = 0
        self._answer = answer

    def memory_stats(self):
        kind, value = self._answer
        if kind == "raises":
            raise value
        return None if value is None else dict(value)

    def __repr__(self) -> str:
        return f"{self.platform.upper()}Device(id=0)"


def fresh_arrays(rng: np.random.Generator, count: int) -> list:
    import jax.numpy as jnp

    arrays = []
    for _ in range(count):
        shape = tuple(int(d) for d in rng.integers(1, 40, int(rng.integers(1, 4))))
        dtype = str(rng.choice(ARRAY_DTYPES))
        arrays.append(jnp.asarray(rng.standard_normal(shape)).astype(dtype))
    return arrays


def device_cases(rng: np.random.Generator) -> list[tuple[str, LentDevice, dict]]:
    """(what, device, the statistics expected: None where missing)."""
    def stats(drop=()):
        limit = int(rng.integers(2**30, 2**36))
        peak = int(rng.integers(2**20, limit))
        found = {"bytes_in_use": int(rng.integers(0, peak)), "peak_bytes_in_use": peak, "bytes_limit": limit,
                 "num_allocs": int(rng.integers(1, 10**4)), "largest_alloc_size": int(rng.integers(1, peak)),
                 "bytes_reserved": 0}
        return {k: v for k, v in found.items() if k not in drop}

    nothing = dict.fromkeys(STAT_KEYS)
    cases = [("a CPU device (memory_stats() is None)", LentDevice("cpu", ("returns", None)), dict(nothing))]
    full = stats()
    cases.append(("a GPU device", LentDevice("gpu", ("returns", full)), {k: full[k] for k in STAT_KEYS}))
    partial = stats(drop=("peak_bytes_in_use",))
    cases.append(("a TPU device whose statistics have no peak_bytes_in_use", LentDevice("tpu", ("returns", partial)),
                  {**{k: partial.get(k) for k in STAT_KEYS}}))
    cases.append(("a device whose memory_stats() raises", LentDevice("cpu", ("raises", RuntimeError(
        "memory_stats is not supported on this device"))), dict(nothing)))
    idle = stats()
    idle["bytes_in_use"] = 0
    cases.append(("a GPU device with nothing allocated (a real zero)", LentDevice("gpu", ("returns", idle)),
                  {k: idle[k] for k in STAT_KEYS}))
    return _shuffled(cases, rng)


def check_live_memory(live_memory, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for what, device, stats in device_cases(rng):
        arrays = fresh_arrays(rng, int(rng.integers(0, 6)))
        # In the student's process the arrays sent would be its only ones, so jax.live_arrays()
        # would read the same: the probe holds 1 to 3 more beside them, in every case.
        beside = fresh_arrays(rng, int(rng.integers(1, 4)))
        result = call_student(f"live_memory for {what}", remote.probe, "memory.live_memory_beside", live_memory,
                              arrays + beside, len(arrays), device,
                              advice="a backend without statistics returns None or raises; report them as missing")
        result = _plain(result, "live_memory")
        if not isinstance(result, dict):
            raise CheckFailed(f"live_memory should return a dict, got {type(result).__name__}")
        problems = []
        count, size = len(arrays), sum(int(a.nbytes) for a in arrays)
        if number(result.get("arrays")) != count:
            problems.append("'arrays' is not the number of arrays given (count the list you are handed, "
                            "not jax.live_arrays() of the whole process)")
        if number(result.get("bytes")) != size:
            problems.append("'bytes' is not the total nbytes of the arrays given")
        problems += _missing_problems(result, stats)
        if problems:
            raise CheckFailed(f"for fresh arrays and {what}: " + "; ".join(problems))


# --- test_donated_update ------------------------------------------------------------------------
LEARNING_RATE_RANGE = (0.01, 0.5)
_DONATION_MARKS = ("tf.aliasing_output", "jax.buffer_donor = true")


def donated_arguments(mlir_text: str) -> list[bool] | None:
    """For each argument of the module's public main function, whether it carries a donation mark
    (`tf.aliasing_output = N`, or `jax.buffer_donor = true` where JAX leaves the pairing to XLA).
    None when the text holds no public main function."""
    import re

    for line in str(mlir_text).splitlines():
        start = line.find("func.func public @main(")
        if start < 0:
            continue
        signature = line[start:].split(") -> ", 1)[0]
        pieces = re.split(r"%arg\d+\s*:", signature)[1:]
        return [any(mark in piece for mark in _DONATION_MARKS) for piece in pieces]
    return None


def sgd(params, grads, lr):
    import jax

    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def donation_instrument() -> None:
    """This JAX marks a donated argument in an exported program the way `donated_arguments` reads."""
    import jax
    import jax.numpy as jnp

    tree = {"b": jax.ShapeDtypeStruct((3,), jnp.float32), "w": jax.ShapeDtypeStruct((2, 3), jnp.float32)}
    exported = jax.export.export(jax.jit(sgd, donate_argnums=0))(tree, tree, jax.ShapeDtypeStruct((), jnp.float32))
    # Where the params' buffers can take no result (bfloat16 params, float32 results), a donation of
    # the grads is used, and marked: what _asked_beyond_params reads.
    mixed = {"b": jax.ShapeDtypeStruct((), jnp.bfloat16), "w": jax.ShapeDtypeStruct((2, 3), jnp.bfloat16)}
    grads = {"b": jax.ShapeDtypeStruct((), jnp.float32), "w": tree["w"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the params' donation is not usable there: JAX warns
        both = jax.export.export(jax.jit(sgd, donate_argnums=(0, 1)))(mixed, grads,
                                                                      jax.ShapeDtypeStruct((), jnp.float32))
    if donated_arguments(exported.mlir_module()) != [True, True, False, False, False] or \
            donated_arguments(both.mlir_module())[2:] != [True, True, False]:
        raise InstrumentMissing("this JAX does not mark donated arguments of an exported program with "
                                "tf.aliasing_output or jax.buffer_donor: performance-09's donation cells "
                                "cannot be graded on it; update checks/memory.donated_arguments")


def check_donated_update(make_update, rng: np.random.Generator | None = None) -> None:
    import jax
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    donation_instrument()
    rows, columns = int(rng.integers(2, 24)), int(rng.integers(2, 24))
    shapes = {"b": [columns], "w": [rows, columns]}
    data = call_student("exporting make_update()'s function as one JAX program for the grader", remote.probe,
                        "memory.export_update", make_update, shapes,
                        advice="return a jitted function of (params, grads, lr)")
    specs = [(shapes["b"], "float32"), (shapes["w"], "float32")] * 2 + [([], "float32")]
    program = programs.program_from(data, specs, what="make_update()'s function")
    marks = donated_arguments(program.mlir_module())
    if marks is None or len(marks) != 5:
        raise CheckFailed("make_update()'s function came back as a program the grader cannot read")
    if not all(marks[:2]):
        raise CheckFailed("the compiled update does not donate the params: jit it with the params donated "
                          "(donate_argnums or donate_argnames), so XLA may write the new params into their buffers")
    if any(marks[2:]):
        raise CheckFailed("the compiled update donates the grads or the learning rate too: donate only what "
                          "the update replaces, the params (the caller may still need its grads)")
    params = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    grads = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    lr = np.float32(rng.uniform(*LEARNING_RATE_RANGE))
    try:
        got = jax.jit(program.call)({k: jnp.asarray(v) for k, v in params.items()},
                                    {k: jnp.asarray(v) for k, v in grads.items()}, jnp.asarray(lr))
        got = {name: np.asarray(got[name]) for name in shapes}
    except Exception:
        raise CheckFailed("make_update()'s function came back as a program the grader cannot run") from None
    for name in shapes:
        numerics.check_close(got[name], params[name].astype(np.float64) - float(lr) * grads[name].astype(np.float64),
                             "the update on fresh params and grads", precision=numerics.FLOAT32)
    if any(_asked_beyond_params(make_update, rows, columns)):
        raise CheckFailed("make_update()'s function asks XLA to donate the grads or the learning rate too: with "
                          "these shapes JAX drops the donation it cannot use, with others it writes into them. "
                          "Donate only what the update replaces, the params")


def _asked_beyond_params(make_update, rows: int, columns: int) -> list[bool]:
    """Whether the grads and the learning rate are donated, read where JAX could use them: params
    in bfloat16 (no float32 result can take their buffers), so the results (float32, a scalar
    among them) are left to the grads and then the learning rate, if they were donated."""
    shapes = {"b": [], "w": [rows, columns]}
    data = call_student("exporting make_update()'s function for bfloat16 params and float32 grads", remote.probe,
                        "memory.export_update", make_update, shapes, "bfloat16",
                        advice="jit the lesson's sgd as it is")
    specs = [([], "bfloat16"), ([rows, columns], "bfloat16"), ([], "float32"), ([rows, columns], "float32"),
             ([], "float32")]
    marks = donated_arguments(programs.program_from(data, specs, what="make_update()'s function").mlir_module())
    if marks is None or len(marks) != 5:
        raise CheckFailed("make_update()'s function came back as a program the grader cannot read")
    return marks[2:]


# --- test_donation_evidence ---------------------------------------------------------------------
WARNING_TEXT = "donated buffers were not usable"


class DonationCase:
    """A function of this module, lent to the student's process: its body uses Python operators
    and array methods only, so it runs as well on stand-ins for the student's tracers as on this
    kernel's own. Each call is recorded: whether it was traced (no concrete arrays)."""

    def __init__(self, kind: str, scale: float, shape: tuple):
        self._kind, self._scale, self._shape, self._calls = kind, scale, tuple(shape), []

    def __call__(self, *args):
        self._calls.append(all(_traced(a) for a in args))
        kind, scale = self._kind, self._scale
        x = args[0]
        if kind == "scale_add":
            return x * scale + args[1]
        if kind == "sum":
            return (x * scale).sum()
        if kind == "narrow":
            return (x * scale).astype("bfloat16")
        if kind == "reshape":
            return (x * scale).reshape(self._shape)
        if kind == "two_outputs":
            return x * scale, args[1] * scale
        raise ValueError(kind)

    def __repr__(self) -> str:
        return "<function>"


def _traced(value) -> bool:
    """Is `value` something JAX traces with (a tracer here, or a stand-in for the student's)?"""
    import jax

    return isinstance(value, (jax.core.Tracer, remote.Remote))


def donation_cases(rng: np.random.Generator) -> list[tuple[str, str, int, tuple]]:
    """(what, kind, number of arguments, donate_argnums): the three that tell the evidences apart,
    then two of the others."""
    always = [("a sum of the donated argument (no output to reuse it)", "sum", 1, (0,)),
              ("a float32 argument donated to a bfloat16 result", "narrow", 1, (0,)),
              ("two donated arguments and one output", "scale_add", 2, (0, 1))]
    others = [("one of two arguments donated", "scale_add", 2, (0,)),
              ("a reshape of the donated argument", "reshape", 1, (0,)),
              ("two outputs and nothing donated", "two_outputs", 2, ())]
    picked = [others[i] for i in rng.choice(len(others), 2, replace=False)]
    return _shuffled(always + picked, rng)


def reference_evidence(fn, args, donate_argnums) -> dict:
    """What the lesson's experiment shows here: the compiled program's alias bytes, which
    arguments one call deleted, and whether JAX warned that donated buffers were not usable."""
    import jax

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
    stats = compiled.memory_analysis()
    jax.block_until_ready(compiled(*args))
    return {"alias_bytes": None if stats is None else int(stats.alias_size_in_bytes),
            "deleted": [bool(a.is_deleted()) for a in args],
            "not_usable": any(WARNING_TEXT in str(w.message) for w in caught)}


def check_donation_evidence(donation_evidence, rng: np.random.Generator | None = None) -> None:
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    for what, kind, count, argnums in donation_cases(rng):
        rows, columns = int(rng.integers(3, 40)), int(rng.integers(3, 40))
        while rows == columns:
            columns = int(rng.integers(3, 40))
        scale = float(np.float32(rng.uniform(0.5, 2.0)))
        values = [rng.standard_normal((rows, columns)).astype(np.float32) for _ in range(count)]
        # The reshape case: other dimensions, the same number of elements.
        mine = DonationCase(kind, scale, (columns, rows))
        expected = reference_evidence(mine, [jnp.asarray(v) for v in values], argnums)
        lent = DonationCase(kind, scale, (columns, rows))
        result = call_student(f"donation_evidence for {what}", donation_evidence, lent,
                              tuple(jnp.asarray(v) for v in values), argnums)
        result = _plain(result, "donation_evidence")
        if not isinstance(result, dict):
            raise CheckFailed(f"donation_evidence should return a dict, got {type(result).__name__}")
        if not any(lent._calls):
            raise CheckFailed(f"donation_evidence never traced the function it was given ({what}): jit it, "
                              "with the donation asked for, and compile and call it")
        problems = []
        alias = result.get("alias_bytes")
        if number(alias) is None or int(alias) != expected["alias_bytes"]:
            problems.append("alias_bytes is not the compiled program's alias_size_in_bytes (memory_analysis())")
        deleted = result.get("deleted")
        if (not isinstance(deleted, (list, tuple)) or len(deleted) != count
                or not all(isinstance(d, (bool, np.bool_)) for d in deleted)):
            problems.append("deleted should list one bool per argument: is_deleted() after one call")
        elif [bool(d) for d in deleted] != expected["deleted"]:
            problems.append("deleted is not what is_deleted() says of the arguments after one call of the "
                            "compiled program on them")
        usable = result.get("not_usable")
        if not isinstance(usable, (bool, np.bool_)):
            problems.append("not_usable should be a bool")
        elif bool(usable) != expected["not_usable"]:
            problems.append("not_usable is not whether JAX warned 'Some donated buffers were not usable' while "
                            "it lowered the function (catch the warnings: it is a warning, not an error)")
        if problems:
            raise CheckFailed(f"for {what}: " + "; ".join(problems))


# --- test_transfer_sweep ------------------------------------------------------------------------
CACHED_SECONDS = 2e-6   # a get of an array whose host copy JAX already holds: no transfer


class TransferLog:
    """Every call of the lent `put` and `get`, and the seconds each timed one is given."""

    def __init__(self, rng: np.random.Generator, repeats: int):
        self._rng = rng
        self._repeats = repeats
        self._costs = {"put": (float(10 ** rng.uniform(-5, -3.5)), float(10 ** rng.uniform(8.5, 10))),
                       "get": (float(10 ** rng.uniform(-5, -3.5)), float(10 ** rng.uniform(8.5, 10)))}
        self._next_tag = int(rng.integers(1000, 100000))
        self._sizes = {}        # tag -> bytes of the host array put
        self._fetched = set()   # tags a get has fetched
        self._stalls = {}       # (kind, bytes) -> the index of the timed call that stalls, and how long
        self._counted = {}      # (kind, bytes) -> timed calls so far
        self._timing = None     # the transfers of the timer call in progress
        self.timed = []         # one entry per timer call: [(kind, bytes, seconds, note)]
        self.unknown_gets = 0

    def _seconds(self, kind: str, size: int, cached: bool) -> float:
        if cached:
            return CACHED_SECONDS
        fixed, bandwidth = self._costs[kind]
        key = (kind, size)
        index = self._counted.get(key, 0)
        self._counted[key] = index + 1
        if key not in self._stalls:
            self._stalls[key] = (int(self._rng.integers(0, self._repeats)), float(self._rng.uniform(4.0, 8.0)))
        stall_at, factor = self._stalls[key]
        seconds = (fixed + size / bandwidth) * float(self._rng.uniform(0.9, 1.1))
        return seconds * factor if index == stall_at else seconds

    def record(self, kind: str, size: int, cached: bool = False, note: str = "") -> None:
        if self._timing is not None:
            self._timing.append((kind, size, self._seconds(kind, size, cached), note))


class LentArray:
    """What the lent `put` returns: a device array of this kernel's, whose transfer is in flight
    until something waits for it (`block_until_ready`, as `jax.block_until_ready` calls it, or
    the timer, which waits for what it timed). A get of one still in flight would time the put."""

    def __init__(self, tag: int, shape: tuple):
        self._tag, self.shape, self.dtype, self._ready = tag, tuple(shape), "float32", False
        self.nbytes = 4 * int(np.prod(self.shape, dtype=np.int64))

    def block_until_ready(self):
        self._ready = True
        return self

    def __repr__(self) -> str:
        return f"Array(float32{list(self.shape)})"


class LentPut:
    """`put(host_array)`: records its bytes and returns a device array carrying a tag."""

    def __init__(self, log: TransferLog):
        self._log = log

    def __call__(self, host):
        if type(host).__name__ == "ArrayImpl":  # jnp's arrays are on the device already: a put copies nothing
            raise TypeError("put takes a host array (NumPy), not a jax.Array: one already on the device")
        if not isinstance(host, (np.ndarray, np.generic)):
            raise TypeError("put takes a host array (NumPy)")
        array = np.asarray(host)
        log = self._log
        tag = log._next_tag
        log._next_tag += 1
        log._sizes[tag] = int(array.nbytes)
        log.record("put", int(array.nbytes))
        return LentArray(tag, array.shape)

    def __repr__(self) -> str:
        return "<function device_put>"


class LentGet:
    """`get(device_array)`: records which array it fetched (a second fetch of one costs nothing),
    and whether its put had been waited for."""

    def __init__(self, log: TransferLog):
        self._log = log

    def __call__(self, device):
        log = self._log
        if not isinstance(device, LentArray) or device._tag not in log._sizes:
            log.unknown_gets += 1
            log.record("get", int(getattr(device, "nbytes", 0) or 0), note="unknown")
            return np.asarray(device) if not isinstance(device, LentArray) else np.zeros(device.shape, np.float32)
        tag = device._tag
        cached = tag in log._fetched
        log._fetched.add(tag)
        note = "cached" if cached else ("" if device._ready else "in flight")
        log.record("get", log._sizes[tag], cached=cached, note=note)
        device._ready = True  # a get waits for the array it fetches
        return np.full(device.shape, tag, np.float32)

    def __repr__(self) -> str:
        return "<function device_get>"


class LentTimer:
    """`timer(fn, *args)`: calls fn(*args), waits for its result as the course's timer does, and
    returns the seconds given to the transfers inside."""

    def __init__(self, log: TransferLog):
        self._log = log

    def __call__(self, fn, *args):
        log = self._log
        if log._timing is not None:
            raise RuntimeError("the timer was called inside another timer call")
        log._timing = []
        try:
            result = fn(*args)
            if isinstance(result, LentArray):
                result.block_until_ready()
        finally:
            inside, log._timing = log._timing, None
        log.timed.append(inside)
        return float(sum(seconds for _, _, seconds, _ in inside))

    def __repr__(self) -> str:
        return "<function time_call>"


def sweep_problems(rows, sizes: list[int], repeats: int, log: TransferLog) -> list[str]:
    if any(len(call) > 1 for call in log.timed):
        return ["a timer call made more than one transfer: time each put and each get on its own, one "
                "transfer per measurement"]
    transfers = [call[0] for call in log.timed if call]
    if len(transfers) < len(log.timed):
        return ["the timer was handed something that made no transfer: hand it put or get and their argument"]
    wrong = sorted({size for kind, size, _, _ in transfers if kind == "put" and size not in sizes})
    if wrong:
        return [f"a host array put held {wrong[0]} bytes, which is none of the sizes asked for: make each host "
                "array size // 4 float32 values, exactly size bytes"]
    if log.unknown_gets:
        return ["get was handed an array that put did not return: time get on a device array from put"]
    if any(note == "cached" for _, _, _, note in transfers):
        return ["get was timed on an array it had already fetched: JAX keeps the host copy of an array it "
                "fetched, so nothing moved; put a fresh device array before every timed get"]
    if any(note == "in flight" for _, _, _, note in transfers):
        return ["get was timed on a fresh device array whose put nobody waited for: put returns before the "
                "copy is done, so that get's time holds the rest of the put too; jax.block_until_ready the "
                "fresh array before timing get"]
    for size in sizes:
        for kind in ("put", "get"):
            count = sum(1 for k, s, _, _ in transfers if k == kind and s == size)
            if count != repeats:
                return [f"a size was timed {count} time(s) with {kind}, not repeats={repeats}: time exactly "
                        "`repeats` puts and `repeats` gets of each size, each with the timer given"]
    if not isinstance(rows, (list, tuple)) or len(rows) != len(sizes) or not all(isinstance(r, dict) for r in rows):
        return ["transfer_sweep should return one dict per size, in the order of the sizes"]
    for size, row in zip(sizes, rows):
        if number(row.get("bytes")) != size:
            return ["each row's 'bytes' should be its size, in the order given"]
        for kind in ("put", "get"):
            median = float(np.median([s for k, b, s, _ in transfers if k == kind and b == size]))
            got = number(row.get(f"{kind}_seconds"))
            if got is None or not math.isclose(got, median, rel_tol=1e-9, abs_tol=0):
                return [f"{kind}_seconds is not the median of the timed {kind}s of its size: report the median "
                        "(one stalled transfer must not move it; a mean or a minimum does not summarize the same way)"]
    return []


def check_transfer_sweep(transfer_sweep, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    # An even count: the median is then the mean of the two middle times, which a middle element is not.
    repeats = int(rng.choice((4, 6)))
    exponents = sorted(rng.choice(np.arange(6, 16), int(rng.integers(4, 6)), replace=False))
    sizes = [int(2 ** int(e)) + 4 * int(rng.integers(0, 8)) for e in exponents]
    log = TransferLog(rng, repeats)
    rows = call_student("transfer_sweep, handed other put, get and timer functions,", transfer_sweep, sizes,
                        repeats=repeats, put=LentPut(log), get=LentGet(log), timer=LentTimer(log),
                        advice="use the put, get and timer it is given")
    problems = sweep_problems(_plain(rows, "transfer_sweep"), sizes, repeats, log)
    if problems:
        raise CheckFailed(problems[0])


# --- test_transfer_fit --------------------------------------------------------------------------
def least_squares(nbytes, seconds) -> tuple[float, float]:
    """(fixed seconds, bytes per second) of the line seconds = fixed + bytes / bandwidth whose
    relative errors have the least sum of squares: each row and its time divided by that time."""
    x = np.asarray(nbytes, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    rows = np.stack([np.ones_like(x), x], axis=1) / y[:, None]
    (intercept, slope), *_ = np.linalg.lstsq(rows, np.ones_like(y), rcond=None)
    return float(intercept), float(1.0 / slope)


def fit_cases(rng: np.random.Generator) -> list[tuple[list, list]]:
    cases = []
    for noise in (0.0, 0.08, 0.15):
        low = float(rng.uniform(2, 4))
        count = int(rng.integers(7, 13))
        nbytes = np.unique((10 ** np.linspace(low, low + float(rng.uniform(3, 5)), count)).astype(np.int64) * 4)
        fixed = float(10 ** rng.uniform(-5.5, -3.5))
        bandwidth = float(10 ** rng.uniform(8.5, 11))
        seconds = (fixed + nbytes / bandwidth) * (1 + noise * rng.standard_normal(len(nbytes)))
        seconds = np.abs(seconds)
        cases.append(([int(b) for b in nbytes], [float(s) for s in seconds]))
    slow_end = np.array(cases[0][1]) * np.where(np.arange(len(cases[0][1])) == len(cases[0][1]) - 1,
                                                float(rng.uniform(1.2, 1.6)), 1.0)
    cases.append((cases[0][0], [float(s) for s in slow_end]))  # exact but for a slow largest transfer
    return _shuffled(cases, rng)


def check_fit_transfer(fit_transfer, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for nbytes, seconds in fit_cases(rng):
        fixed, bandwidth = least_squares(nbytes, seconds)
        result = call_student("fit_transfer on a fresh sweep", fit_transfer, list(nbytes), list(seconds))
        result = _plain(result, "fit_transfer")
        if not isinstance(result, dict):
            raise CheckFailed(f"fit_transfer should return a dict, got {type(result).__name__}")
        got_bandwidth, got_fixed = number(result.get("bytes_per_second")), number(result.get("fixed_seconds"))
        if got_bandwidth is None or not math.isclose(got_bandwidth, bandwidth, rel_tol=1e-6):
            raise CheckFailed("bytes_per_second is not 1 / slope of the least-squares line seconds = fixed + "
                              "bytes / bandwidth through every point of the sweep, each error relative to its "
                              "time (weights 1 / seconds**2; one line, fit in linear units)")
        scale = max(abs(fixed), 1e-3 * float(np.median(seconds)))
        if got_fixed is None or abs(got_fixed - fixed) > 1e-6 * scale:
            raise CheckFailed("fixed_seconds is not the intercept of the least-squares line seconds = fixed + "
                              "bytes / bandwidth of the relative errors (the cost of a transfer of zero bytes, "
                              "in seconds)")


# --- test_cache_settings ------------------------------------------------------------------------
CHILD_TIMEOUT = 120
# The program each child compiles: a shape and a constant drawn here make its cache key new.
CHILD = r"""
import json, sys
settings, size, scale = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
import jax
found = {"error": None, "hits": 0, "misses": 0}
try:
    for name, value in settings.items():
        jax.config.update(name, value)
except Exception as error:
    found["error"] = f"{type(error).__name__}: {error}"[:300]
    print(json.dumps(found))
    sys.exit(0)
events = []
jax.monitoring.register_event_listener(lambda event, **kwargs: events.append(event))
import jax.numpy as jnp
program = jax.jit(lambda x: jnp.tanh(x @ x.T) * scale + 1.0)
program.lower(jax.ShapeDtypeStruct((size, size), jnp.float32)).compile()
found["hits"] = events.count("/jax/compilation_cache/cache_hits")
found["misses"] = events.count("/jax/compilation_cache/cache_misses")
print(json.dumps(found))
"""


def _scalar(value) -> bool:
    return value is None or type(value) in (bool, int, float, str)


def run_child(settings: dict, size: int, scale: float) -> dict:
    """One fresh Python process that applies `settings` and compiles the program: what it says."""
    # On the CPU backend, as the lesson's children: where this kernel holds a TPU, no second process
    # may open it (libtpu's lockfile), and grading runs on the CPU anyway.
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(settings), str(size), repr(scale)],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"the process exited with status {proc.returncode}", "hits": 0, "misses": 0}
    return json.loads(lines[-1])


def _files(folder: str) -> set[str]:
    found = set()
    for base, _, names in os.walk(folder):
        found.update(os.path.relpath(os.path.join(base, name), folder) for name in names)
    return found


def _inside(path, folder: str) -> bool:
    """Is `path` the folder, or a folder inside it?"""
    if not isinstance(path, str) or not path:
        return False
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder + os.sep)


def _looked_up(found: dict, hit: bool) -> bool:
    """Did the child's compile consult the persistent cache and find its entry (`hit`) or not?
    The child is this kernel's own script, run with plain values: its events are observed here."""
    hits, misses = int(found.get("hits") or 0), int(found.get("misses") or 0)
    return (hits >= 1 and misses == 0) if hit else (misses >= 1 and hits == 0)


def check_cache_settings(cache_settings, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    folder = tempfile.mkdtemp(prefix="jax-cache-")
    try:
        settings = call_student("cache_settings", cache_settings, folder)
        settings = _plain(settings, "cache_settings")
        if (not isinstance(settings, dict) or not all(type(k) is str and k.startswith("jax_") for k in settings)
                or not all(_scalar(v) for v in settings.values())):
            raise CheckFailed("cache_settings should return a dict of jax config option names (jax_...) and plain "
                              "values (str, int, float, bool)")
        size, scale = int(rng.integers(17, 80)), float(np.float32(rng.uniform(0.5, 4.0)))
        first = run_child(settings, size, scale)
        if first.get("error"):
            raise CheckFailed(f"a fresh process could not apply these settings with jax.config.update "
                              f"({str(first['error'])[:160]})")
        written = _files(folder)
        if not written:
            raise CheckFailed("a fresh process with these settings compiled a small program and wrote nothing to "
                              "the folder it was given: point the cache at that folder, and lower the minimum "
                              "compile time (by default only programs that took a second or more are kept)")
        if not _inside(settings.get("jax_compilation_cache_dir"), folder) or not _looked_up(first, hit=False):
            raise CheckFailed("a fresh process with these settings never looked its program up in a persistent "
                              "compilation cache in the folder given (JAX reported no cache miss): files written "
                              "there are not a cache; set jax_compilation_cache_dir to that folder")
        second = run_child(settings, size, scale)
        again = _files(folder) - written
        if second.get("error") or again or not _looked_up(second, hit=True):
            raise CheckFailed("a second process with the same settings compiled the same program again instead "
                              "of reading the entry the first one wrote")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- test_cache_invalidation --------------------------------------------------------------------
FLAGS = ("--xla_cpu_enable_fast_min_max=true", "--xla_cpu_multi_thread_eigen=false",
         "--xla_backend_optimization_level=0")
DUMP_FLAG = "--xla_dump_to=/tmp/xla-dumps"
# Flags JAX 0.9 and 0.10 leave out of the key (other dump settings, performance-08's device count),
# and a real dump flag they keep in it: not every --xla_dump_ flag is left out.
LEFT_OUT = ("--xla_dump_hlo_as_text=true", "--xla_dump_hlo_pass_re=.*", "--xla_force_host_platform_device_count=8")
KEPT_DUMP_FLAG = "--xla_dump_large_constants=true"
VERSIONS = ("0.9.2", "0.10.2")


def excluded_flags() -> frozenset[str]:
    """The flag names this JAX's persistent cache key leaves out (jax/_src/cache_key.py)."""
    from jax._src import cache_key

    names = getattr(cache_key, "xla_flags_to_exclude_from_cache_key", None)
    if not names or DUMP_FLAG.split("=")[0] not in names or KEPT_DUMP_FLAG.split("=")[0] in names:
        raise InstrumentMissing("this JAX's cache key does not leave flags out as jax 0.9 and 0.10 do "
                                "(jax._src.cache_key.xla_flags_to_exclude_from_cache_key)")
    return frozenset(names)


def key_of(description: dict) -> tuple:
    """What JAX's persistent cache key hashes of a compile description."""
    left_out = excluded_flags()
    # Sorted, not a set: JAX hashes every flag it is given, so a flag written twice is hashed twice.
    flags = tuple(sorted(f for f in description["xla_flags"] if f.split("=")[0] not in left_out))
    return tuple(description["shape"]), description["dtype"], description["jax_version"], flags


def expected_hit(first: dict, second: dict) -> bool:
    return key_of(first) == key_of(second)


def invalidation_cases(rng: np.random.Generator) -> list[tuple[str, dict, dict]]:
    def base():
        n = int(rng.integers(8, 512))
        flags = [str(f) for f in rng.choice(FLAGS, int(rng.integers(1, 3)), replace=False)]
        return {"shape": [n, int(rng.integers(8, 512))], "dtype": str(rng.choice(["float32", "bfloat16"])),
                "argument_seed": int(rng.integers(0, 10**6)), "xla_flags": flags,
                "jax_version": VERSIONS[0], "process": int(rng.integers(1, 10**5))}

    def changed(first, **changes):
        return {**first, "process": first["process"] + 1, **changes}

    cases = []
    first = base()
    cases.append(("a new process, nothing else changed", first, changed(first)))
    first = base()
    cases.append(("other argument values", first, changed(first, argument_seed=first["argument_seed"] + 7)))
    first = base()
    cases.append(("the same XLA flags in another order", first, changed(first, xla_flags=first["xla_flags"][::-1])))
    first = base()
    cases.append(("a flag of XLA_FLAGS written twice", first,
                  changed(first, xla_flags=first["xla_flags"] + [first["xla_flags"][0]])))
    first = base()
    cases.append(("a dump folder added to XLA_FLAGS", first,
                  changed(first, xla_flags=first["xla_flags"] + [DUMP_FLAG])))
    first = base()
    listed = [f for f in LEFT_OUT if f.split("=")[0] in excluded_flags()]
    cases.append(("a flag JAX leaves out of the key added", first,
                  changed(first, xla_flags=first["xla_flags"] + [str(rng.choice(listed))])))
    first = base()
    cases.append(("a dump flag JAX keeps in the key added", first,
                  changed(first, xla_flags=first["xla_flags"] + [KEPT_DUMP_FLAG])))
    first = base()
    cases.append(("another shape", first, changed(first, shape=[first["shape"][0] + 1, first["shape"][1]])))
    first = base()
    cases.append(("another dtype", first,
                  changed(first, dtype="bfloat16" if first["dtype"] == "float32" else "float32")))
    first = base()
    extra = [f for f in FLAGS if f not in first["xla_flags"]][0]
    cases.append(("another XLA flag", first, changed(first, xla_flags=first["xla_flags"] + [extra])))
    first = base()
    cases.append(("another jax version", first, changed(first, jax_version=VERSIONS[1])))
    first = base()
    cases.append(("other argument values and another dtype", first,
                  changed(first, argument_seed=first["argument_seed"] + 1,
                          dtype="bfloat16" if first["dtype"] == "float32" else "float32")))
    first = base()
    cases.append(("a dump folder added and another flag removed", first,
                  changed(first, xla_flags=first["xla_flags"][1:] + [DUMP_FLAG]) if len(first["xla_flags"]) > 1
                  else changed(first, xla_flags=[DUMP_FLAG])))
    return _shuffled(cases, rng)


def check_cache_hit(cache_hit, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for what, first, second in invalidation_cases(rng):
        want = expected_hit(first, second)
        got = call_student(f"cache_hit for {what}", cache_hit, dict(first), dict(second))
        got = _plain(got, "cache_hit")
        if not isinstance(got, (bool, np.bool_)):
            raise CheckFailed(f"cache_hit should return a bool, got {type(got).__name__}")
        if bool(got) != want:
            raise CheckFailed(f"for {what}, cache_hit says {'a hit' if got else 'a miss'}, but JAX's cache key "
                              f"{'is the same' if want else 'changes'}: the key hashes the program (shapes and "
                              "dtypes, not argument values), jaxlib's version, the backend and XLA_FLAGS (sorted, "
                              "a flag written twice hashed twice, the flags JAX lists in "
                              "xla_flags_to_exclude_from_cache_key left out)")


# --- test_remat_policies ------------------------------------------------------------------------
POLICIES = ("none", "dots_saveable", "nothing_saveable")
# What the compiled gradient programs of the lesson's scanned network show, per layer (XLA counts a
# loop's body once), between no remat, dots_saveable and nothing_saveable. Measured on the CPU over
# 40 networks of the drawn sizes, at XLA's default and the graders' optimization level, with
# float32 and bfloat16 operands (tests/bf16_operands.py): temp bytes fell by at least 1.29x from no
# remat to dots_saveable and 1.40x from there to nothing_saveable; dots_saveable's flops were at
# most 1.02x no remat's, nothing_saveable's at least 1.31x; transcendentals exactly 1 : 2 : 2.
TEMP_STEP = 1.1          # each policy saves at least this factor of temporary bytes over the one before
DOTS_FLOPS_AT_MOST = 1.05
NOTHING_FLOPS_AT_LEAST = 1.2
# Relative error of one float32 matrix product, at most (checks/remat.py's reasoning): float32
# operands, TF32 operands (a recent NVIDIA GPU's default) or bfloat16 operands, float32 sums.
PER_PRODUCT_ERROR = {numerics.FLOAT32: 1e-6, numerics.TF32: 5e-4, numerics.BFLOAT16_PASSES: 4e-3}
POLICY_HINTS = {
    "none": "with policy None, take the network as it is, with no jax.checkpoint at all",
    "dots_saveable": "with dots_saveable, each layer (the scan's body) saves its product and recomputes only its "
                     "tanh: wrap the body in jax.checkpoint with the policy given",
    "nothing_saveable": "with nothing_saveable, each layer (the scan's body) saves only what it receives and "
                        "recomputes its product and tanh: wrap the body in jax.checkpoint with the policy given",
}


def network_gradient(weights, x) -> np.ndarray:
    """d/dweights of mean(h * h), h = tanh(h @ w) for each w of weights in turn from h = x, in float64."""
    weights = np.asarray(weights, np.float64)
    hs = [np.asarray(x, np.float64)]
    for w in weights:
        hs.append(np.tanh(hs[-1] @ w))
    dh = 2.0 * hs[-1] / hs[-1].size
    grads = np.zeros_like(weights)
    for i in range(len(weights) - 1, -1, -1):
        dz = dh * (1.0 - hs[i + 1] ** 2)
        grads[i] = hs[i].T @ dz
        dh = dz @ weights[i].T
    return grads


def _statistics(compiled) -> dict:
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    costs = costs or {}
    return {"temp": float(compiled.memory_analysis().temp_size_in_bytes), "flops": float(costs.get("flops", 0.0)),
            "transcendentals": float(costs.get("transcendentals", 0.0))}


def policy_problems(stats: dict) -> list[str]:
    """What the three programs' statistics say about the policies they were built with."""
    none, dots, nothing = (stats[name] for name in POLICIES)
    if none["transcendentals"] <= 0 or none["flops"] <= 0:
        return [POLICY_HINTS["none"]]
    if (dots["transcendentals"] != 2 * none["transcendentals"]
            or nothing["transcendentals"] != 2 * none["transcendentals"]):
        broken = "none" if dots["transcendentals"] == none["transcendentals"] else (
            "dots_saveable" if dots["transcendentals"] != 2 * none["transcendentals"] else "nothing_saveable")
        return [POLICY_HINTS[broken] + " (the tanh is computed again exactly when a policy is given)"]
    if not dots["flops"] <= DOTS_FLOPS_AT_MOST * none["flops"]:
        return [POLICY_HINTS["dots_saveable"] + " (its products are saved, not computed again)"]
    if not nothing["flops"] >= NOTHING_FLOPS_AT_LEAST * none["flops"]:
        return [POLICY_HINTS["nothing_saveable"] + " (its products are computed again)"]
    if not none["temp"] >= TEMP_STEP * dots["temp"]:
        return [POLICY_HINTS["dots_saveable"] + " (it keeps fewer temporary bytes than no remat)"]
    if not dots["temp"] >= TEMP_STEP * nothing["temp"]:
        return [POLICY_HINTS["nothing_saveable"] + " (it keeps fewer temporary bytes than dots_saveable)"]
    return []


def check_remat_policies(remat_loss, rng: np.random.Generator | None = None) -> None:
    import jax
    import jax.numpy as jnp

    rng = rng or np.random.default_rng()
    layers, batch, width = int(rng.integers(3, 8)), int(rng.integers(16, 49)), int(rng.integers(16, 41))
    specs = [([layers, width, width], "float32"), ([batch, width], "float32")]
    sent = call_student("exporting jax.grad of remat_loss(policy) as a JAX program for the grader", remote.probe,
                        "memory.export_gradients", remat_loss, list(POLICIES), layers, batch, width,
                        advice="return a jittable loss(weights, x) for each policy")
    if type(sent) is not dict or sorted(sent) != sorted(POLICIES):
        raise CheckFailed("the gradients of remat_loss did not come back as JAX programs the grader can examine")
    weights = (rng.standard_normal((layers, width, width)) / np.sqrt(width)).astype(np.float32)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    exact = network_gradient(weights, x)
    tolerance = 4 * (layers + 1) * PER_PRODUCT_ERROR[numerics.matmul_precision()]
    stats = {}
    for name in POLICIES:
        what = f"jax.grad of remat_loss({'None' if name == 'none' else 'jax.checkpoint_policies.' + name})"
        program = programs.program_from(sent[name], specs, what=what)
        if [(tuple(a.shape), str(a.dtype)) for a in program.out_avals] != [((layers, width, width), "float32")]:
            raise CheckFailed(f"{what} came back as a program with other results than the weights' gradient")
        try:
            compiled = jax.jit(program.call).lower(*[jax.ShapeDtypeStruct(a.shape, a.dtype)
                                                     for a in program.in_avals]).compile()
            got = np.asarray(compiled(jnp.asarray(weights), jnp.asarray(x)), dtype=np.float64)
        except Exception:
            raise CheckFailed(f"{what} came back as a program the grader cannot run") from None
        scale = float(np.max(np.abs(exact)))
        if not (np.all(np.isfinite(got)) and np.allclose(got, exact, rtol=tolerance, atol=tolerance * scale)):
            raise CheckFailed(f"{what} is not the gradient of the lesson's network on fresh weights and inputs: "
                              "keep the network (the scan of the given layer, then the mean of h * h) as it is")
        stats[name] = _statistics(compiled)
    if not on_the_grading_backend(
            "what the compiled gradients save and recompute",
            "read from the CPU compiler's estimates: a TPU v5e's (jax 0.10.2) reported 0 temporary bytes for every "
            "policy and 12288 transcendentals for dots_saveable against 8192 for nothing_saveable"):
        return
    problems = policy_problems(stats)
    if problems:
        raise CheckFailed("the compiled gradient programs do not save and recompute what the policies ask: "
                          + problems[0])
