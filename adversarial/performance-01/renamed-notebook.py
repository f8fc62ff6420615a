# The solved notebook, handed in under another name.
# expect: not-graded
# reason: a renamed notebook?
# %% solutions
# %% file rename performance-01-final.ipynb
