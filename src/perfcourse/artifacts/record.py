"""The artifact file: the seed schema, its two hashes, and the check that finds stale ones.

contentHash  SHA-256 of the lesson's normalized source: for every cell of
             source/<lesson>/<lesson>.ipynb in order, its type, its tags and its source text
             (line endings as \\n, trailing whitespace of each line removed), serialized as
             canonical JSON. Outputs, execution counts, cell ids and other metadata do not count,
             so re-saving a notebook in another editor leaves the hash alone. The figure_code cell
             does not count either: it is a copy of figure.py, which rendererHash covers, so new
             drawing code needs a redraw (--render), not a new execution.
rendererHash SHA-256 of the bytes of artifacts/render.py followed by the bytes of
             artifacts/figure.py (one stream, in that order): the code that draws artifacts.
"""
from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path

from ..course import CourseError, lessons, read_notebook, source_notebook, write_atomic
from . import figure, render
from .notebook_figure import FIGURE_CODE_ID
from .execute import ExecutedLesson

SCHEMA_VERSION = 1
FIELDS = ("schemaVersion", "lessonId", "contentHash", "rendererHash", "kind", "generatedAt",
          "provenance", "environment", "stdout", "data")
OPTIONAL_FIELDS = ("diagram",)
ENVIRONMENT_FIELDS = ("backend", "deviceCount", "jax", "numpy", "matplotlib")
REQUIRED_BACKEND = "cpu"


