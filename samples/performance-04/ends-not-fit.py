# Reads the sweep from its two ends: each slope from the shortest and the longest measurement, and
# the compile "line" at the ends is those two samples. Exact for the equation counts, which lie on
# a line, but one slow compile at either end moves it all, which is why the lesson asks for a
# least-squares line through every sample. Everything else is right: it loses the reading's points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=0
# tier: nightly
# %% solutions
# %% replace loop_growth
def loop_growth(lengths, equations, compile_seconds):
    ordered = sorted(zip(lengths, equations, compile_seconds))
    (short, short_count, short_seconds), (long, long_count, long_seconds) = ordered[0], ordered[-1]
    steps = long - short
    program_grows = long_count >= 2 * short_count
    compile_grows = long_seconds >= 2 * short_seconds
    verdict = {(True, True): "both grow", (False, False): "neither grows",
               (False, True): "only compile time grows", (True, False): "only the equations grow"}
    return {"equations_per_step": (long_count - short_count) / steps,
            "seconds_per_step": (long_seconds - short_seconds) / steps,
            "shortest_seconds": short_seconds, "longest_seconds": long_seconds,
            "verdict": verdict[program_grows, compile_grows]}
