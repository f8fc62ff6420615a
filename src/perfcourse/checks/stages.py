"""Grade reading a program's stages without running it: fresh shapes, watched workloads, stand-ins.

performance-03's students write `estimates_from(compiled)`, which turns a compiled program's
`cost_analysis()` and `memory_analysis()` into plain numbers and says which are missing,
`read_program(fn, *args)`, which traces, lowers and compiles `fn` for the shapes of `args`
without running it, and `matmul_flops(m, k, n)`, the hand count of a product.

Grade cells run in the trusted kernel; the student's definitions live in the student's kernel.
What only that process can build (a traced workload, a jaxpr, compiled programs, stand-in
compiled programs whose answers behave like a backend's) is built there by course probes
(`perfcourse.kernel.probes.stages`) for inputs picked here at grading time, and comes back as
plain data: shapes, type checks, numbers. The judging is all here. The checks never read
text that JAX prints, except to see that the StableHLO text names the product's tensor types.

- test_estimates_absent (`check_estimates_absent`): eight stand-in compiled programs, shuffled,
  scripted here with fresh numbers (a dict, a list of one dict as older JAX returns, `None`,
  exceptions a backend raises, absent keys and attributes, a `None` value, real zeros), are built
  in the student's process and handed to `estimates_from`. Present estimates must be the scripted
  numbers (a zero stays zero), missing ones `None` and named in "missing" with a reason.
  To forge it, a probe would have to return, for each script, exactly the numbers drawn here
  for it and `None` exactly where the script has none: reading the scripts correctly, which is
  the task.
- test_read_program_stages (`check_read_program_stages`): for three fresh (m, k, n), the student's
  `read_program` reads a watched product workload built in its process. The workload must have
  been traced with the arguments' shapes only; the jaxpr, Lowered and Compiled must be real
  stages for those shapes, the compiler's own flop estimate for the Compiled must be the hand
  count 2*m*k*n of this product (so it is the product's program), the StableHLO text must name
  the three tensor types, and "estimates" must be what the student's own `estimates_from` gives
  for that Compiled (a mistake in `estimates_from` itself costs only its own cell). A forger
  would have to report trace shapes, stage shapes and a flop count it can only know by tracing
  and compiling the product for shapes drawn here.
- test_read_program_not_run (`check_read_program_not_run`): the watched workload carries a debug
  callback that counts executions; `read_program` gets fresh arrays once and ShapeDtypeStructs
  (no data) once, must trace the workload and must leave the count at 0 after
  `jax.effects_barrier()`. A forger would have to report a trace and zero runs: it would have
  to read the program without running it.
- test_hand_count (`check_hand_count`): values only. `matmul_flops` for fresh shapes (every
  dimension 2..999) and for shapes with a dimension of 1, where XLA rewrites the product and its
  estimate is not the textbook count: the count must be 2*m*k*n, an int.

Fresh shapes for compiled products have every dimension in 2..96: XLA rewrites a product with a
dimension of 1, and it keeps estimates in single precision, so counts stay below 2**24.

Limit (README, "Known limits"): a probe replaced in the student's own kernel is handed the inputs
picked here and can answer the stages and not-run cells with data computed from them, without
running the student's code; the grader flags code that names the grading package.
"""
from __future__ import annotations

import math
import numbers
import random
from dataclasses import dataclass

import numpy as np

from . import CheckFailed, remote
from ..kernel.probes.stages import STAGE_KEYS, Watch, watched_matmul  # noqa: F401 (re-exported)

# The estimate fields a student's `estimates_from` returns, and where the compiler keeps each.
COST_KEYS = {"flops": "flops", "bytes_accessed": "bytes accessed"}
MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
}
ESTIMATE_FIELDS = (*COST_KEYS, *MEMORY_FIELDS)
LESSON_SHAPES = (64, 32, 16)  # the lesson's own (m, k, n): fresh shapes never equal them


def matmul_flops(m: int, k: int, n: int) -> int:
    """The hand count: m*n outputs, each k multiplies and k adds."""
    return 2 * m * k * n


def fresh_matmul_shapes(rng: np.random.Generator, low: int = 2, high: int = 97) -> tuple[int, int, int]:
    """Random (m, k, n), every dimension at least 2 (XLA rewrites products with a dimension of 1)."""
    while True:
        shapes = tuple(int(v) for v in rng.integers(low, high, 3))
        if shapes != LESSON_SHAPES:
            return shapes


def shapes(tree) -> list[tuple[int, ...]]:
    """The shapes of the leaves of a tree of abstract values (avals, ArgInfo, ShapeDtypeStruct)."""
    import jax
    return [tuple(leaf.shape) for leaf in jax.tree.leaves(tree)]


