# nested-display's output 5,000 levels deep, sent by a kernel whose recursion limit the cell raised
# first: its JSON is deeper than the grader's JSON parser reads at all, so the message raised in the
# grader's client as it arrived, and the notebook was not graded. The client now reads such a part
# as too deep and drops it like any output nested past the bound. Deserves full marks, a note.
# reason: levels of nesting
# tier: nightly
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# %% solutions
# %% replace transfer_fit
import sys as _sys

from IPython.display import display as _display


def fit_transfer(nbytes, seconds):
    x, y = np.asarray(nbytes, np.float64), np.asarray(seconds, np.float64)
    slope, intercept = np.polyfit(x, y, 1, w=1.0 / y)  # each error relative to its own time
    return {"fixed_seconds": float(intercept), "bytes_per_second": float(1.0 / slope)}


_deep = {}
_level = _deep
_sys.setrecursionlimit(50000)  # so that this kernel can send what the grader's parser cannot read
for _ in range(5000):
    _level["a"] = {}
    _level = _level["a"]
_display({"application/json": _deep, "text/plain": "deep"}, raw=True)
