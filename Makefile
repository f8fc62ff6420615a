# The course's commands. Each target sets up .venv by itself on a fresh clone.
#   make demo       release the lessons, grade the sample class and four hostile submissions, print the table
#   make test       ruff, then the whole test suite: the fast tier, then the end-to-end tier
#   make check      ruff, then the fast tier without its slow tests (no kernels, no notebooks executed; under a
#                   minute on 2 cores)
#   make release    source/ -> release/ (nbgrader generate_assignment)
#   make grade      autograde everything in submitted/
#   make report     what the class got wrong: report/index.html from the gradebook and autograded/
#   make site       the course as a static website (Jupyter Book 2, offline): _site/html/
#   make artifacts  re-execute every lesson on the jax-cpu kernel and rewrite artifacts/cpu/
#   make lab        JupyterLab (with nbgrader's extensions) on the course, for the instructor
#   make student-lab  JupyterLab as a student has it: on the student publication (_student/), with the
#                   Assignments panel and Validate on the course's exchange, in a sandbox where nothing
#                   of source/ or the gradebook is mounted (terminals and kernels included)
#   make hub        the course's JupyterHub on this machine, for a trial (root; demo users)
#   make test-newest-jax  the test suite on the newest jax/jaxlib that install for this Python
#   make test-nightly     what is too long for every change: the whole demo class on a Dask cluster
#   make test-tpu   on a machine with a TPU (Colab's TPU runtime, a Cloud TPU VM; docs/authors/tests.md):
#                   every release notebook solved, then every lesson's artifact into artifacts/tpu/

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NEWEST := .venv-newest-jax
COLAB := .venv-colab
SITE_STAMP := $(VENV)/.site-installed
HUB := deploy/jupyterhub
# A student's Jupyter settings (nbgrader's course id and exchange; no Formgrader), beside this Makefile
STUDENT_CONFIG := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))/deploy/jupyterhub/student

.PHONY: site demo test check test-newest-jax test-nightly test-tpu release grade report artifacts artifacts-check lab student-lab hub hub-proxy clean

$(STAMP): requirements-cpu.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet -r requirements-cpu.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/perfcourse kernel jax-cpu
	@# Grading sandboxes student code with bubblewrap: install it where we may, else say how.
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } || \
	  echo "NOTE: bubblewrap is missing; 'perfcourse grade' needs it (apt-get install bubblewrap)"
	touch $(STAMP)

# The same environment with jax and jaxlib upgraded to the newest release (not pinned on purpose).
$(NEWEST)/.installed: requirements-cpu.txt pyproject.toml
	test -x $(NEWEST)/bin/python || $(PYTHON) -m venv $(NEWEST)
	$(NEWEST)/bin/python -m pip install --quiet --upgrade pip==26.3
	$(NEWEST)/bin/python -m pip install --quiet -r requirements-cpu.txt
	$(NEWEST)/bin/python -m pip install --quiet --upgrade jax jaxlib
	$(NEWEST)/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(NEWEST)/bin/perfcourse kernel jax-cpu
	touch $@

# What Colab offers a student: jax, numpy and matplotlib (at the course's pins) and ipykernel, nothing
# of the course's. tests/test_colab.py runs every release notebook, solved, on this environment.
$(COLAB)/.installed: requirements-cpu.txt
	test -x $(COLAB)/bin/python || $(PYTHON) -m venv $(COLAB)
	$(COLAB)/bin/python -m pip install --quiet -c requirements-cpu.txt jax jaxlib numpy matplotlib ipykernel
	touch $@

# Jupyter Book 2 for the course site, into .venv at requirements-site.txt's pins (constrained by
# requirements-cpu.txt's, so nothing else changes). It runs on Node.js.
$(SITE_STAMP): $(STAMP) requirements-site.txt
	@command -v node >/dev/null || { echo "make site: node is missing: apt-get install nodejs" >&2; exit 1; }
	$(BIN)/python -m pip install --quiet -c requirements-cpu.txt -r requirements-site.txt
	touch $@

demo: $(STAMP)
	$(BIN)/perfcourse demo

site: $(SITE_STAMP)
	$(BIN)/perfcourse site

# The suite starts hundreds of Python processes (pytest's workers, perfcourse commands, kernels):
# they compile the course's modules and the tests once and reuse the bytecode (__pycache__/,
# git-ignored), even where the environment asks for none (PYTHONDONTWRITEBYTECODE, set on some
# CI images), which would compile them again in every process.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
NEWEST_PYTEST := env -u PYTHONDONTWRITEBYTECODE $(NEWEST)/bin/python -m pytest
# The fast tier spreads over every core (pytest-xdist). The end-to-end tier runs on two workers:
# one grades the demo and hostile classes (xdist_group "graded-demo"; its grading pool keeps the
# cores busy), the other runs the rest, most of which waits on one kernel or server at a time.
FAST := -m "not e2e and not nightly" -n logical --dist worksteal
# make check: the fast tier without its slow tests (marked `slow`: about a second each or more), so
# that it answers in under a minute on 2 cores; make test runs them all.
CHECK := -m "not e2e and not nightly and not slow" -n logical --dist worksteal
E2E := -m "e2e and not nightly" -n 2 --dist loadgroup --durations=15
# make test and make check lint first with ruff (pyproject.toml's [tool.ruff]: pycodestyle and
# pyflakes): seconds.
RUFF := $(BIN)/ruff check .
# The JupyterHub test's proxy comes from npm: installed when npm is there (.ci/run installs it); the
# site test's Jupyter Book (requirements-site.txt) when node is there.
test: $(STAMP) $(COLAB)/.installed $(if $(shell command -v npm),$(HUB)/node_modules/.installed) $(if $(shell command -v node),$(SITE_STAMP))
	$(RUFF)
	$(PYTEST) $(FAST)
	$(PYTEST) $(E2E)

