# A correct notebook whose count_traces cell shows two hundred small displays under one display id,
# then updates that id with 900 kB forty times. Each update rewrites every output that shares the
# id (in any cell), and updates were not counted in bytes: the graded notebook and its feedback
# would hold 200 copies of 900 kB (180 MB). An update now costs its size once per output it
# rewrites, so the first one is past the cell's cap: dropped, and the cell says so. Full marks.
# reason: was cut at
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
from IPython.display import display as _display, update_display as _update_display

for _i in range(200):
    _display({"text/plain": "."}, raw=True, display_id="shared")
for _i in range(40):
    _update_display({"text/plain": "u" * 900_000}, raw=True, display_id="shared")


def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
