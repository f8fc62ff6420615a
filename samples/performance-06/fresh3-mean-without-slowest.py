# Reports a mean of the synchronous calls without the slowest, a "robust" mean, as the latency: not their
# median, which the task asks for. Loses the three numbers' points only (it passed in about 60% of draws
# before the grader bounded the latency below by the median too).
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=0
# tier: nightly
# %% solutions
# %% replace three_numbers
def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    jax.block_until_ready(fn(*args))  # compiles; timed by nothing

    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - began)

    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        jax.block_until_ready([fn(*args) for _ in range(calls)])
    newest = max(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)

    began = time.perf_counter()
    queued = [fn(*args) for _ in range(calls)]
    jax.block_until_ready(queued)
    throughput = (time.perf_counter() - began) / calls
    trimmed = sorted(samples)[:-1]  # the slowest call left out
    return {"latency": sum(trimmed) / len(trimmed), "throughput": throughput,
            "device": device_seconds_per_call(load_trace(newest), module)}
