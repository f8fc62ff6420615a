"""Grade performance-07 (how far from the roofline): the arithmetic, judged on numbers picked here.

Students write `roofline_point(costs, seconds)` (the compiler's FLOP and bytes and a time, turned
into intensity and achieved rates), `classify(point, peak_flop_per_second, peak_bytes_per_second)`
(the roof above a point, the fraction of it reached, which ceiling binds), `roof_verdict(point,
peak_flop_per_second, peak_bytes_per_second)` (the fraction of the roof at the median, the time
a call at the roof takes, the samples' middle half, and whether it lies below the roof, above it
or across it: performance-01's middle halves) and
`matmul_intensity(m, k, n, itemsize)` (a product's textbook intensity). The timer is given: the
lesson's locked copy of performance-01's `time_completed`, graded there (`checks.timing`).

Every check here is values in, values out: the trusted kernel picks the inputs at grading time,
the student's function runs in the student's kernel (reached through `checks.remote` stand-ins),
and what comes back is plain data judged here. No probe is needed: nothing in these tasks is
something only the student's process can build. No check reads a clock or compares a duration.

- test_roofline_point (`check_roofline_point`): cost-analysis dicts with fresh counts (with the
  backend's other keys beside them, as a dict and as a list of one dict as older JAX returns) and
  fresh times; the point must hold the counts and the time unchanged and the intensity and both
  rates in base units (FLOP/byte, FLOP/s, byte/s), to 1e-9 relative. A dict without "flops" or
  without "bytes accessed" (absent, or None) must be refused with ValueError, as the lesson asks
  (a KeyError or TypeError met on the way fails the cell), never turned into
  a number; a count of zero (present) is a count, and makes a point at intensity 0.
  A forger would have to return flops/bytes, flops/seconds and bytes/seconds of numbers
  it sees only at grading time: doing the arithmetic.
- test_classify (`check_classify`): fresh ceilings (ridge points from 0.5 to 500 FLOP/byte) and
  points at intensities on both sides of the ridge (never on it; one in four above its roof, so a
  fraction capped at 1 fails), and, where the notebook has
  measured its own ceilings before this cell (`ceilings`, read from the student's kernel as
  numbers), points placed against them too. The lesson measures them after its last check (a
  bandwidth sweep up to 64 MiB arrays, which grading, stopping at the last check, does not run), so
  a graded notebook is judged on fresh ceilings. The ridge, the attainable
  rate min(peak, intensity x bandwidth), the fraction reached and the bound must agree with the
  ones computed here. A hard-coded ridge, a max instead of a min, or a fraction of the flat peak
  fails. A forger would have to compute the roof for ceilings it sees only at grading time.
- test_roof_verdict (`check_roof_verdict`): fresh ceilings and points as the lesson's `measure`
  returns them (fresh counts, one warm sample per fraction of the roof drawn here, shuffled, 5 to
  10 samples, the median time as the point's seconds), memory- and compute-bound, each verdict, one
  fast or slow call on the other side of the roof from the middle half (so a verdict read from the
  fastest and slowest sample fails), and middle halves across the roof with their median below it
  and above it (so a verdict read from the median alone fails); no end of a middle half within 3%
  of the roof's time. The attainable rate, the median fraction, the roof's time (FLOP over the
  attainable rate) and the samples' middle half to 1e-9 relative, and performance-01's verdict
  (`halves.compare`, the roof's time a single timing), exactly, must agree with the ones computed
  here. A forger would have to compute them for samples it sees only at grading time.
- test_hand_intensity (`check_matmul_intensity`): fresh (m, k, n) and item sizes 1, 2, 4 and 8;
  the value must be 2mkn / ((mk + kn + mn) x itemsize), to 1e-9 relative.
"""
from __future__ import annotations

import math

import numpy as np

from . import CheckFailed, halves
from .student_calls import call_student, number

RTOL = 1e-9  # the arithmetic is exact up to float64 rounding: no backend precision enters it


