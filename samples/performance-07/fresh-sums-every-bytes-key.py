# Adds up every cost-analysis key that starts with "bytes accessed" (the per-operand and output counts as
# well as the total), so the program's traffic is counted about twice and its intensity halved.
# expect: test_roofline_point=0 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, (list, tuple)):
        costs = costs[0]
    if costs.get("flops") is None or costs.get("bytes accessed") is None:
        raise ValueError("the cost analysis lacks 'flops' or 'bytes accessed'")
    flops = float(costs["flops"])
    moved = float(sum(v for k, v in costs.items() if k.startswith("bytes accessed") and v is not None))
    return {"flops": flops, "bytes": moved, "seconds": seconds, "intensity": flops / moved,
            "flop_per_second": flops / seconds, "bytes_per_second": moved / seconds}
