# Takes the first perfetto_trace.json.gz that a recursive glob lists under trace_dir, not the newest: in a
# folder that already holds an older run that is whichever file the folder lists first (the task: take the
# newest file). Loses the capture points only.
# expect: test_capture=0 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# tier: nightly
# %% solutions
# %% replace capture
def capture(fn, trace_dir):
    os.makedirs(trace_dir, exist_ok=True)
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        result = jax.block_until_ready(fn())
    written = glob.glob(os.path.join(trace_dir, "**", TRACE_FILE), recursive=True)
    return result, written[0]


def load_trace(path):
    with gzip.open(path, "rt") as handle:
        return json.load(handle)