def _close(got, want: float) -> bool:
    got = number(got)
    return got is not None and math.isclose(got, want, rel_tol=RTOL, abs_tol=0.0)


def _close_all(got, want: list) -> bool:
    try:
        got = list(got)
    except TypeError:
        return False
    return len(got) == len(want) and all(_close(g, w) for g, w in zip(got, want))


# --- test_roofline_point ----------------------------------------------------------------------
def expected_point(flops: float, moved: float, seconds: float) -> dict:
    return {"flops": flops, "bytes": moved, "seconds": seconds, "intensity": flops / moved,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}


UNIT_HINTS = {
    "intensity": "intensity is flops / bytes accessed, in FLOP per byte",
    "flop_per_second": "the achieved rate is flops / seconds, in FLOP/s (not GFLOP/s)",
    "bytes_per_second": "the bandwidth reached is bytes accessed / seconds, in byte/s (not GB/s)",
    "seconds": "keep the time you were given, in seconds",
    "flops": "keep the compiler's 'flops' count as it is",
    "bytes": "keep the compiler's 'bytes accessed' count as it is",
}


def key_problems(got, want: dict, hints: dict, what: str, close=None) -> list[str]:
    """`got` against `want`, key by key: a missing key, or a number not within RTOL of the one
    computed here (or, with `close(key, got, want)`, not close by that rule; or a string not equal
    to it; or, where `want` holds a list, a sequence of as many numbers, each within RTOL: a middle
    half), each named with its hint."""
    problems = []
    for key, expected in want.items():
        if key not in got:
            problems.append(f"the result has no {key!r} ({what})")
        elif isinstance(expected, str):
            # A plain string, compared here: a stand-in for the student's object would answer `!=` itself.
            if type(got[key]) is not str or got[key] != expected:
                problems.append(f"{key} is {got[key]!r}, not {expected!r} ({what}): {hints[key]}")
        elif isinstance(expected, list):
            if not _close_all(got[key], expected):
                problems.append(f"{key} is not right ({what}): {hints[key]}")
        elif not (close(key, got[key], expected) if close else _close(got[key], expected)):
            problems.append(f"{key} is not right ({what}): {hints[key]}")
    return problems


def point_problems(point, flops: float, moved: float, seconds: float, what: str) -> list[str]:
    if not isinstance(point, dict):
        return [f"roofline_point should return a dict, got {type(point).__name__} ({what})"]
    return key_problems(point, expected_point(flops, moved, seconds), UNIT_HINTS, what)


def cost_cases(rng: np.random.Generator) -> list[tuple[str, object, float, float, float]]:
    """(what, costs as cost_analysis() gives them, flops, bytes, seconds) with fresh numbers."""
    cases = []
    for form in ("a dict", "a list holding one dict (older JAX)", "a dict"):
        flops = float(rng.integers(10**3, 10**12))
        moved = float(rng.integers(10**3, 10**10))
        seconds = float(10 ** rng.uniform(-5, 0))
        costs = {"flops": flops, "bytes accessed": moved, "transcendentals": float(rng.integers(0, 1000)),
                 "bytes accessed0{}": float(rng.integers(0, 10**6)), "utilization0{}": 1.0,
                 "optimal_seconds": float(rng.uniform(0, 1))}
        cases.append((f"counts in {form}", [costs] if "list" in form else costs, flops, moved, seconds))
    # A count of zero is a count, not a missing one: the point is made, at intensity 0.
    moved = float(rng.integers(10**3, 10**10))
    cases.append(("a program counted with zero FLOP", {"flops": 0.0, "bytes accessed": moved}, 0.0, moved,
                  float(10 ** rng.uniform(-5, 0))))
    return cases


