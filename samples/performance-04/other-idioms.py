# Correct in other idioms: the scan lives in a helper jitted with functools.partial and a static
# argument, with a pytree carry; measure jits through functools.partial(jax.jit, ...), reads
# time.monotonic_ns bound as a default argument, and synchronizes by converting to NumPy.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_measure_run_synchronized=2
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
            "run_seconds": [one_run() for _ in range(warm_calls)]}
