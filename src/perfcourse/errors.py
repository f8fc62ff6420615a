"""The one error type every step of the course raises for a problem the user can act on.

At the bottom of the package: the course's layout (course.py) and the bridge to nbgrader
(nbgrader_bridge.py) both raise it, and neither imports the other for it.
"""


class CourseError(Exception):
    """A problem the user can act on; the tool prints it as one line and exits non-zero."""
