"""Code that runs inside a grading kernel, before any student code (see `evidence`)."""
