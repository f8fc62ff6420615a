# Hands in, as the notebook itself, a link to the instructor's source notebook (which holds the
# solutions and the hidden tests). The submission is refused.
# expect: not-graded
# reason: performance-01.ipynb is a symbolic link
# %% file link performance-01.ipynb
../../../source/performance-01/performance-01.ipynb
