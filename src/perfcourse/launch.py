"""Where students open a lesson: the student publication's location, and the links built from it.

course.toml's [publication] names the one place students get the course: the GitHub repository
(and branch) that holds what `perfcourse publish` writes (release/ and the student guide, nothing
of source/, samples/ or the checks). Every launch link points into it: "Open in Colab"
(`perfcourse release` writes it into each release notebook, the site shows it) and, with
[hub] url, the course's JupyterHub through nbgitpuller, which clones that repository into the
student's server. When a setting is empty, no link is written: an address is never guessed.
Every function here takes the course's settings as read once (course.settings), never the file.
"""
from __future__ import annotations

from urllib.parse import quote, urlencode

from .course import Settings


def publication(settings: Settings) -> tuple[str, str] | None:
    """(repository "owner/name", branch) of the student publication; None where none is set."""
    return (settings.repository, settings.branch) if settings.repository else None


def notebook_path(lesson: str) -> str:
    """A lesson's notebook inside the publication (and inside the course: the same path)."""
    return f"release/{lesson}/{lesson}.ipynb"


def colab_link(settings: Settings, lesson: str) -> str | None:
    """The "Open in Colab" address of a lesson's notebook in the publication."""
    where = publication(settings)
    if where is None:
        return None
    repository, branch = where
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/{notebook_path(lesson)}"


def hub_link(settings: Settings, lesson: str) -> str | None:
    """The nbgitpuller address that clones the publication into the student's server on the
    course's JupyterHub and opens the lesson: needs [hub] url and [publication] repository."""
    where = publication(settings)
    if not settings.hub_url or where is None:
        return None
    repository, branch = where
    name = repository.split("/")[1]
    query = urlencode({"repo": f"https://github.com/{repository}", "branch": branch,
                       "urlpath": f"lab/tree/{name}/{notebook_path(lesson)}"}, quote_via=quote)
    return f"{settings.hub_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def links(settings: Settings, lesson: str) -> list[tuple[str, str]]:
    """(label, address) of every launch link configured for a lesson."""
    return [(label, link) for label, link in (("Open in Colab", colab_link(settings, lesson)),
                                              ("Open on the course's JupyterHub", hub_link(settings, lesson)))
            if link]
