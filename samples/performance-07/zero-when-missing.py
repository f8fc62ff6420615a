# Reads an absent count as zero (costs.get(key, 0)): right whenever the compiler gives both counts,
# as on this CPU, and a made-up point where it does not. Loses the roofline-point points only.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    costs = costs[0] if isinstance(costs, list) else costs
    flops, moved = float(costs.get("flops") or 0), float(costs.get("bytes accessed") or 0)
    return {"flops": flops, "bytes": moved, "seconds": seconds,
            "intensity": flops / moved if moved else 0.0,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}