def matmul_inputs(rng: np.random.Generator, m: int, k: int, n: int, *, specs: bool = False):
    """Random float32 inputs of an (m, k) @ (k, n) product, or their ShapeDtypeStructs."""
    import jax
    import jax.numpy as jnp
    if specs:
        return jax.ShapeDtypeStruct((m, k), jnp.float32), jax.ShapeDtypeStruct((k, n), jnp.float32)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return jnp.asarray(a), jnp.asarray(b)


def _number(value) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def backend_estimates(compiled) -> dict:
    """The compiler's own numbers for `compiled`, normalized the way the lesson teaches."""
    try:
        costs = compiled.cost_analysis()
    except Exception:
        costs = None
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else None
    costs = costs if isinstance(costs, dict) else {}
    try:
        memory = compiled.memory_analysis()
    except Exception:
        memory = None
    found = {name: _number(costs.get(key)) for name, key in COST_KEYS.items()}
    found.update({name: _number(getattr(memory, attr, None)) for name, attr in MEMORY_FIELDS.items()})
    return found


# --- test_estimates_absent ----------------------------------------------------------------------
@dataclass
class StandInCase:
    name: str
    script: dict    # {"cost": answer, "memory": answer}; answer = {"returns": value} or {"raises": [kind, text]}
    expected: dict  # field -> number, or None where the estimate is missing


def stand_in_cases(rng: np.random.Generator) -> list[StandInCase]:
    """Scripted compiled programs with fresh numbers: complete, another shape, partial, absent, failing, zero."""
    def cost_numbers():
        return {"flops": float(rng.integers(100, 10**7)), "bytes_accessed": float(rng.integers(100, 10**6))}

    def memory_numbers():
        return {name: int(rng.integers(1, 10**6)) for name in MEMORY_FIELDS}

    def cost_dict(numbers_, drop=()):
        extra = {"transcendentals": float(rng.integers(0, 1000)), "utilization0{}": 1.0,
                 "bytes accessed0{}": float(rng.integers(0, 1000))}
        return {**extra, **{COST_KEYS[k]: v for k, v in numbers_.items() if k not in drop}}

    def memory_stats(numbers_, drop=()):
        # The attributes a CompiledMemoryStats has, a zero among them as on the CPU backend.
        return {**{MEMORY_FIELDS[k]: v for k, v in numbers_.items() if k not in drop},
                "alias_size_in_bytes": 0, "generated_code_size_in_bytes": 0}

    def returns(value):
        return {"returns": value}

    def raises(kind, text):
        return {"raises": [kind, text]}

    nothing = dict.fromkeys(ESTIMATE_FIELDS)
    cases = []

    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a dict and complete memory stats",
                             {"cost": returns(cost_dict(c)), "memory": returns(memory_stats(m))}, {**c, **m}))
    c, m = cost_numbers(), memory_numbers()
    cases.append(StandInCase("a list holding one dict (older JAX)",
                             {"cost": returns([cost_dict(c)]), "memory": returns(memory_stats(m))}, {**c, **m}))
    cases.append(StandInCase("None from both", {"cost": returns(None), "memory": returns(None)}, dict(nothing)))
    cases.append(StandInCase("exceptions from both",
                             {"cost": raises("NotImplementedError", "cost analysis is not available"),
                              "memory": raises("JaxRuntimeError", "UNIMPLEMENTED: memory analysis")},
                             dict(nothing)))
    m = memory_numbers()
    cases.append(StandInCase("an empty list and memory stats without temp_size_in_bytes",
                             {"cost": returns([]), "memory": returns(memory_stats(m, drop=("temp_bytes",)))},
                             {**nothing, **m, "temp_bytes": None}))
    c = cost_numbers()
    cases.append(StandInCase("a dict without 'bytes accessed', memory None",
                             {"cost": returns(cost_dict(c, drop=("bytes_accessed",))), "memory": returns(None)},
                             {**nothing, "flops": c["flops"]}))
    c = cost_numbers()
    cases.append(StandInCase("a dict holding None for 'flops'",
                             {"cost": returns({**cost_dict(c), "flops": None}),
                              "memory": raises("RuntimeError", "memory analysis failed")},
                             {**nothing, "bytes_accessed": c["bytes_accessed"]}))
    c, m = cost_numbers(), memory_numbers()
    c["flops"], m["temp_bytes"] = 0.0, 0
    cases.append(StandInCase("a program with no arithmetic and no temporaries (real zero estimates)",
                             {"cost": returns(cost_dict(c)), "memory": returns(memory_stats(m))}, {**c, **m}))
    return cases


