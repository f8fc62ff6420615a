# Scans with unroll=4: four steps written out inside a loop, whatever the length (the text: a fixed unroll
# hands XLA a few steps inside a loop, and its compile time stays flat), the remainder steps around it.
# expect: test_scanned_result=3 test_scanned_size=2 test_measure_equations=1 test_measure_compile_apart=2 test_loop_growth=2
# tier: nightly
# %% solutions
# %% replace scanned
def scanned(h, xs, a):
    final, _ = lax.scan(lambda carry, x: (jnp.tanh(a * carry + x), None), h, xs, unroll=4)
    return final
