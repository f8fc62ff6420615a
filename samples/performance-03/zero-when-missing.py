# Turns every missing estimate into 0 and never says anything is missing: on a backend without a
# cost model it would report a program that does no work. Loses the absence points only.
# expect: test_estimates_absent=0 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace estimates
def estimates_from(compiled):
    costs = compiled.cost_analysis() or {}
    if isinstance(costs, list):
        costs = costs[0] if costs else {}
    memory = compiled.memory_analysis()
    estimates = {name: float(costs.get(key) or 0.0) for name, key in COST_KEYS.items()}
    estimates.update({name: int(getattr(memory, attribute, 0) or 0) for name, attribute in MEMORY_FIELDS.items()})
    estimates["missing"] = {}
    return estimates
