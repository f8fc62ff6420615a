# Returns the printed lines sorted (for a stable answer), where the task asks for them in the order JAX
# prints them.
# expect: test_residual_inspection=0 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace residual_inspection
import contextlib
import io


def saved_residual_descriptions(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(fn, *args)
    return sorted(line for line in out.getvalue().splitlines() if line)
