# Caps the fraction at 1 ("nothing runs above its roof"), so a point above a measured roof (data in a cache
# the roof does not assume, or a wrong roof) reads as exactly at it.
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
