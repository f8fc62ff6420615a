# nbgrader reads this file by name from the course root; the configuration itself is grader_config.py.
c = get_config()  # noqa: F821
load_subconfig("grader_config.py")  # noqa: F821
