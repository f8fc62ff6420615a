# nbgrader's configuration in a student's server (on JUPYTER_CONFIG_PATH, set by jupyterhub_config.py):
# which course, and where its exchange is. Students never see the course root or grader_config.py.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = os.environ["PERFCOURSE_COURSE_ID"]
c.Exchange.root = os.environ["PERFCOURSE_EXCHANGE"]
