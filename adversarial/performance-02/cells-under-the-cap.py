# A correct notebook whose count_traces cell prints 990 kB, just under a cell's 1 MB, and whose
# count_traces prints 990 kB each time a check calls it. Each cell stays under its cap; caps were
# per cell only (sixty such cells kept 57 MiB in the graded notebook and again in the feedback,
# with no note). The notebook now has one budget, 4 MB, for every cell and message kind together:
# past it, outputs are dropped and the report says from which cell. Full marks.
# reason: the notebook's output was cut at
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
print("x" * 990_000)


def count_traces(fn, calls, **jit_kwargs):
    print("y" * 990_000)
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
