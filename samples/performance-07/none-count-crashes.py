# Refuses an absent count with ValueError, as the public check wants, but never looks at a count
# that is present and None: float(None) raises TypeError on the way. The lesson asks for
# ValueError when a count is absent or None: loses the roofline-point points only.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, (list, tuple)):
        costs = costs[0]
    for key in ("flops", "bytes accessed"):
        if key not in costs:
            raise ValueError(f"the cost analysis has no {key!r} count")
    flops, moved = float(costs["flops"]), float(costs["bytes accessed"])
    return {"flops": flops, "bytes": moved, "seconds": float(seconds), "intensity": flops / moved,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}
