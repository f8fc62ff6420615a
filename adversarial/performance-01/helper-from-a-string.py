# A correct timer whose helper is compiled from a string under a label of its own ("timing-helpers"),
# and called through `map`, a builtin: the helper climbs the interpreter's frames looking for the
# grader's schedule (it finds none it could use, and the timer waits for every result). Code a
# student's cell runs from a string is the student's whatever it is labelled: the audit hook
# records the frames it takes. Evidence, not a verdict: the work is correct and keeps full marks.
# reason: took an interpreter frame (sys._getframe)
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace timer
_helpers = {}
exec(compile(
    "import sys\n"
    "def look_around(depth):\n"
    "    frame, names = sys._getframe(1), []\n"
    "    while frame is not None and len(names) < depth:\n"
    "        names += [n for n in frame.f_locals if 'schedule' in n]\n"
    "        frame = frame.f_back\n"
    "    return names\n",
    "timing-helpers", "exec"), _helpers)


def time_completed(fn, *args, warm_calls=7):
    list(map(_helpers["look_around"], [8]))
    samples = []
    for _ in range(warm_calls + 1):
        begin = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - begin)
    return samples[0], samples[1:]
