# Device time as each traced call's wait: under the trace it waits for every call on its own, reading the
# clock when the call comes back and again when its result is ready, and reports the median of those
# waits (the trace is captured, so it holds the executions, but never read). Where a call's result is
# ready the moment its work ends and nothing runs between the call's dispatch and its return, the wait
# is the work and matches the trace (it once passed, unflagged); on an accelerator it holds the way back
# to the host too, and the task asks for the trace's number. The grader now holds each traced call again
# once its program is dispatched, for longer than its work and for a time it never tells: the work is
# done before the call comes back, the waits are near nothing, and the three numbers' points are lost.
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
    waits = []
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        for _ in range(calls):
            out = fn(*args)
            back = time.perf_counter()  # the call came back: what is left is its work, as the host waits for it
            jax.block_until_ready(out)
            waits.append(time.perf_counter() - back)
    start = time.perf_counter()
    results = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(results)
    throughput = (time.perf_counter() - start) / calls
    return {"latency": float(np.median(samples)), "throughput": throughput, "device": float(np.median(waits))}
