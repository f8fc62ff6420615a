# Fits the least-squares lines right, but calls a quantity growing whenever its slope is positive:
# compile times wobble, and a wobble makes a slope positive about half the time, so a fixed program
# on a busy machine reads as "only compile time grows". The lesson asks for growth of at least twice
# across the sweep. Everything else is right: it loses the reading's points only.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=0
# tier: nightly
# %% solutions
# %% replace loop_growth
def loop_growth(lengths, equations, compile_seconds):
    x = np.asarray(lengths, dtype=np.float64)
    equations_per_step, _ = np.polyfit(x, np.asarray(equations, dtype=np.float64), 1)
    seconds_per_step, intercept = np.polyfit(x, np.asarray(compile_seconds, dtype=np.float64), 1)
    verdict = {(True, True): "both grow", (False, False): "neither grows",
               (False, True): "only compile time grows", (True, False): "only the equations grow"}
    return {"equations_per_step": float(equations_per_step), "seconds_per_step": float(seconds_per_step),
            "shortest_seconds": float(intercept + seconds_per_step * x.min()),
            "longest_seconds": float(intercept + seconds_per_step * x.max()),
            "verdict": verdict[bool(equations_per_step > 0.5), bool(seconds_per_step > 0)]}
