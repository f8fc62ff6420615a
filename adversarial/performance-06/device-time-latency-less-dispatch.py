# Device time as latency less dispatch: the median synchronous call less the median time a queued
# call takes to come back, both on the wall clock (the trace is captured, so it holds the executions,
# but never read). On the course's instrument a call is its host part then its device work, so the
# difference is the work; on an accelerator it is the host's round trip, not the chip's time (on the
# v5e, 620 us less 150 us against 93 us of device time). It deserves nothing for the three numbers.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=0
# tier: nightly
# %% solutions
# %% replace three_numbers
def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        jax.block_until_ready([fn(*args) for _ in range(calls)])
    start = time.perf_counter()
    results, returns = [], []
    for _ in range(calls):
        results.append(fn(*args))
        returns.append(time.perf_counter())
    jax.block_until_ready(results)
    throughput = (time.perf_counter() - start) / calls
    dispatch = float(np.median(np.diff([start] + returns)))
    latency = float(np.median(samples))
    return {"latency": latency, "throughput": throughput, "device": latency - dispatch}
