"""Where students open a lesson: the student publication's location, and the links built from it.

course.toml's [publication] names the one place students get the course: the GitHub repository
(and branch) that holds what `perfcourse publish` writes (release/ and the student guide, nothing
of source/, samples/ or the checks). Every launch link points into it: "Open in Colab"
(`perfcourse release` writes it into each release notebook, the site shows it) and, with
[hub] url, the course's JupyterHub through nbgitpuller, which clones that repository into the
student's server. When a setting is empty, no link is written: an address is never guessed.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, urlencode

from .course import COURSE_SETTINGS, CourseError, section

REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def publication(root: Path) -> tuple[str, str] | None:
    """(repository "owner/name", branch) of the student publication; None where none is set."""
    path = root / COURSE_SETTINGS
    if section(root, "colab").get("repository"):
        raise CourseError(f"{path}: [colab] repository is now [publication] repository, the repository "
                          "students get (perfcourse publish writes it): move the setting there")
    where = section(root, "publication")
    repository, branch = where.get("repository", ""), where.get("branch", "main")
    if not repository:
        return None
    if not isinstance(repository, str) or not REPOSITORY.match(repository):
        raise CourseError(f"{path}: [publication] repository must be 'owner/name', got {repository!r}")
    if not isinstance(branch, str) or not branch or any(ch.isspace() for ch in branch):
        raise CourseError(f"{path}: [publication] branch must be a branch name, got {branch!r}")
    return repository, branch


def notebook_path(lesson: str) -> str:
    """A lesson's notebook inside the publication (and inside the course: the same path)."""
    return f"release/{lesson}/{lesson}.ipynb"


def colab_link(root: Path, lesson: str) -> str | None:
    """The "Open in Colab" address of a lesson's notebook in the publication."""
    where = publication(root)
    if where is None:
        return None
    repository, branch = where
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/{notebook_path(lesson)}"


def hub_link(root: Path, lesson: str) -> str | None:
    """The nbgitpuller address that clones the publication into the student's server on the
    course's JupyterHub and opens the lesson: needs [hub] url and [publication] repository."""
    url = section(root, "hub").get("url", "")
    # A set url is checked even without a publication, so a wrong one is found before it is used.
    if url != "" and (not isinstance(url, str) or not url.startswith(("https://", "http://"))
                      or any(c.isspace() for c in url)):
        raise CourseError(f"{root / COURSE_SETTINGS}: [hub] url must be the hub's http(s) address, got {url!r}")
    where = publication(root)
    if not url or where is None:
        return None
    repository, branch = where
    name = repository.split("/")[1]
    query = urlencode({"repo": f"https://github.com/{repository}", "branch": branch,
                       "urlpath": f"lab/tree/{name}/{notebook_path(lesson)}"}, quote_via=quote)
    return f"{url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def links(root: Path, lesson: str) -> list[tuple[str, str]]:
    """(label, address) of every launch link configured for a lesson."""
    return [(label, link) for label, link in (("Open in Colab", colab_link(root, lesson)),
                                              ("Open on the course's JupyterHub", hub_link(root, lesson)))
            if link]
