# Correct in other idioms: the scan lives in a helper jitted with functools.partial and a static
# argument, with a pytree carry; measure jits through functools.partial(jax.jit, ...), reads
# time.monotonic_ns bound as a default argument, synchronizes by converting to NumPy and slices the
# program's first run off its samples; the sweep
# is read with the least-squares slope written out (covariance over variance) in plain Python.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% replace scanned
import functools


@functools.partial(jax.jit, static_argnames=("unroll",))
def _scan_steps(h, xs, a, unroll=1):
    def step(carry, x):
        state, steps = carry
        return (jnp.tanh(a * state + x), steps + 1), None

    (final, _), _ = lax.scan(step, (h, 0), xs, unroll=unroll)
    return final


def scanned(h, xs, a):
    return _scan_steps(h, xs, a, unroll=1)
# %% replace measure
import functools

jit_inline = functools.partial(jax.jit, inline=False)


def measure(fn, *args, warm_calls=7, clock=time.monotonic_ns):
    begin = clock()
    compiled = jit_inline(fn).lower(*args).compile()
    compile_seconds = (clock() - begin) * 1e-9

    equations = count_equations(jax.make_jaxpr(fn)(*args))

    def one_run():
        begin = clock()
        np.asarray(compiled(*args))
        return (clock() - begin) * 1e-9

    return {"equations": equations, "compile_seconds": compile_seconds,
            "run_seconds": [one_run() for _ in range(warm_calls + 1)][1:]}  # the first run left out
# %% replace loop_growth
def _line(xs, ys):
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
             / sum((x - mean_x) ** 2 for x in xs))
    return lambda x: mean_y + slope * (x - mean_x), slope


def loop_growth(lengths, equations, compile_seconds):
    short, long = min(lengths), max(lengths)
    count_line, count_slope = _line(lengths, equations)
    seconds_line, seconds_slope = _line(lengths, compile_seconds)
    grow = [line(long) >= 2 * line(short) for line in (count_line, seconds_line)]
    verdict = {(1, 1): "both grow", (0, 0): "neither grows", (0, 1): "only compile time grows",
               (1, 0): "only the equations grow"}[tuple(map(int, grow))]
    return dict(equations_per_step=count_slope, seconds_per_step=seconds_slope,
                shortest_seconds=seconds_line(short), longest_seconds=seconds_line(long), verdict=verdict)
