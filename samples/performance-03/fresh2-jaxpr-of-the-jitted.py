# Traces jax.jit(fn) with make_jaxpr: the jaxpr holds one nested-jit equation around the operations, with
# the right input and output shapes (the text: the traced jaxpr, from jax.make_jaxpr(fn) or the traced stage).
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace read_program
def read_program(fn, *args):
    jitted = jax.jit(fn)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    return {"jaxpr": jax.make_jaxpr(jitted)(*args), "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_from(compiled)}
