"""The site stage: the course as a static website (`perfcourse site`, its entry `build.main`).

`build` writes the book's sources and runs Jupyter Book; `theme` is the command the MyST engine
runs to render the pages (`python -m perfcourse.site.theme`).
"""
