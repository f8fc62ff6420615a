# Reads the stages right, then "warms up" the compiled program whenever it was given real arrays,
# without waiting for it. From ShapeDtypeStructs it runs nothing, and the call returns before the
# program has run: a check that tried only ShapeDtypeStructs, or did not wait for the program's
# effects, would miss it. Loses the points for not running only.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=0 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace read_program
def read_program(fn, *args):
    traced = jax.jit(fn).trace(*args)
    lowered = traced.lower()
    compiled = lowered.compile()
    if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
        compiled(*args)  # warm it up while we have data
    return {
        "jaxpr": traced.jaxpr,
        "lowered": lowered,
        "stablehlo": lowered.as_text(),
        "compiled": compiled,
        "estimates": estimates_from(compiled),
    }
