# Takes a cost analysis that is not a dict as missing: the older JAX's list of one dict per program is
# reported as no estimate at all (the text: with a list, use its first dict).
# expect: test_estimates_absent=0 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace estimates
def estimates_from(compiled):
    result, missing = {}, {}
    try:
        costs = compiled.cost_analysis()
    except Exception:
        costs = None
    for name, key in COST_KEYS.items():
        value = costs.get(key) if isinstance(costs, dict) else None
        result[name] = None if value is None else float(value)
        if value is None:
            missing[name] = "the cost analysis has no such estimate"
    try:
        memory = compiled.memory_analysis()
    except Exception:
        memory = None
    for name, attribute in MEMORY_FIELDS.items():
        value = getattr(memory, attribute, None)
        result[name] = None if value is None else int(value)
        if value is None:
            missing[name] = "the memory analysis has no such number"
    result["missing"] = missing
    return result
