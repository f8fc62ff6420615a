# Fits both least-squares lines and reports their slopes and the compile line's ends right, but
# decides whether each quantity grows from the raw samples at the shortest and the longest length.
# One slow compile at the shortest length then reads a growing compile time as flat, which is what
# the lesson's line through every sample is there to prevent. Loses the reading's points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=0
# tier: nightly
# %% solutions
# %% replace loop_growth
def loop_growth(lengths, equations, compile_seconds):
    x = np.asarray(lengths, dtype=np.float64)
    count_slope, _ = np.polyfit(x, np.asarray(equations, dtype=np.float64), 1)
    time_slope, time_at_zero = np.polyfit(x, np.asarray(compile_seconds, dtype=np.float64), 1)
    first, last = int(np.argmin(x)), int(np.argmax(x))
    count_grows = equations[last] >= 2 * equations[first]
    time_grows = compile_seconds[last] >= 2 * compile_seconds[first]
    names = {(True, True): "both grow", (False, False): "neither grows",
             (False, True): "only compile time grows", (True, False): "only the equations grow"}
    return {"equations_per_step": float(count_slope), "seconds_per_step": float(time_slope),
            "shortest_seconds": float(time_at_zero + time_slope * x.min()),
            "longest_seconds": float(time_at_zero + time_slope * x.max()),
            "verdict": names[count_grows, time_grows]}
