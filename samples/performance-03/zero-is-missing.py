# Reads a zero estimate as "no estimate": None, listed as missing with a reason. On this backend
# temp_size_in_bytes is a real 0 (the layer needs no temporaries), so the public checks, which
# only ask that None and 'missing' agree, pass. The compiler's number must be kept as it is: the
# hidden stand-ins with real zeros catch it. Loses the absence points only.
# expect: test_estimates_absent=0 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% solutions
# %% replace estimates
def estimates_from(compiled):
    estimates, missing = {}, {}
    try:
        costs = compiled.cost_analysis()
    except Exception as exc:
        costs = None
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else None
    for name, key in COST_KEYS.items():
        estimates[name] = (costs.get(key) if isinstance(costs, dict) else None) or None
    try:
        memory = compiled.memory_analysis()
    except Exception:
        memory = None
    for name, attribute in MEMORY_FIELDS.items():
        estimates[name] = getattr(memory, attribute, None) or None
    estimates["missing"] = {name: "no estimate (None or 0)" for name in ESTIMATE_FIELDS if estimates[name] is None}
    return estimates
