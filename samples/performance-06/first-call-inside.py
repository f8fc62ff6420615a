# Makes no first call apart: the first timed call compiles and is the first latency sample. The median
# of twenty hides it on the notebook's matmul, so the public checks pass; the grader counts the
# calls (one first call, then three runs of calls). Loses the three numbers' points.
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=0
# tier: nightly
# %% solutions
# %% replace three_numbers
def three_numbers(fn, *args, module, trace_dir, calls=CALLS):
    samples = []
    for _ in range(calls):  # the first of these is the first call
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        jax.block_until_ready([fn(*args) for _ in range(calls)])
    path = max(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True), key=os.path.getmtime)
    start = time.perf_counter()
    jax.block_until_ready([fn(*args) for _ in range(calls)])
    throughput = (time.perf_counter() - start) / calls
    return {"latency": float(np.median(samples)), "throughput": throughput,
            "device": device_seconds_per_call(load_trace(path), module)}
