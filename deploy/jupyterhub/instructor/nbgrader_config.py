# nbgrader's configuration in an instructor's server (on JUPYTER_CONFIG_PATH, set by jupyterhub_config.py):
# the course's own, nbgrader_config.py -> grader_config.py in the course root, so Formgrader and a
# terminal's `nbgrader`/`perfcourse grade` grade with the same settings. Exchange.root comes from
# PERFCOURSE_EXCHANGE, which grader_config.py reads.
import os

c = get_config()  # noqa: F821
course = os.environ["PERFCOURSE_COURSE"]
load_subconfig("nbgrader_config.py", path=course)  # noqa: F821
c.CourseDirectory.root = course
