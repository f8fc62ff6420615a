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

    def percentile(q):  # linear between sorted neighbours, as NumPy's default
        at = q * (len(ordered) - 1)
        below = int(at)
        return ordered[below] + (ordered[min(below + 1, len(ordered) - 1)] - ordered[below]) * (at - below)

    roof_seconds = point["flops"] / attainable
    middle_half = [percentile(0.25), percentile(0.75)]
    sides = {middle_half[0] > roof_seconds, middle_half[1] >= roof_seconds}
    verdict = "at the roof" if len(sides) == 2 else "below the roof" if True in sides else "above the roof"
    return {"attainable": attainable, "median_fraction": point["flops"] / percentile(0.5) / attainable,
            "roof_seconds": roof_seconds, "middle_half_seconds": middle_half, "verdict": verdict}
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    import math
    flops = 2 * math.prod((m, k, n))
    return flops / float(np.dot([m * k, k * n, m * n], [itemsize] * 3))
