# A student's own idioms: each analysis read once into (value, why) with try/except, the list case unwrapped,
# fields filled from two small tables; the stages through the traced stage; the count as one expression.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# tier: nightly
# %% replace estimates
def _analysis(read, name):
    try:
        value = read()
    except Exception as error:  # a backend without the model may raise
        return None, f"{name}() raised {type(error).__name__}: {error}"
    if isinstance(value, (list, tuple)):  # older JAX: one dict per compiled program
        if not value:
            return None, f"{name}() returned an empty list"
        value = value[0]
    if value is None:
        return None, f"{name}() returned None"
    return value, ""


def estimates_from(compiled):
    costs, cost_why = _analysis(compiled.cost_analysis, "cost_analysis")
    memory, memory_why = _analysis(compiled.memory_analysis, "memory_analysis")
    found, missing = {}, {}
    for name, key in COST_KEYS.items():
        raw = costs.get(key) if hasattr(costs, "get") else None
        found[name] = None if raw is None else float(raw)
        if raw is None:
            missing[name] = cost_why or f"cost_analysis() has no value for {key!r}"
    for name, attribute in MEMORY_FIELDS.items():
        raw = getattr(memory, attribute, None) if memory is not None else None
        found[name] = None if raw is None else int(raw)
        if raw is None:
            missing[name] = memory_why or f"memory_analysis() has no {attribute}"
    found["missing"] = missing
    return found
# %% replace read_program
def read_program(fn, *args):
    traced = jax.jit(fn).trace(*args)  # shapes and dtypes only: nothing runs
    lowered = traced.lower()
    compiled = lowered.compile()
    return {"jaxpr": traced.jaxpr, "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_from(compiled)}
# %% replace hand_count
def matmul_flops(m, k, n):
    return int(m) * int(n) * 2 * int(k)
