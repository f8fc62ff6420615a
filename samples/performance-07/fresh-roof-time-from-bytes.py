# Turns the roof into a time as the bytes over the bandwidth alone (the memory roof's time), which is the
# roof's time only for a memory-bound point; a compute-bound one's roof is its FLOP over the peak.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=0 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    roof_seconds = point["bytes"] / peak_bytes_per_second
    low, high = (float(q) for q in np.percentile(point["samples"], [25, 75]))
    verdict = ("below the roof" if low > roof_seconds else "above the roof" if high < roof_seconds
               else "at the roof")
    return {"attainable": attainable, "median_fraction": point["flops"] / np.median(point["samples"]) / attainable,
            "roof_seconds": roof_seconds, "middle_half_seconds": [low, high], "verdict": verdict}
