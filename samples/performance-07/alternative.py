# A different correct approach: the counts are read with next(iter(...)) and try/except, the roof is
# the lower of the two roofs computed apart, the verdict reads every sample's fraction of the roof
# (sorted with NumPy) and the median with np.median, and the hand count adds the three bytes terms
# one by one. Full marks.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, list):
        costs = next(iter(costs), {})
    try:
        flops = float(costs["flops"])
        moved = float(costs["bytes accessed"])
    except (KeyError, TypeError) as error:
        raise ValueError(f"the cost analysis lacks a count: {error!r}") from None
    seconds = float(seconds)
    point = dict(flops=flops, bytes=moved, seconds=seconds)
    point.update(intensity=flops / moved, flop_per_second=flops / seconds, bytes_per_second=moved / seconds)
    return point
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    memory_roof = point["intensity"] * peak_bytes_per_second
    compute_roof = peak_flop_per_second
    attainable = memory_roof if memory_roof < compute_roof else compute_roof
    return {"ridge": compute_roof / peak_bytes_per_second, "attainable": attainable,
            "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if memory_roof < compute_roof else "compute"}
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    import statistics

    roof = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    at_the_roof = point["flops"] / roof  # seconds a call at the roof takes
    q1, _, q3 = statistics.quantiles(point["samples"], n=4, method="inclusive")  # NumPy's linear quartiles
    if q3 < at_the_roof:
        verdict = "above the roof"
    elif q1 > at_the_roof:
        verdict = "below the roof"
    else:
        verdict = "at the roof"
    return {"attainable": roof, "median_fraction": point["flops"] / statistics.median(point["samples"]) / roof,
            "roof_seconds": at_the_roof, "middle_half_seconds": (q1, q3), "verdict": verdict}
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    moved = m * k * itemsize       # read the left operand
    moved += k * n * itemsize      # read the right operand
    moved += m * n * itemsize      # write the result
    return float(2 * m * k * n) / moved
