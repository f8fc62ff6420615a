# Reads the estimates as if they were always there: right on this CPU backend, a crash on a
# backend (or JAX version) that returns None, a list, or raises. Loses the absence points only.
# expect: test_estimates_absent=0 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace estimates
def estimates_from(compiled):
    costs = compiled.cost_analysis()
    memory = compiled.memory_analysis()
    return {
        "flops": float(costs["flops"]),
        "bytes_accessed": float(costs["bytes accessed"]),
        "argument_bytes": memory.argument_size_in_bytes,
        "output_bytes": memory.output_size_in_bytes,
        "temp_bytes": memory.temp_size_in_bytes,
        "missing": {},
    }
