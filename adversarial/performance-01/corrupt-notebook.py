# A file that is not a notebook.
# expect: not-graded
# reason: the JSON is corrupt
# %% file corrupt
