# lax.scan with unroll=True: the jaxpr keeps one scan equation at every length, so the public size check
# passes, but XLA is handed every step written out (the lesson's own words on unroll=True): no loop
# reaches the compiler. Loses the size points only.
# expect: test_scanned_result=3 test_scanned_size=0 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
def scanned(h, xs, a):
    final, _ = lax.scan(lambda state, x: (jnp.tanh(a * state + x), None), h, xs, unroll=True)
    return final