def check_roofline_point(roofline_point, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for what, costs, flops, moved, seconds in cost_cases(rng):
        point = call_student(f"roofline_point for {what}", roofline_point, costs, seconds)
        problems = point_problems(point, flops, moved, seconds, what)
        if problems:
            raise CheckFailed("; ".join(problems))
    for missing, costs in (("'bytes accessed'", {"flops": float(rng.integers(10**3, 10**9)), "transcendentals": 0.0}),
                           ("'flops'", {"bytes accessed": float(rng.integers(10**3, 10**9)), "flops": None})):
        try:
            point = roofline_point(costs, float(rng.uniform(0.001, 1)))
        except ValueError:
            continue
        except Exception as exc:  # a KeyError or TypeError on the way: the lesson asks for ValueError
            raise CheckFailed(f"given a cost analysis without {missing}, roofline_point raised "
                              f"{type(exc).__name__}: check for the missing count and raise ValueError "
                              "naming it") from None
        raise CheckFailed(f"given a cost analysis without {missing}, roofline_point returned "
                          f"{type(point).__name__} instead of raising: a missing count is not a zero")


# --- test_classify ----------------------------------------------------------------------------
def expected_classification(point: dict, peak: float, bandwidth: float) -> dict:
    ridge = peak / bandwidth
    attainable = min(peak, point["intensity"] * bandwidth)
    return {"ridge": ridge, "attainable": attainable, "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if point["intensity"] < ridge else "compute"}


CLASSIFY_HINTS = {
    "ridge": "the ridge point is peak FLOP/s / bandwidth (FLOP per byte)",
    "attainable": "the attainable rate is min(peak FLOP/s, intensity x bandwidth)",
    "fraction": "the fraction is the point's achieved FLOP/s over the attainable rate at its intensity",
    "bound": "a point below the ridge point is 'memory'-bound, above it 'compute'-bound, for the ceilings passed in",
}


def classify_problems(got, point: dict, peak: float, bandwidth: float, what: str) -> list[str]:
    if not isinstance(got, dict):
        return [f"classify should return a dict, got {type(got).__name__} ({what})"]
    return key_problems(got, expected_classification(point, peak, bandwidth), CLASSIFY_HINTS, what)


def fresh_point(rng: np.random.Generator, intensity: float, attainable: float, reach=(0.05, 0.95)) -> dict:
    """A point at `intensity` that reached a fresh fraction (within `reach`) of `attainable`."""
    rate = attainable * float(rng.uniform(*reach))
    return {"flops": rate * 0.01, "bytes": rate * 0.01 / intensity, "seconds": 0.01,
            "intensity": intensity, "flop_per_second": rate, "bytes_per_second": rate / intensity}


def ceilings_from(value) -> tuple[float, float] | None:
    """The notebook's measured (peak FLOP/s, bandwidth) when they are two positive numbers."""
    if not isinstance(value, dict):
        return None
    peak = number(value.get("peak_flop_per_second"))
    bandwidth = number(value.get("peak_bytes_per_second"))
    if peak is None or bandwidth is None or peak <= 0 or bandwidth <= 0:
        return None
    return peak, bandwidth


def classification_cases(rng: np.random.Generator, own=None) -> list[tuple[str, float, float, float]]:
    """(what, peak, bandwidth, intensity): both sides of the ridge, never on it."""
    machines = []
    for _ in range(3):
        bandwidth = float(10 ** rng.uniform(9, 12))
        ridge = float(10 ** rng.uniform(math.log10(0.5), math.log10(500)))
        machines.append(("fresh ceilings", ridge * bandwidth, bandwidth))
    if own is not None:
        machines.append(("your measured ceilings", *own))
    cases = []
    for what, peak, bandwidth in machines:
        ridge = peak / bandwidth
        for factor in (float(rng.uniform(0.02, 0.2)), float(rng.uniform(0.3, 0.8)),
                       float(rng.uniform(1.25, 3.0)), float(rng.uniform(5.0, 50.0))):
            cases.append((what, peak, bandwidth, ridge * factor))
    return cases


def check_classify(classify, own_ceilings=None, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    own = ceilings_from(own_ceilings)
    for index, (what, peak, bandwidth, intensity) in enumerate(classification_cases(rng, own)):
        # One point of each machine's four above its roof (a roof is measured; a point can beat it): its
        # fraction over 1; under the memory roof for one machine, the compute roof for the next.
        machine, at = divmod(index, 4)
        reach = (1.1, 2.0) if at == 1 + machine % 2 else (0.05, 0.95)
        point = fresh_point(rng, intensity, min(peak, intensity * bandwidth), reach)
        got = call_student(f"classify for a point and {what}", classify, point, peak, bandwidth)
        problems = classify_problems(got, point, peak, bandwidth, what)
        if problems:
            raise CheckFailed("; ".join(problems))


# --- test_hand_intensity ----------------------------------------------------------------------
def textbook_intensity(m: int, k: int, n: int, itemsize: int) -> float:
    return 2 * m * k * n / ((m * k + k * n + m * n) * itemsize)


def check_matmul_intensity(matmul_intensity, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    cases = [(*(int(v) for v in rng.integers(2, 5000, 3)), itemsize) for itemsize in (1, 2, 4, 8)]
    m, k, _ = (int(v) for v in rng.integers(2, 5000, 3))
    cases.append((m, k, 1, int(rng.choice([2, 4]))))  # a matrix-vector product
    for m, k, n, itemsize in cases:
        got = number(call_student("matmul_intensity", matmul_intensity, m, k, n, itemsize),
                     what="matmul_intensity's result (FLOP per byte)")
        if not _close(got, textbook_intensity(m, k, n, itemsize)):
            where = "a matrix-vector product" if n == 1 else f"itemsize {itemsize}"
            raise CheckFailed(f"matmul_intensity is not 2*m*k*n / ((m*k + k*n + m*n) * itemsize) for {where}: "
                              "count the FLOP of the product over the bytes of both operands and the result")


# --- test_roof_verdict ------------------------------------------------------------------------
def expected_roof_verdict(point: dict, peak: float, bandwidth: float) -> dict:
    """The lesson's Task 3, computed here: the fraction of the roof at the median sample, the time a
    call at the roof would take, the samples' middle half, and performance-01's verdict between them
    (the roof's time a single timing: its own middle half)."""
    attainable = min(peak, point["intensity"] * bandwidth)
    samples = point["samples"]
    roof_seconds = point["flops"] / attainable
    side = halves.compare(samples, [roof_seconds])
    verdict = {halves.SLOWER: "below the roof", halves.FASTER: "above the roof", halves.WITHIN: "at the roof"}[side]
    return {"attainable": attainable, "median_fraction": point["flops"] / float(np.median(samples)) / attainable,
            "roof_seconds": roof_seconds, "middle_half_seconds": list(halves.middle_half(samples)), "verdict": verdict}


ROOF_VERDICT_HINTS = {
    "attainable": "the attainable rate is min(peak FLOP/s, intensity x bandwidth), as in classify",
    "median_fraction": "the median fraction is the point's FLOP over the median sample, over the attainable rate "
                       "(the median of an even count is the mean of the two middle samples)",
    "roof_seconds": "the roof's time is the point's FLOP over the attainable rate: how long a call at the roof takes",
    "middle_half_seconds": "the middle half is [25th, 75th] percentile of the samples (seconds), as "
                           "np.percentile(samples, [25, 75]) computes them (NumPy's default, linear interpolation)",
    "verdict": "'below the roof' only when the samples' 25th percentile is strictly above the roof's time, 'above "
               "the roof' only when their 75th percentile is strictly below it, else 'at the roof' (the middle half "
               "reaches the roof's time: within the spread; neither the median alone nor the fastest and slowest "
               "sample decide it)",
}


def measured_point(rng: np.random.Generator, intensity: float, attainable: float, fractions) -> dict:
    """A point as the lesson's `measure` returns it: fresh counts at `intensity`, one warm sample per
    fraction of `attainable` reached (shuffled), and the median time as its seconds."""
    flops = float(10 ** rng.uniform(6, 11))
    samples = [flops / (fraction * attainable) for fraction in fractions]
    rng.shuffle(samples)
    return {**expected_point(flops, flops / intensity, float(np.median(samples))), "samples": samples}


def _straddling(rng: np.random.Generator, count: int, median_below: bool) -> list[float]:
    """Fractions of the roof whose middle half (in time) reaches across the roof, 3% clear of it on
    both sides, with the median fraction below the roof or above it by 3% or more."""
    for _ in range(1000):  # a bound: a case made impossible by a changed constant fails, never hangs
        fractions = [float(f) for f in rng.uniform(0.7, 1.3, count)]
        times = [1 / f for f in fractions]  # the roof's time is 1 in these units
        low, high = halves.middle_half(times)
        median = float(np.median(fractions))
        if low < 0.97 and high > 1.03 and (median < 0.97 if median_below else median > 1.03):
            return fractions
    raise RuntimeError(f"no {count} fractions drawn whose middle half straddles the roof")


def roof_verdict_cases(rng: np.random.Generator) -> list[tuple[str, dict, float, float]]:
    """(what, point, peak, bandwidth): memory- and compute-bound, 5 to 10 samples (odd and even), every
    verdict, one fast or slow call on the other side of the roof from a middle half that is not (the
    fastest and slowest sample would read "at the roof"), and middle halves across the roof whose
    median is below it or above it (the median alone would read a side); no end of a middle half
    within 3% of the roof's time."""
    bandwidth = float(10 ** rng.uniform(9, 12))
    peak = float(10 ** rng.uniform(math.log10(0.5), math.log10(500))) * bandwidth
    ridge = peak / bandwidth

    def fractions(count, low, high):
        return [float(f) for f in rng.uniform(low, high, count)]

    memory, compute = ridge * float(rng.uniform(0.05, 0.5)), ridge * float(rng.uniform(2.0, 20.0))
    odd, even = 2 * int(rng.integers(3, 5)) + 1, 2 * int(rng.integers(3, 6))
    sets = [
        ("a memory-bound point below its roof", memory, fractions(odd, 0.3, 0.95)),
        ("a compute-bound point above its roof", compute, fractions(even, 1.05, 1.6)),
        ("a memory-bound point below its roof but for one fast call above it", memory,
         fractions(odd - 1, 0.6, 0.95) + [float(rng.uniform(1.05, 1.3))]),
        ("a compute-bound point above its roof but for one slow call below it", compute,
         fractions(even - 1, 1.05, 1.4) + [float(rng.uniform(0.6, 0.95))]),
        ("a memory-bound point at its roof whose median is below the roof", memory, _straddling(rng, odd, True)),
        ("a compute-bound point at its roof whose median is above the roof", compute, _straddling(rng, even, False)),
        ("a compute-bound point below its roof", compute, fractions(even, 0.2, 0.9)),
    ]
    return [(what, measured_point(rng, intensity, min(peak, intensity * bandwidth), f), peak, bandwidth)
            for what, intensity, f in sets]


def check_roof_verdict(roof_verdict, rng: np.random.Generator | None = None) -> None:
    rng = rng or np.random.default_rng()
    for what, point, peak, bandwidth in roof_verdict_cases(rng):
        got = call_student(f"roof_verdict for {what}", roof_verdict, dict(point, samples=list(point["samples"])),
                           peak, bandwidth)
        if not isinstance(got, dict):
            raise CheckFailed(f"roof_verdict should return a dict, got {type(got).__name__} ({what})")
        problems = key_problems(got, expected_roof_verdict(point, peak, bandwidth), ROOF_VERDICT_HINTS, what)
        if problems:
            raise CheckFailed("; ".join(problems))
