# Correct: warms up with a call, then empties JAX's caches, so the timed lower().compile() is a
# first compilation again; reads a clock imported under another name inside the function, and
# waits for each result by polling is_ready(). The loop is a fori_loop over a tuple carry.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_measure_run_synchronized=2
# %% replace scanned
def scanned(h, xs, a):
    def body(t, carry):
        state, inputs = carry
        return jnp.tanh(a * state + inputs[t]), inputs

    final, _ = lax.fori_loop(0, xs.shape[0], body, (h, xs))
    return final
# %% replace measure
def measure(fn, *args, warm_calls=7):
    from time import perf_counter as tick

    jitted = jax.jit(fn)
    jitted(*args).block_until_ready()   # a warm-up...
    jax.clear_caches()                  # ...forgotten: the compilation below is a first one

    begin = tick()
    compiled = jitted.lower(*args).compile()
    compile_seconds = tick() - begin

    equations = count_equations(jax.make_jaxpr(fn)(*args))
    run_seconds = []
    for _ in range(warm_calls):
        begin = tick()
        out = compiled(*args)
        while not out.is_ready():
            pass
        run_seconds.append(tick() - begin)
    return {"equations": equations, "compile_seconds": compile_seconds, "run_seconds": run_seconds}
