"""The course's one rule for comparing two sets of timings: the middle halves (taught in performance-01).

Every lesson that asks whether one set of timings is faster than another judges it with this rule:
05's remat, the audit's first call, 08's device counts and 07's roof in their graded checks, and
04's report on its two loop forms' run times (ungraded). One stalled call among five or more cannot
move either end of a middle half (NumPy's linear 25th percentile of n timings sits at sorted index
(n - 1) / 4, at least 1 from n = 5), where a full range follows it and a median alone ignores the
spread.
"""
from __future__ import annotations

import numpy as np

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



def touching(rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """Two shuffled sets of timings whose middle halves touch exactly, in floating point too: 5 or 9
    timings each (n - 1 a multiple of 4, so each quartile is one of them), whole multiples of a power
    of two; the second's 25th percentile is the first's 75th, or its 75th the first's 25th. The rule
    says 'within the spread'; a rule whose comparisons are not strict says otherwise."""
    unit = 2.0 ** int(rng.integers(-24, -10))

    def timings(low: int, high: int) -> list[int]:
        count = int(rng.choice([5, 9]))
        quarter = (count - 1) // 4  # timings below the 25th percentile, and above the 75th
        inside = [int(v) for v in rng.integers(low, high + 1, count - 2 * quarter - 2)]
        below = [int(v) for v in rng.integers(low // 2, low, quarter)]
        above = [int(v) for v in rng.integers(high + 1, 2 * high, quarter)]
        return [*below, low, *inside, high, *above]

    base = int(rng.integers(64, 256))
    first = timings(base, base + int(rng.integers(8, 32)))
    ordered, width = sorted(first), int(rng.integers(8, 32))
    if rng.random() < 0.5:  # the second above, touching from above
        touch = ordered[3 * (len(first) - 1) // 4]
        second = timings(touch, touch + width)
    else:
        touch = ordered[(len(first) - 1) // 4]
        second = timings(touch - width, touch)
    rng.shuffle(first)
    rng.shuffle(second)
    return [float(v * unit) for v in first], [float(v * unit) for v in second]
