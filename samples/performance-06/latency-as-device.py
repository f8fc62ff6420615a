# Traces the queued calls but never reads the trace: reports one synchronous call's time (the latency's
# median) as the device time too. On a CPU, where the host's part of a call is small, the two lie close
# and the public checks pass; the hidden instrument holds each call on the host for a time of its own
# beside its device work, and the grader reads the device time from the trace itself. Loses the three
# numbers' points.
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
    jax.block_until_ready([fn(*args) for _ in range(calls)])
    throughput = (time.perf_counter() - start) / calls
    latency = float(np.median(samples))
    return {"latency": latency, "throughput": throughput, "device": latency}  # one call's wall time