check: $(STAMP)
	$(RUFF)
	$(PYTEST) $(CHECK)

# The demo class graded locally and again through a 2-worker Dask cluster over TLS into PostgreSQL
# (tests/test_cluster.py): about 15 minutes on 2 cores, so not part of make test.
test-nightly: $(STAMP)
	$(PYTEST) -m nightly

test-newest-jax: $(NEWEST)/.installed $(COLAB)/.installed
	PERFCOURSE_NEWEST_JAX=1 $(NEWEST_PYTEST) $(FAST)
	PERFCOURSE_NEWEST_JAX=1 $(NEWEST_PYTEST) $(E2E)

# The course on a TPU, with the Python that has requirements-tpu.txt installed (Colab's own, or a
# Cloud TPU VM's venv): no .venv of its own, since Colab's runtime is the environment students get.
# Both steps run whatever the first found, and the target fails if either did.
TPU_PYTHON ?= python3
test-tpu:
	$(TPU_PYTHON) -m perfcourse.cli kernel jax-tpu --user
	status=0; \
	$(TPU_PYTHON) -m perfcourse.cli solved --kernel jax-tpu || status=1; \
	$(TPU_PYTHON) -m perfcourse.cli artifacts --kernel jax-tpu || status=1; \
	$(TPU_PYTHON) -m perfcourse.cli artifacts --check || status=1; \
	exit $$status

release: $(STAMP)
	$(BIN)/perfcourse release

grade: $(STAMP)
	$(BIN)/perfcourse grade

report: $(STAMP)
	$(BIN)/perfcourse report

artifacts: $(STAMP)
	$(BIN)/perfcourse artifacts

artifacts-check: $(STAMP)
	$(BIN)/perfcourse artifacts --check

# JupyterLab refuses to run as root unless told; containers and CI run as root. LAB_ARGS adds
# JupyterLab options (the browser test sets its port and token through it), but not the root
# folder, which is the course. exchange/ must exist before Formgrader offers Release and Collect.
LAB_ARGS ?=
lab: $(STAMP)
	mkdir -p exchange
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter lab --notebook-dir=. $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

# A student's JupyterLab on this machine: `perfcourse publish` writes what students get into
# STUDENT_DIR (git-ignored; a student's fetched lessons there stay when it is written again), and
# JupyterLab serves that folder with a student's nbgrader settings (deploy/jupyterhub/student/:
# this course's id and exchange, the Assignments panel and Validate, no Formgrader). Validate saves
# into STUDENT_DIR, never into the tracked release/. The Assignments panel lists the lessons the
# instructor released to the exchange (make lab: Formgrader > Release; or `nbgrader
# release_assignment LESSON`): it is empty until then, and the notebooks under release/ are there.
STUDENT_DIR ?= _student
COURSE_ID = $$($(BIN)/python -c 'from pathlib import Path; from perfcourse.nbgrader_bridge import coursedir; print(coursedir(Path(".")).course_id)')
# The server runs in bubblewrap (src/perfcourse/student_lab.py) where only the publication, the
# exchange, the student's settings and the Python environment are mounted: no terminal or kernel
# reaches source/ or the gradebook; as root it runs as nobody. STUDENT_LAB_SHARE: folders to mount
# writable as well (a test's scratch Jupyter settings); never one that holds the course.
STUDENT_LAB_SHARE ?=
student-lab: $(STAMP)
	$(BIN)/perfcourse publish $(STUDENT_DIR)
	mkdir -p exchange
	$(BIN)/python -m perfcourse.student_lab $(STUDENT_DIR) --exchange exchange --settings "$(STUDENT_CONFIG)" \
	  --course-id "$(COURSE_ID)" $(foreach folder,$(STUDENT_LAB_SHARE),--share $(folder)) -- $(LAB_ARGS)

# JupyterHub for a class on one server (deploy/jupyterhub/): as root, creates the demo users
# pc-instructor, pc-student1 and pc-student2, the instructor's course and the shared exchange,
# and runs the hub on http://127.0.0.1:$(HUB_PORT) until Ctrl+C. Its proxy,
# configurable-http-proxy, comes from npm at the version package-lock.json pins.
HUB_PORT ?= 8000
$(HUB)/node_modules/.installed: $(HUB)/package.json $(HUB)/package-lock.json
	@command -v npm >/dev/null || { echo "make hub: npm is missing: apt-get install nodejs npm" >&2; exit 1; }
	cd $(HUB) && npm ci --no-audit --no-fund
	touch $@

hub-proxy: $(HUB)/node_modules/.installed

hub: $(STAMP) $(HUB)/node_modules/.installed
	$(BIN)/python $(HUB)/trial.py --port $(HUB_PORT)

clean:
	rm -rf $(VENV) $(NEWEST) $(COLAB) $(HUB)/node_modules _site _student submitted autograded/*/ feedback exchange gradebook.db grades.csv report \
	  $(patsubst source/%,%,$(wildcard source/*))
