"""requirements-cpu.txt pins the seeds' environment; environment.yml describes the same one."""
import os
import re
import sys
from importlib.metadata import version

import yaml
from conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)$")
SEED_ENVIRONMENT = {"jax": "0.9.2", "jaxlib": "0.9.2", "numpy": "2.4.4", "matplotlib": "3.10.8",
                    "nbgrader": "0.9.6", "papermill": "2.7.0"}


def requirement_lines():
    lines = (ROOT / "requirements-cpu.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def pins():
    return {PIN.match(line).group(1).lower().replace("_", "-"): PIN.match(line).group(2)
            for line in requirement_lines()}


def test_every_requirement_is_pinned_exactly():
    loose = [line for line in requirement_lines() if not PIN.match(line)]
    assert not loose, f"requirements-cpu.txt lines without an exact == pin: {loose}"


def test_seed_versions_are_pinned():
    found = pins()
    for name, wanted in SEED_ENVIRONMENT.items():
        assert found.get(name) == wanted, f"{name} should be pinned to {wanted}, found {found.get(name)}"
    assert found["jupyterlab"].startswith("4."), "the course runs on JupyterLab 4"


# `make test-newest-jax` runs this suite with jax and jaxlib upgraded past their pins.
NEWEST_JAX = os.environ.get("PERFCOURSE_NEWEST_JAX") == "1"
UPGRADED = {"jax", "jaxlib"} if NEWEST_JAX else set()


def test_this_environment_has_the_pinned_versions():
    wrong = {name: (want, version(name)) for name, want in pins().items()
             if name not in UPGRADED and version(name) != want}
    assert not wrong, f"installed versions differ from requirements-cpu.txt: {wrong}"
    for name in UPGRADED:
        installed = tuple(int(p) for p in version(name).split(".")[:3])
        pinned = tuple(int(p) for p in pins()[name].split(".")[:3])
        assert installed > pinned, f"the newest-JAX run should have {name} newer than {pins()[name]}"


def parse_environment_yml():
    """environment.yml's conda dependencies and its pip list."""
    spec = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in spec["dependencies"] if isinstance(d, str)]
    pip = [item for d in spec["dependencies"] if isinstance(d, dict) for item in d.get("pip", [])]
    return conda, pip


def test_environment_yml_agrees_with_requirements():
    conda, pip = parse_environment_yml()
    assert pip == ["-r requirements-cpu.txt"], f"environment.yml's pip part must take requirements-cpu.txt only: {pip}"
    assert "pip" in conda
    python = [d for d in conda if d.startswith("python")]
    assert python == [f"python={sys.version_info.major}.{sys.version_info.minor}"], (
        f"environment.yml asks for {python}; requirements-cpu.txt was resolved for "
        f"Python {sys.version_info.major}.{sys.version_info.minor}")
    # Nothing is pinned twice: conda's list names no package that requirements-cpu.txt pins.
    pinned = pins()
    doubled = [d for d in conda if re.split(r"[=<>]", d)[0].lower() in pinned]
    assert not doubled, f"pinned both in environment.yml and requirements-cpu.txt: {doubled}"


def test_the_package_declares_ranges_that_hold_the_pins():
    """pyproject.toml's dependencies: each a range (an install of the package alone gets a tested
    version), each holding requirements-cpu.txt's pin, and every third-party module the course
    imports declared."""
    import tomllib

    from packaging.requirements import Requirement

    declared = [Requirement(line) for line in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    pinned = pins()
    for requirement in declared:
        name = requirement.name.lower().replace("_", "-")
        assert name in pinned, f"pyproject.toml declares {requirement.name}, which requirements-cpu.txt does not pin"
        assert requirement.specifier, f"pyproject.toml: {requirement.name} has no version range"
        assert requirement.specifier.contains(pinned[name]), \
            f"pyproject.toml: {requirement} does not hold the pinned {name}=={pinned[name]}"
    names = {r.name.lower().replace("_", "-") for r in declared}
    # The distributions behind the modules src/perfcourse imports (the standard library aside).
    for distribution in ("jax", "jaxlib", "numpy", "matplotlib", "nbgrader", "nbformat", "nbclient", "nbconvert",
                         "papermill", "jupyter-client", "ipykernel", "ipython", "traitlets", "pyzmq", "pygments",
                         "sqlalchemy", "alembic", "distributed", "tqdm", "ml-dtypes", "pillow", "bleach"):
        assert distribution in names, f"pyproject.toml does not declare {distribution}, which the course imports"
