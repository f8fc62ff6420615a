# Fits the least-squares lines right, but takes the first and the last entry as the shortest and the
# longest length: true of the lesson's own sweep, not of one run longest first or shuffled (the task
# says the entries may come in any order). Loses the reading's points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=0
# tier: nightly
# %% solutions
# %% replace loop_growth
import statistics


def loop_growth(lengths, equations, compile_seconds):
    count = statistics.linear_regression(lengths, equations)
    seconds = statistics.linear_regression(lengths, compile_seconds)
    short, long = lengths[0], lengths[-1]
    ends = [seconds.intercept + seconds.slope * n for n in (short, long)]
    program_grows = count.intercept + count.slope * long >= 2 * (count.intercept + count.slope * short)
    if program_grows and ends[1] >= 2 * ends[0]:
        verdict = "both grow"
    elif program_grows:
        verdict = "only the equations grow"
    elif ends[1] >= 2 * ends[0]:
        verdict = "only compile time grows"
    else:
        verdict = "neither grows"
    return {"equations_per_step": count.slope, "seconds_per_step": seconds.slope,
            "shortest_seconds": ends[0], "longest_seconds": ends[1], "verdict": verdict}
