# Every number right, but the verdict reads the median alone: below the roof when the median
# fraction is under 1, above it otherwise. A middle half that reaches the roof's time is "at the
# roof" (the lesson's Task 3); this says "below" or "above" for it. Loses the verdict's points only.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=0 test_hand_intensity=2
# %% solutions
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    samples = point["samples"]
    median_fraction = point["flops"] / point["seconds"] / attainable
    low, high = np.percentile(samples, [25, 75])
    verdict = "below the roof" if median_fraction < 1 else "above the roof"
    return {"attainable": attainable, "median_fraction": median_fraction, "roof_seconds": point["flops"] / attainable,
            "middle_half_seconds": [low, high], "verdict": verdict}
