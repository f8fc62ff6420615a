# Correct in other idioms: the counts through operator.itemgetter with a None test, the timer with
# time.perf_counter_ns and np.asarray to wait for the result, classify with np.minimum and the
# intensity compared with the ridge, the hand count with math.prod and numpy. Full marks.
# expect: test_roofline_point=3 test_time_calls=2 test_classify=3 test_hand_intensity=2
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
# %% replace time_calls
def time_calls(fn, *args, warm_calls=5, clock=time.perf_counter_ns):
    samples = []
    for _ in range(warm_calls + 1):
        start = clock()
        jax.tree.map(np.asarray, fn(*args))
        samples.append((clock() - start) / 1e9)
    return samples[0], samples[1:]
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    ridge = peak_flop_per_second / peak_bytes_per_second
    attainable = float(np.minimum(peak_flop_per_second, point["intensity"] * peak_bytes_per_second))
    return dict(ridge=ridge, attainable=attainable, fraction=point["flop_per_second"] / attainable,
                bound=("compute", "memory")[point["intensity"] < ridge])
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    import math
    flops = 2 * math.prod((m, k, n))
    return flops / float(np.dot([m * k, k * n, m * n], [itemsize] * 3))
