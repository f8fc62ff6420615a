# The course's nbgrader configuration: the one place its grading settings live.
#
# nbgrader 0.9.6 ignores `--config=FILE` without saying so; nbgrader_config.py beside this file
# loads this one, so a plain `nbgrader <verb>` run from the course root uses it.
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "jax-performance"

# Every notebook is graded on the CPU kernel the course installs (JAX_PLATFORMS=cpu), whatever
# kernel the student's notebook names; grades must not depend on the grader's accelerator.
c.Execute.kernel_name = "jax-cpu"
# Per cell, in seconds. The lessons' cells take well under a second on a laptop CPU.
c.Execute.timeout = 60

# A grade cell a student deleted is put back from the gradebook (and then fails or passes on
# its own merits) instead of being skipped.
c.OverwriteCells.add_missing_cells = True

# Feedback shows the public tests only: hidden test source is removed before rendering.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
]
