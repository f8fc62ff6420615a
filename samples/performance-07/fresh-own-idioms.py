# Correct, in other idioms: the counts read through a small helper that names what is missing, the fraction
# as achieved over attainable read from whichever roof binds, the roof's time as the longer of the compute
# time and the memory time (the same number as flops / attainable), and the middle half compared in rates.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, (list, tuple)):
        (costs,) = costs

    def count(name):
        value = costs.get(name)
        if value is None:
            raise ValueError(f"cost_analysis() has no {name!r} count")
        return float(value)

    flops, moved, seconds = count("flops"), count("bytes accessed"), float(seconds)
    return dict(flops=flops, bytes=moved, seconds=seconds, intensity=flops / moved,
                flop_per_second=flops / seconds, bytes_per_second=moved / seconds)
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    memory_roof = point["intensity"] * peak_bytes_per_second
    attainable = min(peak_flop_per_second, memory_roof)
    return {"ridge": ridge, "attainable": attainable, "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if point["intensity"] < ridge else "compute"}
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    flops = point["flops"]
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    roof_seconds = max(flops / peak_flop_per_second, point["bytes"] / peak_bytes_per_second)
    samples = np.asarray(point["samples"], dtype=np.float64)
    quick, slow = np.percentile(samples, [25, 75])
    # In rates: the middle half's slowest end is flops / slow, its fastest flops / quick.
    if flops / quick < attainable:
        verdict = "below the roof"
    elif flops / slow > attainable:
        verdict = "above the roof"
    else:
        verdict = "at the roof"
    return {"attainable": attainable, "median_fraction": flops / float(np.median(samples)) / attainable,
            "roof_seconds": roof_seconds, "middle_half_seconds": [float(quick), float(slow)], "verdict": verdict}
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    elements = m * k + k * n + m * n
    return float(2 * m * k * n) / float(elements * itemsize)
