# Captures without waiting for the result inside the trace: the trace closes while the device still
# has work queued, so the last executions are missing from it. The lesson's own loop waits at every
# step anyway (float(loss)), so the public checks pass; the hidden workload returns before it has
# run. Loses the capture points only.
# expect: test_capture=0 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace capture
def capture(fn, trace_dir):
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = fn()
    jax.block_until_ready(result)  # waits, but after the trace has closed
    written = glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True)
    return result, max(written, key=os.path.getmtime)


def load_trace(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)
