# A real scan, but the step passes the old state on as its carry and emits the new one as
# an output: the last output is one step from the initial state, not the final state.
# Its jaxpr does not grow, so it loses the result points only.
# expect: test_scanned_result=0 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
def scanned(h, xs, a):
    def step(carry, x):
        new = jnp.tanh(a * carry + x)
        return carry, new

    _, states = lax.scan(step, h, xs)
    return states[-1]
