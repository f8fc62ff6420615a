# Takes the middle sample of the list as it came, in the order the calls were made, for the median:
# the middle call, not the median time, unless the samples happen to be sorted. The middle half
# and the verdict are right. Loses the verdict's points only.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=0 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    samples = point["samples"]
    median_fraction = point["flops"] / samples[len(samples) // 2] / attainable
    roof_seconds = point["flops"] / attainable
    low, high = np.percentile(samples, [25, 75])
    if low > roof_seconds:
        verdict = "below the roof"
    elif high < roof_seconds:
        verdict = "above the roof"
    else:
        verdict = "at the roof"
    return {"attainable": attainable, "median_fraction": median_fraction, "roof_seconds": roof_seconds,
            "middle_half_seconds": [low, high], "verdict": verdict}
