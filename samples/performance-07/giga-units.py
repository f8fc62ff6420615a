# Reports the rates in GFLOP/s and GB/s, as a dashboard would: readable, and a billion times off
# the ceilings it will be compared with. Loses the roofline-point points only.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    costs = costs[0] if isinstance(costs, list) else costs
    flops, moved = costs.get("flops"), costs.get("bytes accessed")
    if flops is None or moved is None:
        raise ValueError("missing count")
    return {"flops": flops, "bytes": moved, "seconds": seconds, "intensity": flops / moved,
            "flop_per_second": flops / seconds / 1e9, "bytes_per_second": moved / seconds / 1e9}
