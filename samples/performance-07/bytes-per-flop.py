# Computes the intensity upside down, bytes per FLOP: the point lands on the wrong side of the
# ridge. Loses the roofline-point points only.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    costs = costs[0] if isinstance(costs, list) else costs
    flops, moved = costs.get("flops"), costs.get("bytes accessed")
    if flops is None or moved is None:
        raise ValueError("missing count")
    return {"flops": flops, "bytes": moved, "seconds": seconds, "intensity": moved / flops,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}
