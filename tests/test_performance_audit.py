"""The performance-audit project: check.py as students run it, its robustness, and the shared checks.

check.py runs as a subprocess, as the README's commands do: from the repository root, from another
directory, and from a copy of the repository where the course's package is not importable. The
checks in perfcourse.checks.audit are also exercised directly with right and wrong implementations:
each wrong one fails with a message that names the fault, and no timing decides anything.
"""
from __future__ import annotations

import ast
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest

from conftest import ROOT, SEEDS

from perfcourse.checks import audit

pytestmark = pytest.mark.e2e  # kernels, graded classes or executed notebooks (make test, not make check)

PROJECT = ROOT / "projects" / "performance-audit"
CHECK = PROJECT / "tests" / "check.py"
SOLUTION = (PROJECT / "solution" / "model.py").read_text()


def check(*args, cwd=ROOT, python=(sys.executable,), env=None):
    proc = subprocess.run([*python, str(CHECK), *args], cwd=cwd, text=True, capture_output=True, env=env)
    proc.lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    return proc


def passed(proc, *stages):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line.split(":")[0] for line in proc.lines] == [f"PASS performance-audit stage {s}" for s in stages]


def one_line(proc, status):
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert len(proc.lines) == 1, proc.lines
    assert "Traceback" not in proc.stderr
    return proc.lines[0]


def scratch_repository(tmp_path, **implementations) -> Path:
    """The project and the course's checks in a fresh folder, plus extra implementations by name."""
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(PROJECT, repo / "projects" / "performance-audit", ignore=ignore)
    shutil.copytree(ROOT / "src" / "perfcourse", repo / "src" / "perfcourse", ignore=ignore)
    for name, source in implementations.items():
        (repo / "projects" / "performance-audit" / name).mkdir()
        (repo / "projects" / "performance-audit" / name / "model.py").write_text(source)
    return repo


def variant(old: str, new: str) -> str:
    assert old in SOLUTION, old
    return SOLUTION.replace(old, new)


# ------------------------------------------------------------------------------------------------
# The seed's commands


@pytest.mark.parametrize("stage", [1, 2, 3, 4])
def test_solution_passes_every_stage_from_the_root(stage, tmp_path):
    extra = ["--evidence-dir", str(tmp_path / "evidence")] if stage >= 3 else []
    proc = check("--implementation", "solution", "--stage", str(stage), *extra)
    passed(proc, *([1, 2, 3, 4] if stage == 4 else [stage]))
    if stage >= 3:
        assert sorted(p.name for p in (tmp_path / "evidence").iterdir()) == ["report.json", "workload.jaxpr.txt"]


