# A correct notebook whose hand-intensity cell compiles a helper from a string under a label of its
# own ("roofline-helpers") and calls it through `sorted`, a builtin, as its key: the helper takes
# every thread's frames. Code a student's cell runs from a string is the student's whatever it is
# labelled: the audit hook records it. Evidence, not a verdict: the work is correct and keeps full marks.
# reason: took every thread's frame (sys._current_frames)
# expect: test_roofline_point=3 test_classify=3 test_roof_verdict=2 test_hand_intensity=2
# tier: nightly
# %% solutions
# %% replace hand_intensity
_helpers = {}
exec(compile("import sys\ndef frames_seen(_):\n    return len(sys._current_frames())\n", "roofline-helpers", "exec"),
     _helpers)
sorted([1, 2], key=_helpers["frames_seen"])


def matmul_intensity(m, k, n, itemsize):
    return 2 * m * k * n / ((m * k + k * n + m * n) * itemsize)
