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



def __getattr__(name: str):
    """`__version__`, read when first asked for: importlib.metadata costs every process that
    imports the package (a sandbox launcher, each kernel's agent) some 40 ms it rarely needs."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("perfcourse")  # pyproject.toml's, as installed
    except PackageNotFoundError:  # run from a checkout that was never installed
        found = "unknown"
    globals()["__version__"] = found
    return found
