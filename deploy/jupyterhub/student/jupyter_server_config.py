# A student's server: the Assignments panel and Validate, none of nbgrader's instructor tools.
c = get_config()  # noqa: F821
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}
