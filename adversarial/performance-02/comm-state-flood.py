# A correct notebook whose count_traces cell opens forty widget comms of 3 MB of state each (each
# message under the 4 MB the grader's sockets read). nbclient keeps every widget's state for the
# notebook's metadata, and no output cap counted comm messages: 120 MB kept in the grading worker,
# and 2.1 GB at 210 MB/s for a cell that runs its whole limit, with no note. Every message kind
# nbclient keeps now spends the cell's cap and the notebook's one budget; past them it is dropped
# unkept and the cell says so. The work is correct: full marks.
# reason: was cut at
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
from comm import create_comm as _create_comm

for _i in range(40):
    _create_comm(target_name="jupyter.widget",
                 data={"state": {"_model_module": "x", "_model_name": "y", "blob": "x" * 3_000_000},
                       "buffer_paths": []})


def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
