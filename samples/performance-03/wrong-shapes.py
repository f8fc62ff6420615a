# Lowers for the lesson's example shapes instead of the arguments' shapes: right on the lesson's
# layer, wrong on any other. It still runs nothing and handles missing estimates, so it loses
# the points for the stages only.
# expect: test_estimates_absent=3 test_read_program_stages=0 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace read_program
def read_program(fn, *args):
    traced = jax.jit(fn).trace(x_spec, w_spec)
    lowered = traced.lower()
    compiled = lowered.compile()
    return {
        "jaxpr": traced.jaxpr,
        "lowered": lowered,
        "stablehlo": lowered.as_text(),
        "compiled": compiled,
        "estimates": estimates_from(compiled),
    }
