#!/usr/bin/env bash
# The course's tools for a TPU machine that reaches no package registry (docs/authors/tests.md, "On a
# TPU"): every package `perfcourse solved` and `perfcourse artifacts` import, at requirements-cpu.txt's
# pins, except JAX and what comes with it (the machine's own stay first), unpacked into one folder
# and packed as OUT (default tpu-site.tgz). There:
#   tar xzf tpu-site.tgz -C /tmp && export PYTHONPATH=$PYTHONPATH:/tmp/tpusite:$PWD/src PERFCOURSE_NO_TCP=1
#   python3 -m perfcourse.cli kernel jax-tpu --user && make test-tpu TPU_PYTHON=python3
# Run here, with pip and network access to PyPI; the wheels are for CPython 3.11 on x86-64 Linux.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${1:-tpu-site.tgz}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# What the two commands import, and what those need (nbgrader imports rapidfuzz; jax.export's
# serialization needs flatbuffers; Pallas's TPU module absl-py): names from requirements-cpu.txt.
wanted="papermill nbformat nbclient nbconvert ipykernel ipython matplotlib tqdm nbgrader rapidfuzz absl-py flatbuffers"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q -c requirements-cpu.txt $wanted
"$work/venv/bin/pip" freeze | grep -viE '^(jax|jaxlib|numpy|scipy|ml.dtypes|opt.einsum)==' \
  | grep -viE '^(jupyterlab|notebook|jupyterlab.server|jupyter.builder|babel|jedi|debugpy)==' > "$work/pins.txt"
mkdir "$work/tpusite"
"$work/venv/bin/pip" download -q --no-deps --only-binary=:all: --python-version 3.11.9 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 -d "$work/wheels" -r "$work/pins.txt"
"$work/venv/bin/pip" install -q --no-deps --no-compile --target "$work/tpusite" "$work"/wheels/*.whl
# What neither command runs: nbgrader's web pages, test suites (the folder travels within 64 MiB).
rm -rf "$work"/tpusite/{share,bin} "$work"/tpusite/nbgrader/{labextension,docs} \
  "$work"/tpusite/nbgrader/server_extensions/formgrader/static "$work"/tpusite/sqlalchemy/testing \
  "$work"/tpusite/matplotlib/mpl-data/sample_data
find "$work/tpusite" \( -name tests -o -name __pycache__ \) -type d -prune -exec rm -rf {} +
tar czf "$out" -C "$work" tpusite
echo "wrote $out ($(du -h "$out" | cut -f1))"
