# A correct notebook whose transfer-fit cell displays a JSON output nested 700 levels deep
# (application/json, a few kilobytes). Small enough for every output cap; but each level costs
# the grader's side two Python frames to turn into a notebook node (nbformat's from_dict), so it
# runs past the grader's recursion limit where the output is kept. Deserves full marks and a
# graded notebook, its output cut with a note.
# reason: levels of nesting
# tier: nightly
# expect: test_memory_breakdown=3 test_live_memory=2 test_donated_update=2 test_donation_evidence=3 test_transfer_sweep=3 test_transfer_fit=2 test_cache_settings=2 test_cache_invalidation=2 test_remat_policies=2
# %% solutions
# %% replace transfer_fit
from IPython.display import display as _display


def fit_transfer(nbytes, seconds):
    x, y = np.asarray(nbytes, np.float64), np.asarray(seconds, np.float64)
    slope, intercept = np.polyfit(x, y, 1, w=1.0 / y)  # each error relative to its own time
    return {"fixed_seconds": float(intercept), "bytes_per_second": float(1.0 / slope)}


_deep = {}
_level = _deep
for _ in range(700):
    _level["a"] = {}
    _level = _level["a"]
_display({"application/json": _deep, "text/plain": "deep"}, raw=True)
