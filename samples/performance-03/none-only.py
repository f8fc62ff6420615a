# Handles a None answer, but not the other ways an estimate goes missing: an exception, a list
# (older JAX), an absent key or attribute, a None value. It passes the public checks; the hidden
# stand-in compilers catch it. Loses the absence points only.
# expect: test_estimates_absent=0 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace estimates
def estimates_from(compiled):
    costs = compiled.cost_analysis()
    memory = compiled.memory_analysis()
    estimates, missing = {}, {}
    for name, key in COST_KEYS.items():
        estimates[name] = None if costs is None else float(costs[key])
        if costs is None:
            missing[name] = "cost_analysis() returned None"
    for name, attribute in MEMORY_FIELDS.items():
        estimates[name] = None if memory is None else getattr(memory, attribute)
        if memory is None:
            missing[name] = "memory_analysis() returned None"
    estimates["missing"] = missing
    return estimates
