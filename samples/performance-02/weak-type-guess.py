# Predicts instead of measuring: it builds what it takes to be jit's cache key (the pytree of the
# arguments, each leaf's shape and dtype, the static values) and counts the distinct keys. It is
# right about shapes, dtypes, keywords, static values and partials, and passes the public checks,
# but it treats a Python float like a float32 array (weak types), and it never traces anything.
# expect: test_counted_jit=3 test_count_traces=0 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
def count_traces(fn, calls, **jit_kwargs):
    static = set(jit_kwargs.get("static_argnames", ()))
    keys = set()
    for args, kwargs in calls:
        dynamic = {name: value for name, value in kwargs.items() if name not in static}
        leaves, structure = jax.tree_util.tree_flatten((args, dynamic))
        types = tuple((jnp.shape(leaf), jnp.result_type(leaf)) for leaf in leaves)
        statics = tuple((name, kwargs[name]) for name in sorted(static & kwargs.keys()))
        keys.add((structure, types, statics))
    return len(keys)
