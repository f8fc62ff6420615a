# Runs the workload once "to make sure it works" before reading its stages: the stages are right,
# but reading the program executed it, and it cannot read a program from shapes alone.
# Loses the points for not running only.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=0 test_hand_count=2
# %% solutions
# %% replace read_program
def read_program(fn, *args):
    jitted = jax.jit(fn)
    jax.block_until_ready(jitted(*args))  # check that it runs before reading it
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    return {
        "jaxpr": jax.make_jaxpr(fn)(*args),
        "lowered": lowered,
        "stablehlo": lowered.as_text(),
        "compiled": compiled,
        "estimates": estimates_from(compiled),
    }
