# Correct in other idioms: the counts through operator.itemgetter with a None test, classify with
# np.minimum and the intensity compared with the ridge, the verdict from the sides of the roof the
# slowest and fastest samples fall on (a median written out over the sorted samples), the hand count
# with math.prod and numpy. Full marks.
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% replace roofline_point
def roofline_point(costs, seconds):
    (costs,) = costs if isinstance(costs, (list, tuple)) else (costs,)
    flops, moved = costs.get("flops"), costs.get("bytes accessed")
    if flops is None or moved is None:
        raise ValueError("flops and bytes accessed are both needed")
    return {"flops": float(flops), "bytes": float(moved), "seconds": float(seconds),
            "intensity": float(flops) / float(moved),
            "flop_per_second": float(flops) / float(seconds),
            "bytes_per_second": float(moved) / float(seconds)}
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    attainable = float(np.minimum(peak_flop_per_second, point["intensity"] * peak_bytes_per_second))
    return dict(ridge=ridge, attainable=attainable, fraction=point["flop_per_second"] / attainable,
                bound=("compute", "memory")[point["intensity"] < ridge])
# %% replace roof_verdict
def roof_verdict(point, peak_flop_per_second, peak_bytes_per_second):
    attainable = min(peak_flop_per_second, point["intensity"] * peak_bytes_per_second)
    ordered = sorted(point["samples"])  # fastest first
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    fraction = {name: point["flops"] / seconds / attainable
                for name, seconds in (("median", median), ("lowest", ordered[-1]), ("highest", ordered[0]))}
    sides = {fraction["lowest"] > 1, fraction["highest"] >= 1}
    verdict = "at the roof" if len(sides) == 2 else "above the roof" if True in sides else "below the roof"
    return {"attainable": attainable, **{f"{name}_fraction": value for name, value in fraction.items()},
            "verdict": verdict}
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    import math
    flops = 2 * math.prod((m, k, n))
    return flops / float(np.dot([m * k, k * n, m * n], [itemsize] * 3))
