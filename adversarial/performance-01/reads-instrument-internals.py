# Forges synchronized timings from the instrument's internals, with no probe replaced: takes the
# schedule's call from the closure of the function handed in, asks it for each call's trip count and
# reports the share of the first call (0.2 s) and of long (40 ms) and short (10 ms) warm calls
# that the old plan fixed, sleeping it off, never waiting for a result. Each call's length is now
# drawn at grading time and partly held by the grading kernel, which sees on its own clock that
# the calls followed each other without their work: graded as the unsynchronized timer it is.
# reason: code reads closures
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=0 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
def time_completed(fn, *args, warm_calls=7):
    cells = [cell.cell_contents for cell in (getattr(fn, "__closure__", None) or ())]
    # The grader's schedule, or its next_call, as the stand-in the channel made of it.
    ask = next((c.next_call if hasattr(c, "next_call") else c for c in cells
                if hasattr(c, "next_call") or type(c).__name__ == "Lent"), None)
    if ask is None:  # the public check's own function: time it honestly
        samples = []
        for _ in range(warm_calls + 1):
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            samples.append(time.perf_counter() - start)
        return samples[0], samples[1:]
    trips = [ask() for _ in range(warm_calls + 1)]
    longest = max(trips[1:])
    seconds = [0.2] + [0.040 if n > longest / 2 else 0.010 for n in trips[1:]]
    time.sleep(sum(seconds))
    return seconds[0], seconds[1:]
