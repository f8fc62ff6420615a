# A different correct approach: the counts are read with next(iter(...)) and try/except, the timer
# reads time.monotonic and waits with .block_until_ready() on every leaf, the roof is the lower of
# the two roofs computed apart, and the hand count adds the three bytes terms one by one. Full marks.
# expect: test_roofline_point=3 test_time_calls=2 test_classify=3 test_hand_intensity=2
# %% replace roofline_point
def roofline_point(costs, seconds):
    if isinstance(costs, list):
        costs = next(iter(costs), {})
    try:
        flops = float(costs["flops"])
        moved = float(costs["bytes accessed"])
    except (KeyError, TypeError) as error:
        raise ValueError(f"the cost analysis lacks a count: {error!r}") from None
    seconds = float(seconds)
    point = dict(flops=flops, bytes=moved, seconds=seconds)
    point.update(intensity=flops / moved, flop_per_second=flops / seconds, bytes_per_second=moved / seconds)
    return point
# %% replace time_calls
def time_calls(fn, *args, warm_calls=5):
    def once():
        start = time.monotonic()
        for leaf in jax.tree.leaves(fn(*args)):
            leaf.block_until_ready()
        return time.monotonic() - start

    first = once()
    return first, [once() for _ in range(warm_calls)]
# %% replace classify
def classify(point, peak_flop_per_second, peak_bytes_per_second):
    memory_roof = point["intensity"] * peak_bytes_per_second
    compute_roof = peak_flop_per_second
    attainable = memory_roof if memory_roof < compute_roof else compute_roof
    return {"ridge": compute_roof / peak_bytes_per_second, "attainable": attainable,
            "fraction": point["flop_per_second"] / attainable,
            "bound": "memory" if memory_roof < compute_roof else "compute"}
# %% replace hand_intensity
def matmul_intensity(m, k, n, itemsize):
    moved = m * k * itemsize       # read the left operand
    moved += k * n * itemsize      # read the right operand
    moved += m * n * itemsize      # write the result
    return float(2 * m * k * n) / moved
