# Measures every point against the flat compute peak, ignoring the memory roof: a memory-bound
# workload running at its roof looks like it wastes the machine. Loses the classification points only.
# expect: test_roofline_point=3 test_classify=0 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    return {"ridge": ridge, "attainable": peak_flop_per_second,
            "fraction": point["flop_per_second"] / peak_flop_per_second,
            "bound": "memory" if point["intensity"] < ridge else "compute"}
