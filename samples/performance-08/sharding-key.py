# Predicts compiles instead of counting them: a call compiles when the shapes, dtypes and
# shardings of its arguments are new to this function's calls. Right for a fresh function, wrong
# for one that has already run some of those placements before it is handed over (they compile
# nothing). Loses the compile-key cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=0 test_scaling_evidence=2
# tier: nightly
# %% solutions
# %% replace compiles_per_call
def compiles_per_call(fn, calls):
    seen, counts = set(), []
    for args in calls:
        key = tuple((a.shape, str(a.dtype), a.sharding if a.committed else None) for a in args)
        jax.block_until_ready(fn(*args))
        counts.append(0 if key in seen else 1)
        seen.add(key)
    return counts
