# Correct, in another idiom: the bound read as the ceiling the point came closer to (its FLOP/s over the
# compute peak against its bytes/s over the bandwidth); the two shares stand in the ratio intensity / ridge,
# so this is the task's intensity-against-the-ridge rule in other words.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    compute_share = point["flop_per_second"] / peak_flop_per_second
    memory_share = point["bytes_per_second"] / peak_bytes_per_second
    return {"ridge": ridge, "attainable": attainable, "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if memory_share > compute_share else "compute"}
