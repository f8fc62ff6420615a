# Classifies with a hard-coded threshold of 1 FLOP/byte instead of the ridge point of the ceilings
# passed in: it agrees on the public checks' machine for their two points, not for other ceilings.
# Loses the classification points only.
# expect: test_roofline_point=3 test_classify=0 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    return {"ridge": peak_flop_per_second / peak_bytes_per_second, "attainable": attainable,
            "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if point["intensity"] < 1.0 else "compute"}
