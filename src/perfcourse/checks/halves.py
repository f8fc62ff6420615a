"""The course's one rule for comparing two sets of timings: the middle halves (taught in performance-01).

Every lesson that asks whether one set of timings is faster than another (05's remat, the audit's
first call, 08's device counts, 04's loop lengths, 07's roof) judges it with these two functions,
so a student learns the rule once. One stalled call among five or more cannot move either end of
a middle half (NumPy's linear 25th percentile of n timings sits at sorted index (n - 1) / 4, at
least 1 from n = 5), where a full range follows it and a median alone ignores the spread.
"""
from __future__ import annotations

import math

import numpy as np

RULE = ("the middle half of a set of timings runs from its 25th to its 75th percentile, as "
        "np.percentile(t, [25, 75]) computes them (NumPy's default, linear interpolation); A is faster "
        "than B only when A's 75th percentile is strictly below B's 25th, slower only when A's 25th "
        "percentile is strictly above B's 75th, and otherwise (the middle halves overlap or touch) "
        "within the spread; a single timing is its own middle half")

FASTER, SLOWER, WITHIN = "faster", "slower", "within the spread"


def middle_half(samples) -> tuple[float, float]:
    """[25th, 75th] percentile of `samples`, NumPy's default (linear) interpolation, in float64."""
    low, high = np.percentile(np.asarray(samples, np.float64).reshape(-1), [25, 75])
    return float(low), float(high)


def compare(a, b) -> str:
    """FASTER when a's middle half lies wholly below b's, SLOWER wholly above, else WITHIN."""
    a_low, a_high = middle_half(a)
    b_low, b_high = middle_half(b)
    return FASTER if a_high < b_low else SLOWER if a_low > b_high else WITHIN


def margin(a, b) -> float:
    """How far a verdict of compare(a, b) is from flipping, relative to the timings' scale: drawn
    cases keep this above a millionth so that no verdict hangs on rounding."""
    a_low, a_high = middle_half(a)
    b_low, b_high = middle_half(b)
    scale = max(abs(a_high), abs(b_high), 1e-300)
    return min(abs(a_high - b_low), abs(a_low - b_high)) / scale


def same_half(got, want: tuple[float, float], rel_tol: float = 1e-9) -> bool:
    """Whether `got` is a pair of real numbers each within `rel_tol` of `want`'s (a student's
    middle half against the one computed here; a list, tuple or array all count)."""
    try:
        low, high = (float(v) for v in got)
    except (TypeError, ValueError):
        return False
    return all(math.isfinite(g) and math.isclose(g, w, rel_tol=rel_tol, abs_tol=0.0)
               for g, w in zip((low, high), want))
