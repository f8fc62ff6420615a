# Tests the counts for truth (`if not costs.get(...)`), so a program the compiler counts as doing zero FLOP
# (a copy, a transpose) raises as if its count were missing: a zero is a count, not a missing one.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, list):
        costs = costs[0]
    for key in ("flops", "bytes accessed"):
        if not costs.get(key):
            raise ValueError(f"no {key} in the cost analysis")
    flops, moved = float(costs["flops"]), float(costs["bytes accessed"])
    return {"flops": flops, "bytes": moved, "seconds": seconds, "intensity": flops / moved,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}
