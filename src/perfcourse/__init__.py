"""Tools of the JAX performance course.

The pipeline, one module per step:

  source/ --release.py--> release/ --(students)--> submitted/
          --autograde.py--> autograded/ + gradebook.db --> feedback/
  source/ --artifacts/execute.py (papermill)--> artifacts/<backend>/<lesson>.json
          --artifacts/render.py (matplotlib)--> artifacts/<backend>/<lesson>.png

`course.py` knows the course's layout; `cli.py` is the one command-line tool, `perfcourse`.
`checks/` holds what hidden tests call to grade the method rather than the clock.
"""
