# Takes the last of the trace files in sorted path order as the newest: the profiler names each run's folder
# after its start time, so that order is usually time order, but nothing in a folder promises it (the text:
# take the newest file).
# expect: test_capture=0 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace capture
def capture(fn, trace_dir):
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = jax.block_until_ready(fn())
    return result, sorted(glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True))[-1]


def load_trace(path):
    with gzip.open(path, "rt") as handle:
        return json.load(handle)
