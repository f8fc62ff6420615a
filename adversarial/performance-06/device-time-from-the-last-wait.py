# Device time read off the wall clock, never off the trace: it captures the queued calls (so the
# trace holds their executions) but reports, as the device time, how long it waited after the last
# queued call came back. Where each call's work is shorter than the host's part of the call, the
# earlier calls are done by then and the wait is the last call's work alone. On an accelerator that
# wait holds the way back to the host too, and the task asks for the trace's number: it deserves
# nothing for the three numbers.
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
        traced = [fn(*args) for _ in range(calls)]
        last_back = time.perf_counter()
        jax.block_until_ready(traced)
        device = time.perf_counter() - last_back  # the last call's work, as the host waited for it
    start = time.perf_counter()
    results = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(results)
    throughput = (time.perf_counter() - start) / calls
    return {"latency": float(np.median(samples)), "throughput": throughput, "device": device}
