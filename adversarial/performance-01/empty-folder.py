# A submission folder with nothing in it.
# expect: not-graded
# reason: (empty)
# %% file empty
