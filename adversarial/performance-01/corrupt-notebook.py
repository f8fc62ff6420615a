# A file that is not a notebook.
# expect: not-graded
# tier: demo
# reason: the JSON is corrupt
# %% file corrupt