def estimate_problems(estimates, expected: dict) -> list[str]:
    """How a student's estimates differ from what the compiler said: empty when they agree.

    Present estimates must be the compiler's numbers (not rounded, not replaced; a zero stays
    zero); missing ones must be None (never 0), and `estimates["missing"]` must name exactly the
    missing ones, each with a non-empty reason.
    """
    if not isinstance(estimates, dict):
        return [f"expected a dict of estimates, got {type(estimates).__name__}"]
    problems = []
    for name, want in expected.items():
        if name not in estimates:
            problems.append(f"no {name!r} field")
            continue
        got = estimates[name]
        if want is None:
            if got is not None:
                problems.append(f"{name}: the compiler gave no estimate, but the result says {got!r}")
        elif got is None:
            problems.append(f"{name}: the compiler gave an estimate{' (a zero)' if want == 0 else ''}, "
                            "but the result says None: keep the compiler's number as it is")
        elif _number(got) is None or not math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=0):
            problems.append(f"{name}: the result {got!r} is not the compiler's estimate")
    missing = estimates.get("missing")
    absent = sorted(name for name, want in expected.items() if want is None)
    if not isinstance(missing, dict):
        problems.append(f"'missing' should be a dict naming each missing estimate, got {type(missing).__name__}")
    else:
        if sorted(missing) != absent:
            problems.append(f"'missing' names {sorted(missing)}, the missing estimates are {absent}")
        empty = [k for k, reason in missing.items() if not isinstance(reason, str) or not reason.strip()]
        if empty:
            problems.append(f"'missing' gives no reason for {empty}")
    return problems


def check_estimates_absent(estimates_from, rng: np.random.Generator | None = None) -> None:
    """The student's estimates_from on every stand-in compiled program, built in its own process."""
    rng = rng or np.random.default_rng()
    cases = stand_in_cases(rng)
    random.Random(int(rng.integers(2**31))).shuffle(cases)
    answers = remote.probe("stages.estimates_of_stand_ins", estimates_from, [case.script for case in cases])
    assert isinstance(answers, list) and len(answers) == len(cases), "the stand-in compiled programs got no answers"
    for case, answer in zip(cases, answers):
        if not isinstance(answer, dict) or ("returned" not in answer and "raised" not in answer):
            raise CheckFailed(f"estimates_from gave no answer for a compiled program with {case.name}")
        if "raised" in answer:
            raise CheckFailed(f"estimates_from crashed on a compiled program with {case.name}: {answer['raised']}")
        problems = estimate_problems(answer["returned"], case.expected)
        assert not problems, f"a compiled program with {case.name}: {'; '.join(problems)}"


# --- test_read_program_stages, test_read_program_not_run --------------------------------------
def _plain_shapes(value) -> list | None:
    """[[d, ...], ...] as a list of tuples, or None when it is not that."""
    try:
        return [tuple(int(d) for d in shape) for shape in value]
    except (TypeError, ValueError):
        return None


def trace_problems(report: dict, m: int, k: int, n: int) -> list[str]:
    traced = [_plain_shapes(call) for call in (report.get("traced_shapes") or [])]
    if not traced:
        return ["read_program never traced the workload: trace fn for the shapes of args"]
    wrong = [call for call in traced if call != [(m, k), (k, n)]]
    if wrong:
        return [f"read_program traced the workload with shapes {wrong[0]}, not the shapes of the arguments "
                "it was given: trace for the shapes and dtypes of args"]
    return []


