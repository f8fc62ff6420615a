# Fits both least-squares lines and reports their slopes and the compile line's ends right, but
# decides whether each quantity grows from the samples' extremes: the slowest at least twice the
# fastest. The check's flat sweep with one slow compile is the case that tells it apart, and that
# compile was drawn 1.4-1.8x slower, so its extremes seldom crossed twice: the reading passed 287 of
# 300 runs in-process (10/10). Each run's slow compile now puts the flat sweep's extremes past twice
# apart (checks/loops.py:_growth_case). Loses the reading's points only.
# tier: nightly
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=0
# %% solutions
# %% replace loop_growth
def loop_growth(lengths, equations, compile_seconds):
    x = np.asarray(lengths, dtype=np.float64)
    count_slope, _ = np.polyfit(x, np.asarray(equations, dtype=np.float64), 1)
    time_slope, time_at_zero = np.polyfit(x, np.asarray(compile_seconds, dtype=np.float64), 1)
    verdicts = {(True, True): "both grow", (False, False): "neither grows",
                (False, True): "only compile time grows", (True, False): "only the equations grow"}
    grows = tuple(max(values) >= 2 * min(values) for values in (equations, compile_seconds))
    return {"equations_per_step": float(count_slope), "seconds_per_step": float(time_slope),
            "shortest_seconds": float(time_at_zero + time_slope * x.min()),
            "longest_seconds": float(time_at_zero + time_slope * x.max()),
            "verdict": verdicts[grows]}
