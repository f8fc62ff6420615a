# Caps the fraction of the roof at 1: "no workload can beat its roof". But the roofs are measured
# (the best rate of other workloads), and the lesson's own report places points above the memory roof
# (data from a cache). The checks' points all fell under their roof, so a cap never showed; it
# deserves nothing for the classification.
# expect: test_roofline_point=3 test_classify=0 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    return {"ridge": ridge, "attainable": attainable,
            "fraction": min(1.0, point["flop_per_second"] / attainable),
            "bound": "memory" if point["intensity"] < ridge else "compute"}