def stage_problems(report, m: int, k: int, n: int) -> list[str]:
    """How `read_program(fn, a, b)` for an (m, k) @ (k, n) product departs from the contract.

    `report` is what the probe `stages.read_matmul` described, as plain data.
    """
    if not isinstance(report, dict):
        return ["the workload's program could not be read"]
    if "raised" in report:
        return [f"read_program raised {report['raised']}"]
    problems = trace_problems(report, m, k, n)
    result = report.get("result")
    if not isinstance(result, dict) or result.get("type") != "dict":
        return problems + [f"read_program should return a dict, got {(result or {}).get('type', '?')}"]
    absent = [key for key in STAGE_KEYS if key not in (result.get("keys") or [])]
    if absent:
        return problems + [f"the result has no {absent} key(s)"]
    ins, out = [(m, k), (k, n)], [(m, n)]

    jaxpr = result.get("jaxpr") or {}
    j_in, j_out = _plain_shapes(jaxpr.get("in") or ()), _plain_shapes(jaxpr.get("out") or ())
    if jaxpr.get("in") is None or jaxpr.get("out") is None:
        problems.append(f"'jaxpr' should be a jaxpr (jax.make_jaxpr or Traced.jaxpr), got {jaxpr.get('type')}")
    elif j_in != ins or j_out != out:
        problems.append(f"the jaxpr takes {j_in} and gives {j_out}: it is not the program for the arguments' shapes")

    lowered = result.get("lowered") or {}
    if not lowered.get("is_lowered"):
        problems.append(f"'lowered' should be a jax.stages.Lowered, got {lowered.get('type')}")
    elif _plain_shapes(lowered.get("in") or ()) != ins:
        problems.append(f"'lowered' was lowered for {_plain_shapes(lowered.get('in') or ())}, "
                        "not for the arguments' shapes")

    compiled = result.get("compiled") or {}
    if not compiled.get("is_compiled"):
        problems.append(f"'compiled' should be a jax.stages.Compiled, got {compiled.get('type')}")
    else:
        c_in, c_out = _plain_shapes(compiled.get("in") or ()), _plain_shapes(compiled.get("out") or ())
        if c_in != ins or c_out != out:
            problems.append(f"'compiled' was compiled for {c_in} -> {c_out}, not for the arguments' shapes")
        flops = _number((compiled.get("compiler") or {}).get("flops"))
        hand = matmul_flops(m, k, n)
        if flops is not None and flops not in (hand, float(np.float32(hand))):
            problems.append(f"the compiler estimates {flops:g} flops for 'compiled', not the 2*m*k*n of the "
                            "workload's product: compile the workload itself")
        again = result.get("estimates_of_compiled") or {}
        if "returned" in again and not _same(result.get("estimates"), again["returned"]):
            problems.append("'estimates' is not estimates_from(compiled) of the returned compiled program")

    stablehlo = result.get("stablehlo") or {}
    if stablehlo.get("type") != "str" or not stablehlo.get("length"):
        problems.append("'stablehlo' should be the lowered program's text (Lowered.as_text())")
    elif not all(stablehlo.get("mentions") or [False]):
        problems.append("'stablehlo' does not name the workload's tensor types: "
                        "it should be the text of this lowered program")
    return problems


def _same(a, b) -> bool:
    """Plain data equal, dicts and lists compared item by item."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(map(repr, a)) == sorted(map(repr, b)) and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b) and type(a) is type(b) or (_number(a) is not None and _number(a) == _number(b))
    except Exception:
        return False


def read_matmul(read_program, estimates_from, m: int, k: int, n: int, rng: np.random.Generator,
                *, specs: bool, count_runs: bool):
    """The probe's description of read_program on a watched product, for inputs picked here."""
    arrays = None
    if not specs:
        arrays = (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))
    return remote.probe("stages.read_matmul", read_program, estimates_from, m, k, n,
                        arrays=arrays, count_runs=count_runs)


def check_read_program_stages(read_program, estimates_from, rounds: int = 3,
                              rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for _ in range(rounds):
        m, k, n = fresh_matmul_shapes(rng)
        report = read_matmul(read_program, estimates_from, m, k, n, rng, specs=False, count_runs=False)
        problems = stage_problems(report, m, k, n)
        assert not problems, "; ".join(problems)


def not_run_problems(report, specs: bool) -> list[str]:
    given = "ShapeDtypeStructs (no data)" if specs else "arrays"
    if not isinstance(report, dict):
        return ["the workload's program could not be read"]
    if "raised" in report:
        return [f"read_program, given {given}, raised {report['raised']}"
                + (": read the program from shapes and dtypes alone" if specs else "")]
    if not report.get("traced_shapes"):
        return [f"read_program, given {given}, never traced the workload"]
    runs = report.get("executions")
    if not isinstance(runs, int) or isinstance(runs, bool) or runs != 0:
        return [f"read_program, given {given}, executed the workload {runs} time(s): "
                "read the program, do not run it"]
    return []


def check_read_program_not_run(read_program, estimates_from, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for specs in (False, True):
        m, k, n = fresh_matmul_shapes(rng)
        report = read_matmul(read_program, estimates_from, m, k, n, rng, specs=specs, count_runs=True)
        problems = not_run_problems(report, specs)
        if problems:
            raise CheckFailed(problems[0])


# --- test_hand_count --------------------------------------------------------------------------
def check_hand_count(matmul_flops_, rng: np.random.Generator | None = None) -> None:
    """The hand count for fresh shapes, and where XLA rewrites the product: values only."""
    rng = rng or np.random.default_rng()
    cases = [(fresh_matmul_shapes(rng, low=2, high=1000), "fresh shapes") for _ in range(3)]
    m, k, n = fresh_matmul_shapes(rng)
    cases += [((m, 1, n), "k = 1"), ((1, k, 1), "m = n = 1")]
    for (m, k, n), what in cases:
        count = matmul_flops_(m, k, n)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise CheckFailed(f"matmul_flops should return an int, got {type(count).__name__}")
        assert count == 2 * m * k * n, (
            f"matmul_flops is not 2*m*k*n for a product with {what}"
            + (": count the product you wrote, not the program XLA built from it" if "1" in what else ""))