@pytest.mark.parametrize("stage", [1, 2, 3, 4])
def test_starter_fails_each_stage_saying_what_to_write(stage, tmp_path):
    proc = check("--implementation", "starter", "--stage", str(stage), "--evidence-dir", str(tmp_path / "ev"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.lines[-1].startswith(f"FAIL performance-audit stage {stage}: ")
    if stage < 4:
        assert len(proc.lines) == 1
    else:
        assert [line.split(":")[0] for line in proc.lines] == [
            f"FAIL performance-audit stage {s}" for s in (1, 2, 3, 4)]
    first = proc.lines[0]
    assert "raised NotImplementedError: write" in first and "starter/model.py" in first  # the starter's own words
    assert re.search(r"write (workload|first_call_evidence)\(", first)


def test_starter_stage_1_names_the_workload_and_its_counter():
    line = one_line(check("--implementation", "starter", "--stage", "1"), 1)
    assert line.startswith("FAIL performance-audit stage 1: workload(I, I) raised NotImplementedError")
    assert "TRACE_COUNT" in line and "jnp.tanh(a @ b)" in line


def test_from_another_directory_evidence_is_relative_to_it(tmp_path):
    passed(check("--implementation", "solution", "--stage", "1", cwd=tmp_path), 1)
    proc = check("--implementation", "solution", "--stage", "3", "--evidence-dir", "evidence/run-1", cwd=tmp_path)
    passed(proc, 3)
    assert "evidence/run-1/report.json" in proc.lines[0].replace(os.sep, "/")
    assert (tmp_path / "evidence" / "run-1" / "report.json").is_file()


def test_without_the_course_package_and_with_the_default_evidence_dir(tmp_path):
    """A fresh clone: only the requirements installed, check.py finds the checks in src/ itself."""
    repo = scratch_repository(tmp_path)
    site = sysconfig.get_paths()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys([site["purelib"], site["platlib"]]))}
    python = (sys.executable, "-S")  # no site: the editable install's .pth file is not read
    probe = subprocess.run([*python, "-c", "import jax, numpy; import perfcourse"], cwd=tmp_path, env=env,
                           text=True, capture_output=True)
    assert probe.returncode != 0 and "No module named 'perfcourse'" in probe.stderr, probe.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([*python, str(repo / "projects" / "performance-audit" / "tests" / "check.py"),
                           "--implementation", "solution", "--stage", "4"],
                          cwd=elsewhere, env=env, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("PASS performance-audit stage 4")
    evidence = repo / "runs" / "performance-audit"
    assert sorted(p.name for p in evidence.iterdir()) == ["report.json", "workload.jaxpr.txt"]
    assert not list(elsewhere.iterdir())


def test_the_evidence_says_what_was_and_was_not_measured(tmp_path):
    passed(check("--implementation", "solution", "--stage", "3", "--evidence-dir", str(tmp_path)), 3)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["memory_measured"] is False
    assert report["trace_count"] == 2 and report["traced_shapes"] == [[16, 16], [32, 32]]
    assert report["timed_shapes"] == [[64, 64], [64, 64]] and report["dtype"] == "float32"
    assert len(report["steady_seconds"]) == 7
    assert report["steady_median_seconds"] == statistics.median(report["steady_seconds"])
    assert isinstance(report["first_call_seconds"], float)
    assert report["backend"] == jax.default_backend() and report["jax"] == jax.__version__
    assert report["numpy"] == np.__version__ and {"jaxlib", "python"} <= set(report)
    assert report["jaxpr_file"] == "workload.jaxpr.txt"
    jaxpr = (tmp_path / "workload.jaxpr.txt").read_text()
    assert "dot_general" in jaxpr and "tanh" in jaxpr and "f32[64,64]" in jaxpr
    assert "\x1b" not in jaxpr  # plain text, no terminal colours


def test_the_readme_has_the_seed_steps_verbatim():
    seed = SEEDS / "performance-audit.txt"  # the project's student text
    readme = (PROJECT / "README.md").read_text()
    commands = [line for line in seed.read_text().splitlines()
                if line.startswith(("python", "source "))]
    assert len(commands) == 7
    for line in commands:
        assert line in readme, line
    assert ".venv\\Scripts\\Activate.ps1" in readme
    reference = "python3 projects/performance-audit/tests/check.py --implementation solution --stage 4"
    assert reference in seed.read_text() and reference in readme
    assert "runs/" in (ROOT / ".gitignore").read_text().splitlines()


# ------------------------------------------------------------------------------------------------
# Robustness: one line and a non-zero exit


def test_a_missing_evidence_directory_is_created(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    passed(check("--implementation", "solution", "--stage", "3", "--evidence-dir", str(target)), 3)
    assert (target / "report.json").is_file()


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_an_unwritable_evidence_directory_is_named_and_nothing_runs(tmp_path, where):
    (tmp_path / "a-file").write_text("not a directory")
    for stage in ("3", "4"):
        line = one_line(check("--implementation", "solution", "--stage", stage,
                              "--evidence-dir", str(tmp_path / where)), 1)
        assert line.startswith(f"FAIL performance-audit stage {stage}: cannot write evidence to ")
        assert str(tmp_path / where) in line
    assert (tmp_path / "a-file").read_text() == "not a directory"


def test_a_read_only_evidence_directory_is_named(tmp_path):
    # File modes do not stop root, so the directory is made read-only the way a mount is: the
    # check runs under bubblewrap (which grading needs anyway) with the directory bound read-only.
    locked = tmp_path / "locked"
    locked.mkdir()
    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap is needed (apt-get install bubblewrap; make test installs it)"
    sandbox = (bwrap, "--bind", "/", "/", "--ro-bind", str(locked), str(locked), "--dev", "/dev",
               "--proc", "/proc", "--", sys.executable)
    line = one_line(check("--implementation", "solution", "--stage", "3", "--evidence-dir", str(locked),
                          python=sandbox), 1)
    assert "cannot write evidence to" in line and str(locked) in line
    assert not list(locked.iterdir())


@pytest.mark.parametrize("name", ["nosuch", "../solution", "tests", "solution/"])
def test_an_unknown_implementation_is_named(name):
    line = one_line(check("--implementation", name, "--stage", "1"), 2)
    assert line.startswith("performance-audit: error: no implementation named ")
    assert repr(name) in line and "solution, starter" in line


@pytest.mark.parametrize("args,fragment", [
    (["--implementation", "solution", "--stage", "5"], "invalid choice"),
    (["--implementation", "solution"], "--stage"),
    (["--stage", "1"], "--implementation"),
])
def test_a_wrong_command_line_is_one_line(args, fragment):
    line = one_line(check(*args), 2)
    assert line.startswith("performance-audit: error: ") and fragment in line


def subprocess_check(repo: Path, implementation: str, stage: int, *extra):
    """check.py of a scratch repository, run from its root."""
    proc = subprocess.run([sys.executable, str(repo / "projects" / "performance-audit" / "tests" / "check.py"),
                           "--implementation", implementation, "--stage", str(stage), *extra],
                          cwd=repo, text=True, capture_output=True)
    proc.lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    return proc


def test_a_model_that_does_not_import_is_one_line(tmp_path):
    repo = scratch_repository(tmp_path, broken="def workload(a, b:\n")
    line = one_line(subprocess_check(repo, "broken", 1), 1)
    assert line.startswith("FAIL performance-audit stage 1: cannot import broken/model.py: SyntaxError")


# ------------------------------------------------------------------------------------------------
# Wrong implementations fail the stage they should, through check.py


MEAN_NOT_MEDIAN = variant("""    median = statistics.median(steady_seconds)
    low, high""", """    median = statistics.mean(steady_seconds)
    low, high""")
COUNTS_CALLS = variant("""@jax.jit
def workload(a, b):
    \"\"\"tanh of the matrix product a @ b, for any compatible shapes, compiled with jax.jit.\"\"\"
    global TRACE_COUNT
    TRACE_COUNT += 1  # plain Python: runs while JAX traces, never when the compiled program runs
    return jnp.tanh(a @ b)
""", """def _count():
    global TRACE_COUNT
    TRACE_COUNT += 1


@jax.jit
def workload(a, b):
    jax.debug.callback(_count)
    return jnp.tanh(a @ b)
""")
NO_MEMORY_FLAG = variant('    report["memory_measured"] = False\n', "")
BEYOND_THE_SLOWEST = variant('"one_time_is_real": bool(first_call_seconds > high),',
                             '"one_time_is_real": first_call_seconds > max(steady_seconds),')
ABOVE_THE_MEDIAN = variant('"one_time_is_real": bool(first_call_seconds > high),', '"one_time_is_real": one_time > 0,')
ON_THE_QUARTILE = variant('"one_time_is_real": bool(first_call_seconds > high),',
                          '"one_time_is_real": first_call_seconds >= high,')
FULL_RANGE = variant('"steady_middle_half_seconds": [float(low), float(high)],',
                     '"steady_middle_half_seconds": [min(steady_seconds), max(steady_seconds)],')


@pytest.mark.parametrize("name,source,stage,message", [
    ("mean_not_median", MEAN_NOT_MEDIAN, 1, "steady_median_seconds is not right (timings 1 of 5)"),
    ("beyond_the_slowest", BEYOND_THE_SLOWEST, 1, "one_time_is_real is False, not True (timings 2 of 5)"),
    ("counts_calls", COUNTS_CALLS, 2, "it counts calls, not traces"),
    ("no_memory_flag", NO_MEMORY_FLAG, 3, 'the report must say "memory_measured": false explicitly'),
])
def test_check_py_fails_wrong_implementations_at_their_stage(tmp_path, name, source, stage, message):
    # Stage 4 runs stages 1 to 3 as each runs alone (a stage alone prints its one line: the starter's
    # test above), so one run shows the wrong stage's line and that the others still pass.
    repo = scratch_repository(tmp_path, **{name: source})
    proc = subprocess_check(repo, name, 4)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert [line.split(":")[0] for line in proc.lines] == [
        f"{'FAIL' if s in (stage, 4) else 'PASS'} performance-audit stage {s}" for s in (1, 2, 3, 4)], proc.lines
    assert message in proc.lines[stage - 1], proc.lines
    assert proc.lines[-1] == "FAIL performance-audit stage 4: 1 of 3 stages did not pass (see above)"


def test_no_evidence_is_written_for_a_report_that_fails(tmp_path):
    repo = scratch_repository(tmp_path, no_memory_flag=NO_MEMORY_FLAG)
    assert subprocess_check(repo, "no_memory_flag", 3).returncode == 1
    assert not list((repo / "runs" / "performance-audit").iterdir())


# ------------------------------------------------------------------------------------------------
# The shared checks, called directly


def solution_module():
    namespace = {"__name__": "performance_audit_solution_test"}
    exec(compile(SOLUTION, str(PROJECT / "solution" / "model.py"), "exec"), namespace)
    return namespace


def implementation(**replace):
    namespace = solution_module()
    namespace.update(replace)
    return audit.Implementation.from_namespace(namespace, "test")


def test_starter_and_solution_define_the_same_functions():
    def signatures(path):
        tree = ast.parse(path.read_text())
        return {node.name: ast.dump(node.args) for node in tree.body if isinstance(node, ast.FunctionDef)}
    starter, solution = signatures(PROJECT / "starter" / "model.py"), signatures(PROJECT / "solution" / "model.py")
    assert starter == solution and set(audit.Implementation.PARTS) <= set(solution)


@pytest.mark.parametrize("workload,message", [
    (lambda a, b: jnp.tanh(a @ b), "must be compiled with jax.jit"),
    (jax.jit(lambda a, b: a @ b), "diagonal runs from 1.000000 to 1.000000 (expected 0.761594)"),
    (jax.jit(lambda a, b: jnp.tanh(a) @ jnp.tanh(b)), "differs from NumPy"),
    (jax.jit(lambda a, b: jnp.tanh(a @ b).astype(jnp.bfloat16)), "float32 array"),
])
def test_wrong_workloads_fail_stage_1(workload, message):
    with pytest.raises(audit.AuditFailure, match=re.escape(message)):
        audit.check_workload(workload)


def test_the_workload_check_reports_the_identity():
    found = audit.check_workload(solution_module()["workload"])
    assert math.isclose(found["diagonal"], 0.761594, abs_tol=1e-6) and found["off_diagonal"] == 0


def test_timings_never_decide():
    """A synchronized timer on a machine so slow that every measurement takes an extra 20 ms passes."""
    def slow_but_synchronized(fn, *args, steady_calls=7):
        def once():
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            time.sleep(0.02)
            return time.perf_counter() - start
        return once(), [once() for _ in range(steady_calls)]
    impl = implementation(time_first_and_steady=slow_but_synchronized)
    assert audit.stage1(impl).startswith("tanh(I @ I) matches NumPy")


def test_the_first_call_evidence_is_read_from_timings_drawn_here():
    """Every kind of case is drawn, with no verdict on a near tie but the one on the 75th percentile;
    the solution passes; a mean for the median, a verdict of "slower than the slowest steady call",
    "above the median" or "on the 75th percentile", and a full range for the middle half are named."""
    for seed in range(20):
        cases = audit.first_call_cases(random.Random(seed))
        verdicts = [audit.expected_first_call(first, steady)["one_time_is_real"] for _, first, steady in cases]
        assert verdicts == [True, True, False, False, False]
        assert all(5 <= len(steady) <= 11 for _, _, steady in cases)
        _, first, steady = cases[1]  # above the middle half, yet a range or the slowest call hides it
        high = float(np.percentile(steady, 75))
        assert high < first < max(steady) and first - statistics.median(steady) <= max(steady) - min(steady)
        assert statistics.median(cases[2][2]) < cases[2][1] < float(np.percentile(cases[2][2], 75))
        assert cases[3][1] < statistics.median(cases[3][2])
        assert cases[4][1] == float(np.percentile(cases[4][2], 75))  # exactly, in floating point
        audit.check_first_call_evidence(solution_module()["first_call_evidence"], random.Random(seed))
    for source, message in ((MEAN_NOT_MEDIAN, "not their mean"), (BEYOND_THE_SLOWEST, "strictly above"),
                            (ABOVE_THE_MEDIAN, "above the median"), (ON_THE_QUARTILE, "on the 75th percentile"),
                            (FULL_RANGE, "not the fastest and slowest")):
        namespace = {"__name__": "variant"}
        exec(compile(source, "variant", "exec"), namespace)  # noqa: S102 (this file's own variants)
        for seed in range(5):
            with pytest.raises(audit.AuditFailure, match=message):
                audit.check_first_call_evidence(namespace["first_call_evidence"], random.Random(seed))


def test_first_call_evidence_must_be_values_of_the_right_kind():
    good = solution_module()["first_call_evidence"]
    for change, message in ((lambda d: {**d, "one_time_is_real": 1}, "one_time_is_real is 1"),
                            (lambda d: {k: v for k, v in d.items() if k != "steady_middle_half_seconds"},
                             "no 'steady_middle_half_seconds'"),
                            (lambda d: [d], "should return a dict")):
        with pytest.raises(audit.AuditFailure, match=re.escape(message)):
            audit.check_first_call_evidence(lambda first, steady: change(good(first, steady)))


def test_trace_counts_do_not_depend_on_what_ran_before():
    namespace = solution_module()
    for _ in range(2):
        counted = audit.check_trace_count(namespace["workload"], namespace["trace_count"])
        # n new shapes twice, one of them under another precision, a clear, a shape twice
        assert counted["traces"] == (counted["calls"] + 1) // 2
        counted = audit.count_traces(namespace["workload"], namespace["trace_count"])
        assert counted["trace_count"] == counted["after_repeat"] == 2


def drawn_protocol(seed):
    protocol = audit.TraceProtocol(random.Random(seed), np.random.default_rng(seed))
    steps = []
    while (step := protocol.next()) is not None:
        steps.append(step)
    return protocol, steps


def test_the_trace_protocol_is_fresh_and_has_its_structure():
    """New shapes (never the lesson's squares), each called twice, one called again under another
    precision after its first call, then a clear and a repeat; drawn one step at a time."""
    seen, orders = set(), set()
    for seed in range(30):
        protocol, steps = drawn_protocol(seed)
        inputs, kinds = protocol.inputs, [kind for (kind, _), _ in steps]
        assert len(inputs) in (2, 3) and kinds[-3:] == [audit.CLEAR, audit.CALL, audit.CALL]
        assert steps[-2][0] == steps[-1][0] and [t for _, t in steps[-3:]] == [0, 1, 0]
        before = steps[:-3]
        calls = [index for (kind, index), _ in before if kind == audit.CALL]
        assert sorted(calls) == sorted(list(range(len(inputs))) * 2)
        [(position, context)] = [(k, step) for k, step in enumerate(before) if step[0][0] == audit.CONTEXT]
        assert context[1] == 1 and context[0][1] in calls[:position]  # a shape already called, traced again
        called = set()
        for (kind, index), traces in before:
            if kind == audit.CALL:
                assert traces == int(index not in called)  # the first call at a shape traces, a repeat not
                called.add(index)
        assert sum(t for _, t in steps) == len(inputs) + 2
        orders.add(tuple(step for step, _ in steps))
        for a, b in inputs:
            assert a.dtype == b.dtype == np.float32 and a.shape[1] == b.shape[0]
            assert not (a.shape == b.shape and a.shape[0] in (16, 32, 64) and a.shape[0] == a.shape[1])
            seen.add((a.shape, b.shape))
    assert len(seen) > 20 and len(orders) > 10  # picked at random, not from a list


def test_a_counter_of_new_shapes_is_named():
    """Counts shapes in a set: right until jax.clear_caches() makes JAX trace a known shape again."""
    seen = set()

    @jax.jit
    def workload(a, b):
        seen.add((a.shape, b.shape))
        return jnp.tanh(a @ b)
    with pytest.raises(audit.AuditFailure, match="it counts new shapes, not traces"):
        audit.check_trace_count(workload, lambda: len(seen))


def test_the_counter_is_read_from_here_and_probes_only_clear_and_switch_precision(monkeypatch):
    """The check calls workload and reads the counter itself, step by step; the course's probes
    only clear JAX's caches and call workload under another precision. A probe that answers
    without doing its work makes JAX trace less, and an honest counter then shows it."""
    namespace = solution_module()
    real, asked = audit.remote.probe, []

    def recording(name, *args, **kwargs):
        asked.append(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(audit.remote, "probe", recording)
    calls = []

    def workload(a, b):
        calls.append((a.shape, b.shape))
        return namespace["workload"](a, b)
    workload.lower = namespace["workload"].lower
    counted = audit.check_trace_count(workload, namespace["trace_count"])
    assert set(asked) == {"audit.clear_caches", "audit.call_in_context"} and asked.count("audit.call_in_context") == 1
    assert len(calls) == counted["calls"]  # in this process the probe calls the same workload
    for skipped, message in [("audit.clear_caches", "after jax.clear_caches()"),
                             ("audit.call_in_context", "under another default matmul precision")]:
        def lazy(name, *args, skipped=skipped, **kwargs):
            if name == skipped:
                return {"precision": "highest", "error": None}
            return real(name, *args, **kwargs)
        monkeypatch.setattr(audit.remote, "probe", lazy)
        with pytest.raises(audit.AuditFailure, match=re.escape(message)):
            audit.check_trace_count(namespace["workload"], namespace["trace_count"])
    monkeypatch.setattr(audit.remote, "probe", lambda *a, **k: "PASS")
    with pytest.raises(audit.AuditFailure, match="was perfcourse.kernel.probes replaced"):
        audit.check_trace_count(namespace["workload"], namespace["trace_count"])


class ModelledCounter:
    """Not a trace counter: a model of JAX's cache. It counts the (shape, dtype) pairs workload is
    called at that are new since the last jax.clear_caches() (patched here), and, with
    `context=True`, keys them on the default matmul precision too."""

    def __init__(self, monkeypatch, context: bool):
        self.jitted = jax.jit(lambda a, b: jnp.tanh(a @ b))
        self.lower, self.context, self.seen, self.count = self.jitted.lower, context, set(), 0
        real_clear = jax.clear_caches

        def clear():
            self.seen.clear()
            real_clear()
        monkeypatch.setattr(jax, "clear_caches", clear)

    def __call__(self, a, b):
        key = (a.shape, b.shape, str(a.dtype), str(b.dtype))
        if self.context:
            key += (jax.config.jax_default_matmul_precision,)
        if key not in self.seen:
            self.seen.add(key)
            self.count += 1
        return self.jitted(a, b)


def test_a_model_of_the_cache_by_shapes_is_named(monkeypatch):
    """New shapes since the last clear, with the clear intercepted: right until another trace
    context makes JAX trace a shape it has a program for."""
    model = ModelledCounter(monkeypatch, context=False)
    with pytest.raises(audit.AuditFailure, match="under another default matmul precision .* it counts new shapes"):
        audit.check_trace_count(model, lambda: model.count)


def test_known_limit_a_model_of_the_cache_with_its_context_reads_like_a_counter(monkeypatch):
    """The limit the module's docstring states: a model of JAX's cache keyed on the trace context
    reads what JAX traces for every call the check makes, so no reading tells it apart."""
    model = ModelledCounter(monkeypatch, context=True)
    audit.check_trace_count(model, lambda: model.count)


def test_a_counter_that_never_moves_is_named():
    with pytest.raises(audit.AuditFailure, match="the trace counter did not move"):
        audit.check_trace_count(jax.jit(lambda a, b: jnp.tanh(a @ b)), lambda: 0)


def test_a_counter_around_the_call_counts_calls():
    compiled = jax.jit(lambda a, b: jnp.tanh(a @ b))
    calls = []

    def counted(a, b):
        calls.append(1)
        return compiled(a, b)
    with pytest.raises(audit.AuditFailure, match="it counts calls, not traces"):
        audit.check_trace_count(counted, lambda: len(calls))


def test_a_counter_that_is_not_an_int_is_named():
    namespace = solution_module()
    with pytest.raises(audit.AuditFailure, match="should return an int"):
        audit.check_trace_count(namespace["workload"], lambda: "2")


MEASURED = {"workload": "w", "dtype": "float32", "first_call_seconds": 0.5,
            "steady_seconds": [0.004, 0.001, 0.003, 0.002], "trace_count": 2, "traced_shapes": [[16, 16]]}


def good_report():
    return solution_module()["build_report"](dict(MEASURED))


@pytest.mark.parametrize("change,message", [
    (lambda r: r.pop("memory_measured"), 'must say "memory_measured": false explicitly'),
    (lambda r: r.update(memory_measured=None), "(it says null)"),
    (lambda r: r.update(memory_measured="false"), '(it says "false")'),
    (lambda r: r.update(steady_median_seconds=statistics.mean(MEASURED["steady_seconds"]) + 1e-3),
     "should be the median of steady_seconds"),
    (lambda r: r.update(first_call_seconds=0.25), "changes the measurement 'first_call_seconds'"),
    (lambda r: r.pop("trace_count"), "leaves out the measurement 'trace_count'"),
    (lambda r: r.pop("backend"), "should record 'backend'"),
    (lambda r: r.update(jax="0.0.1"), "should record 'jax'"),
    (lambda r: r.update(first_call_seconds=np.float32(0.5)), "not plain JSON"),
    (lambda r: r.update(first_call_seconds=math.nan), "not plain JSON"),
])
def test_wrong_reports_fail_stage_3(change, message):
    report = good_report()
    audit.check_report(report, MEASURED)
    change(report)
    with pytest.raises(audit.AuditFailure, match=re.escape(message)):
        audit.check_report(report, MEASURED)


def test_the_jaxpr_is_plain_text_with_the_workload():
    text = audit.capture_jaxpr(solution_module()["workload"])
    assert "\x1b" not in text and "dot_general" in text and "tanh" in text
    assert audit.jaxpr_arguments(text) == ["f32[64,64]", "f32[64,64]"]
    assert {"dot_general", "tanh"} <= audit.jaxpr_primitives(text)
    with pytest.raises(audit.AuditFailure, match="no tanh"):
        audit.capture_jaxpr(jax.jit(lambda a, b: a @ b))


def forging(monkeypatch, **answers):
    """Replace some of the course's probes, as a submission can in its own kernel."""
    real = audit.remote.probe

    def probe(name, *args, **kwargs):
        if name in answers:
            return answers[name](*args, **kwargs)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(audit.remote, "probe", probe)


def reference_export(fn, specs, **_):
    structs = [jax.ShapeDtypeStruct(tuple(shape), dtype) for shape, dtype in specs]
    return bytes(jax.export.export(jax.jit(lambda a, b: jnp.tanh(a @ b)))(*structs).serialize())


def reference_jaxpr(workload, size):
    square = jnp.ones((size, size), jnp.float32)
    return {"text": jax.make_jaxpr(jax.jit(lambda a, b: jnp.tanh(a @ b)))(square, square).pretty_print(
        use_color=False), "error": None}


def test_the_jaxpr_is_checked_against_workloads_own_program(monkeypatch):
    """A JAXPR and a program of tanh(a @ b) handed in for a workload that is not one: the program
    run here disagrees with workload's own results."""
    forging(monkeypatch, **{"programs.export": reference_export, "audit.capture_jaxpr": reference_jaxpr})
    with pytest.raises(audit.AuditFailure, match="give different results on the same inputs"):
        audit.capture_jaxpr(jax.jit(lambda a, b: jnp.tanh(a)))
    audit.capture_jaxpr(solution_module()["workload"])  # for the right workload, the same answers pass


@pytest.mark.parametrize("text,message", [
    ("{ lambda ; a:f32[32,32] b:f32[32,32]. let c:f32[32,32] = tanh a in (c,) }", "not one of workload"),
    ("{ lambda ; a:f32[64,64] b:f32[64,64]. let c:f32[64,64] = tanh a in (c,) }", "has no dot_general"),
    ("a JAXPR of workload with dot_general and tanh", "not one of workload"),
])
def test_a_jaxpr_text_that_is_not_the_programs_is_named(monkeypatch, text, message):
    forging(monkeypatch, **{"audit.capture_jaxpr": lambda *_: {"text": text, "error": None}})
    with pytest.raises(audit.AuditFailure, match=message):
        audit.capture_jaxpr(solution_module()["workload"])


def test_a_workload_with_a_debug_callback_is_exported_without_it():
    """The counts-calls sample's workload: jax.export cannot serialize its callback, which computes
    nothing; its program is examined without it."""
    calls = []

    @jax.jit
    def workload(a, b):
        jax.debug.callback(lambda: calls.append(1))
        return jnp.tanh(a @ b)
    assert "dot_general" in audit.capture_jaxpr(workload) and calls


def test_a_capture_traces_only_where_jax_has_no_trace():
    """What the notebook says about make_jaxpr: it shares the record of traces with calls."""
    namespace = solution_module()
    workload, count = namespace["workload"], namespace["trace_count"]
    jax.clear_caches()
    x, y = jnp.ones((16, 16), jnp.float32), jnp.ones((32, 32), jnp.float32)
    before = count()
    workload(x, x)
    jax.make_jaxpr(workload)(x, x)          # a shape already called: no trace
    assert count() - before == 1
    jax.make_jaxpr(workload)(y, y)          # a new shape: one trace ...
    workload(y, y)                          # ... and the call after it traces nothing new
    assert count() - before == 2
    jax.clear_caches()
    jax.make_jaxpr(workload)(x, x)          # after a clear, a shape called before traces again
    assert count() - before == 3


def test_stage_3_without_a_directory_writes_to_a_temporary_one_and_removes_it():
    """The notebook's way: the probe makes the directory, writes, reads back and removes it."""
    import tempfile
    before = set(Path(tempfile.gettempdir()).glob("performance-audit-*"))
    line = audit.stage3(implementation())
    assert line.startswith("wrote report.json and workload.jaxpr.txt in a temporary directory (removed)")
    assert set(Path(tempfile.gettempdir()).glob("performance-audit-*")) == before


def test_evidence_read_back_is_judged_here(monkeypatch):
    """A probe that says it wrote the files but hands back other text fails the stage."""
    real = audit.remote.probe

    def forged(name, *args, **kwargs):
        if name == "audit.write_evidence":
            return {"directory": "/nowhere", "listing": ["report.json", "workload.jaxpr.txt"], "error": None,
                    "files": {"report.json": '{"memory_measured": false}', "workload.jaxpr.txt": "x"}}
        return real(name, *args, **kwargs)
    monkeypatch.setattr(audit.remote, "probe", forged)
    with pytest.raises(audit.AuditFailure, match="differs from what was written"):
        audit.write_evidence(implementation())


def test_a_missing_piece_is_named():
    namespace = solution_module()
    del namespace["build_report"]
    with pytest.raises(audit.AuditFailure, match="does not define build_report"):
        audit.Implementation.from_namespace(namespace, "test")


def test_stage_4_names_every_failing_stage(tmp_path):
    impl = implementation(build_report=lambda m: dict(m))
    lines = []
    assert not audit.run_stage(4, impl, tmp_path, emit=lines.append)
    assert [line.split(":")[0] for line in lines] == [
        "PASS performance-audit stage 1", "PASS performance-audit stage 2",
        "FAIL performance-audit stage 3", "FAIL performance-audit stage 4"]


# ------------------------------------------------------------------------------------------------
# The notebook twin calls the same checks, and keeps its evidence out of the repository


def test_the_notebook_grades_with_the_same_checks_as_check_py():
    nb = nbformat.read(ROOT / "source" / "performance-audit" / "performance-audit.ipynb", as_version=4)
    hidden = {c.metadata["nbgrader"]["grade_id"]: c.source.split("### BEGIN HIDDEN TESTS")[1]
              for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
    assert hidden.keys() == {"test_workload", "test_first_call_evidence", "test_trace_count", "test_evidence",
                             "test_audit"}
    for grade_id, call in [("test_workload", "audit.check_workload("),
                           ("test_first_call_evidence", "audit.check_first_call_evidence("),
                           ("test_trace_count", "audit.check_trace_count("),
                           ("test_evidence", "audit.stage3("), ("test_audit", "audit.stage4(")]:
        assert call in hidden[grade_id], grade_id
        # The evidence is written in the student's kernel (a probe's temporary directory), not here.
        assert "TemporaryDirectory" not in hidden[grade_id]
    assert "audit.run_stage(" in CHECK.read_text()
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "EVIDENCE_DIR = Path(_evidence.name)" in code and "runs/" not in code
    assert '_evidence = tempfile.TemporaryDirectory(prefix="performance-audit-")' in code
    text = "\n".join(c.source for c in nb.cells)
    assert "a capture in between would change the count" not in text
    assert "at a shape already called since the last clear it adds nothing" in " ".join(text.split())


def test_a_function_carrying_a_jitted_twins_lower_is_not_jitted():
    """adversarial/performance-audit/lower-stapled-on.py: NumPy on the host, a jitted twin's `lower`
    and `trace` stapled on; right values, so only jax.jit's own type tells it apart."""
    twin = jax.jit(lambda a, b: jnp.tanh(a @ b))

    def workload(a, b):
        return np.tanh(np.asarray(a) @ np.asarray(b))
    workload.lower, workload.trace = twin.lower, twin.trace
    with pytest.raises(audit.AuditFailure, match="must be compiled with jax.jit"):
        audit.check_workload(workload)
    audit.check_workload(twin)
