# Every number right, but the verdict reads the fastest and slowest sample instead of the middle
# half: below the roof only when even the fastest call was, above it only when even the slowest
# was. One stalled call then turns a point that runs above its roof into "at the roof" (the public
# check's fourth point). Loses the verdict's points only.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=0 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    samples = point["samples"]
    roof_seconds = point["flops"] / attainable
    if min(samples) > roof_seconds:
        verdict = "below the roof"
    elif max(samples) < roof_seconds:
        verdict = "above the roof"
    else:
        verdict = "at the roof"
    return {"attainable": attainable, "median_fraction": point["flops"] / float(np.median(samples)) / attainable,
            "roof_seconds": roof_seconds, "middle_half_seconds": list(np.percentile(samples, [25, 75])),
            "verdict": verdict}