def content_hash(nb) -> str:
    cells = [
        {
            "cell_type": cell.cell_type,
            "tags": list(cell.metadata.get("tags", [])),
            "source": "\n".join(line.rstrip() for line in cell.source.replace("\r\n", "\n").split("\n")),
        }
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade_id") != FIGURE_CODE_ID
    ]
    canonical = json.dumps(cells, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def renderer_hash() -> str:
    """SHA-256 of render.py's bytes then figure.py's: a change to either redraws the images."""
    return hashlib.sha256(Path(render.__file__).read_bytes() + Path(figure.__file__).read_bytes()).hexdigest()


def build(run: ExecutedLesson) -> dict:
    backend = run.environment["backend"]
    artifact = {
        "schemaVersion": SCHEMA_VERSION,
        "lessonId": run.lesson,
        "contentHash": content_hash(run.source),
        "rendererHash": renderer_hash(),
        "kind": "executed",
        "generatedAt": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "provenance": f"recorded_{backend}_computation",
        "environment": {key: run.environment[key] for key in ENVIRONMENT_FIELDS},
        "stdout": run.stdout,
        "data": run.data,
    }
    if run.diagram is not None:
        artifact["diagram"] = run.diagram
    return artifact


def paths(root: Path, backend: str, lesson: str) -> dict[str, Path]:
    folder = root / "artifacts" / backend
    return {"json": folder / f"{lesson}.json", "png": folder / f"{lesson}.png",
            "alt": folder / f"{lesson}.alt.txt"}


def write(root: Path, artifact: dict) -> dict[str, Path]:
    """Render first, then write the image, its alt text and the JSON, each atomically."""
    validate(artifact, "new artifact")
    png, alt = render.draw(artifact)
    where = paths(root, artifact["environment"]["backend"], artifact["lessonId"])
    write_atomic(where["png"], png)
    write_atomic(where["alt"], alt)
    write_atomic(where["json"], json.dumps(artifact, indent=2, ensure_ascii=False) + "\n")
    return where


def validate(artifact, name: str) -> None:
    """Raise one CourseError naming the first way `artifact` departs from the seed schema."""
    if not isinstance(artifact, dict):
        raise CourseError(f"{name}: an artifact is a JSON object")
    keys = set(artifact)
    missing = [k for k in FIELDS if k not in keys]
    extra = sorted(keys - set(FIELDS) - set(OPTIONAL_FIELDS))
    if missing or extra:
        raise CourseError(f"{name}: fields differ from the schema (missing {missing}, unexpected {extra})")
    if artifact["schemaVersion"] != SCHEMA_VERSION or artifact["kind"] != "executed":
        raise CourseError(f"{name}: expected schemaVersion {SCHEMA_VERSION} and kind 'executed'")
    environment = artifact["environment"]
    if not isinstance(environment, dict) or sorted(environment) != sorted(ENVIRONMENT_FIELDS):
        raise CourseError(f"{name}: environment must have exactly {', '.join(ENVIRONMENT_FIELDS)}")
    if artifact["provenance"] != f"recorded_{environment['backend']}_computation":
        raise CourseError(f"{name}: provenance {artifact['provenance']!r} does not name backend "
                          f"{environment['backend']!r}")
    render.check_data(artifact["data"], artifact.get("diagram"), name)


DRAWING_LEVELS = 2  # of 255 per channel: what antialiasing may round differently on another CPU


def same_drawing(committed: bytes, drawn: bytes) -> bool:
    """Is the committed PNG the one drawn here? Byte for byte, or pixel for pixel within
    DRAWING_LEVELS: matplotlib's antialiased edges round differently where the CPU's floating-point
    paths differ (performance-07's roofline, committed on one machine and drawn on an AMD EPYC
    without AVX-512: 13 of 779,200 pixels one level apart), while anything drawn differently
    (a number, a point, a label) moves pixels by tens of levels or more."""
    if committed == drawn:
        return True
    import io

    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        ours, theirs = (np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"), dtype=np.int16)
                        for data in (committed, drawn))
    except (UnidentifiedImageError, OSError, ValueError):  # not a PNG at all
        return False
    return ours.shape == theirs.shape and int(np.abs(ours - theirs).max(initial=0)) <= DRAWING_LEVELS


def check(root: Path, only: list[str] | None = None) -> list[str]:
    """Every problem with the committed artifacts: missing, stale, malformed or orphaned; with
    `only`, those of these lessons' artifacts (orphans belong to no lesson: not looked for)."""
    problems = []
    current = {lesson: content_hash(read_notebook(source_notebook(root, lesson))) for lesson in only or lessons(root)}
    renderer = renderer_hash()
    base = root / "artifacts"
    backends = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    for lesson in current:
        if not paths(root, REQUIRED_BACKEND, lesson)["json"].is_file():
            problems.append(f"artifacts/{REQUIRED_BACKEND}/{lesson}.json: missing "
                            f"(run 'perfcourse artifacts --lesson {lesson}')")
    for backend in backends:
        for json_path in sorted((base / backend).glob("*.json")):
            lesson = json_path.stem
            if only and lesson not in current:
                continue
            name = str(json_path.relative_to(root))
            try:
                artifact = json.loads(json_path.read_text(encoding="utf-8"))
                validate(artifact, name)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                problems.append(f"{name}: corrupt JSON ({exc})")
                continue
            except CourseError as exc:
                problems.append(str(exc))
                continue
            if lesson not in current:
                problems.append(f"{name}: no lesson {lesson!r} in source/ (orphaned artifact)")
                continue
            if artifact["lessonId"] != lesson or artifact["environment"]["backend"] != backend:
                problems.append(f"{name}: records lesson {artifact['lessonId']!r} on backend "
                                f"{artifact['environment']['backend']!r}, not what its path says")
                continue
            if artifact["contentHash"] != current[lesson] and backend == REQUIRED_BACKEND:
                problems.append(f"{name}: stale, the lesson's source changed since it was executed "
                                f"(run 'perfcourse artifacts --lesson {lesson} --kernel jax-{backend}')")
                continue
            if artifact["rendererHash"] != renderer:
                problems.append(f"{name}: drawn by an older renderer (run 'perfcourse artifacts --render')")
                continue
            png, alt = render.draw(artifact)
            where = paths(root, backend, lesson)
            for key, expected in (("png", png), ("alt", alt.encode("utf-8"))):
                same = same_drawing if key == "png" else bytes.__eq__
                if not where[key].is_file() or not same(where[key].read_bytes(), expected):
                    problems.append(f"{where[key].relative_to(root)}: missing or not drawn from {name} "
                                    f"(run 'perfcourse artifacts --render')")
    return problems


def earlier_versions(root: Path, only: list[str] | None = None) -> list[str]:
    """The accelerators' recordings of an earlier version of their lesson's source, one line each.

    Only the CPU's recordings are required to follow every change: CI has no accelerator, and a
    TPU's are recorded where one is lent (make test-tpu). Until then such a recording is kept, checked
    like the others, and shown as what it is: `--check` notes it without failing, and the site says
    on the lesson's page that the lesson has changed since."""
    notes = []
    for lesson in only or lessons(root):
        current = content_hash(read_notebook(source_notebook(root, lesson)))
        for json_path in sorted((root / "artifacts").glob(f"*/{lesson}.json")):
            if json_path.parent.name == REQUIRED_BACKEND:
                continue
            try:
                recorded = json.loads(json_path.read_text(encoding="utf-8")).get("contentHash")
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
                continue  # check() names it
            if recorded != current:
                notes.append(f"note: {json_path.relative_to(root)} records an earlier version of the lesson "
                             f"(record it again: 'perfcourse artifacts --lesson {lesson} "
                             f"--kernel jax-{json_path.parent.name}' on that backend)")
    return notes


def rerender(root: Path, only: list[str] | None = None) -> list[Path]:
    """Redraw every artifact's image and alt text from its JSON with the current renderer; with
    `only`, these lessons' artifacts, on every backend."""
    written = []
    for json_path in sorted((root / "artifacts").glob("*/*.json")):
        if only and json_path.stem not in only:
            continue
        try:
            artifact = json.loads(json_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CourseError(f"{json_path}: corrupt JSON ({exc})") from None
        validate(artifact, str(json_path))
        artifact["rendererHash"] = renderer_hash()
        written += write(root, artifact).values()
    return written
