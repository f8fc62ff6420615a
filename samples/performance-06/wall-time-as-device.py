# Traces the queued calls, but reports the wall time of the traced run divided by the calls as the
# device time instead of reading the trace: on a CPU that is close to the device's time and the
# public checks pass; the hidden instrument's calls spend longer on the host than on the device, and
# the grader reads the device time from the trace itself. Loses the three numbers' points.
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
        start = time.perf_counter()
        jax.block_until_ready([fn(*args) for _ in range(calls)])
        device = (time.perf_counter() - start) / calls  # a wall clock, not the trace's device lines
    start = time.perf_counter()
    jax.block_until_ready([fn(*args) for _ in range(calls)])
    throughput = (time.perf_counter() - start) / calls
    return {"latency": float(np.median(samples)), "throughput": throughput, "device": device}
