# A student's own idioms: the loop as lax.fori_loop (static bounds: a loop in the program), the compile span
# read before the jaxpr is made, the lines fitted with statistics.linear_regression and evaluated at min and max.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% replace scanned
def scanned(h, xs, a):
    return lax.fori_loop(0, xs.shape[0], lambda t, state: jnp.tanh(a * state + xs[t]), h)
# %% replace measure
def measure(fn, *args, warm_calls=7):
    began = time.perf_counter()
    program = jax.jit(fn).lower(*args).compile()  # trace, lower and compile; nothing runs
    compile_seconds = time.perf_counter() - began
    equations = count_equations(jax.make_jaxpr(fn)(*args))
    _first_run, warm = time_completed(program, *args, warm_calls=warm_calls)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": [float(s) for s in warm]}
# %% replace loop_growth
def loop_growth(lengths, equations, compile_seconds):
    xs = [float(n) for n in lengths]
    eq = statistics.linear_regression(xs, [float(v) for v in equations])
    ct = statistics.linear_regression(xs, [float(v) for v in compile_seconds])
    low, high = min(xs), max(xs)

    def grows(line):
        return line.intercept + line.slope * high >= 2 * (line.intercept + line.slope * low)

    verdict = {(True, True): "both grow", (False, False): "neither grows",
               (False, True): "only compile time grows", (True, False): "only the equations grow"}[(grows(eq), grows(ct))]
    return {"equations_per_step": eq.slope, "seconds_per_step": ct.slope,
            "shortest_seconds": ct.intercept + ct.slope * low, "longest_seconds": ct.intercept + ct.slope * high,
            "verdict": verdict}
