# Hands in a named pipe beside the notebook, which would block whatever reads it.
# expect: not-graded
# reason: data.bin is a named pipe
# %% solutions
# %% file fifo data.bin
