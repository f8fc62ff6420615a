# Queues the calls and reads the clock before waiting for them: the throughput counts dispatches, not
# finished work. On a CPU the notebook's matmul dispatches slowly enough that the number looks
# plausible and the public checks pass; the grader sees the function return before the last queued
# call's work was done. Loses the three numbers' points.
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
    path = max(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)
    start = time.perf_counter()
    results = [fn(*args) for _ in range(calls)]
    throughput = (time.perf_counter() - start) / calls  # read before the work is done
    return {"latency": float(np.median(samples)), "throughput": throughput,
            "device": device_seconds_per_call(load_trace(path), module)}
