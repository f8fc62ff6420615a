# Lists the residuals of the function at the lesson's vector v instead of at the arguments it
# was given: right for the lesson's network, wrong for any other call, so it loses the
# residual-inspection points (the other cells count residuals their own way).
# expect: test_residual_inspection=0 test_remat_layer=3 test_gradients_agree=2 test_timing_verdict=4 test_reverse_recurrence=3 test_recurrence_by_hand=1
# tier: nightly
# %% solutions
# %% replace residual_inspection
import contextlib
import io


def saved_residual_descriptions(fn, *args):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_saved_residuals(fn, v)
    return buffer.getvalue().splitlines()
