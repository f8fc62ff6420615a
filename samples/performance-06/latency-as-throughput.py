# Times every call on its own, waiting for each, and reports that median as the throughput too: on a
# CPU, where host and device share the cores, the two lie close and the public checks pass; the
# hidden instrument holds each call on the host for longer than its device work, so queued calls
# overlap the two parts and the throughput is well under the latency. Loses the three numbers' points.
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
    for _ in range(calls):  # "throughput": each call waited for, as for the latency
        jax.block_until_ready(fn(*args))
    latency = float(np.median(samples))
    return {"latency": latency, "throughput": latency, "device": device_seconds_per_call(load_trace(path), module)}
