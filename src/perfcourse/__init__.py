"""Tools of the JAX performance course.

The pipeline, one module per step:

  source/ --release.py--> release/ --(students)--> submitted/
          --grading/ (nbgrader autograde)--> autograded/ + gradebook.db --> feedback/
  source/ --artifacts/execute.py (papermill)--> artifacts/<backend>/<lesson>.json
          --artifacts/render.py (matplotlib)--> artifacts/<backend>/<lesson>.png

`course.py` knows the course's files; `nbgrader_bridge.py` is the one way to nbgrader (its
configuration, folders, apps and gradebook); `cli.py` is the one command-line tool, `perfcourse`.
`checks/` holds what hidden tests call to grade the method rather than the clock.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perfcourse")  # pyproject.toml's, as installed
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "unknown"
