# Hands in a link beside the notebook that points at the instructor's source notebook.
# The submission is refused, and the refusal quotes nothing of what the link points at.
# expect: not-graded
# reason: notes.txt is a symbolic link
# %% solutions
# %% file link notes.txt
../../../source/performance-01/performance-01.ipynb
