"""The adversarial catalogue read without grading it: what an entry says of itself holds (fast tier;
tests/test_adversarial.py and the nightly tier grade the entries)."""
from __future__ import annotations

import pytest

from conftest import ROOT

from perfcourse import samples
from perfcourse.grading import code_scan

HOSTILE = samples.discover(ROOT, folder="adversarial", prefix="hostile")


def test_each_known_limit_is_marked_flagged_and_named_in_the_checks_known_limits():
    """An entry the grader over-scores says what it deserves (`# deserves:`) beside what it is
    graded (`# expect:`), in the cells it is over-scored in only, is flagged for a human, and
    docs/authors/checks.md names it."""
    known = (ROOT / "docs" / "authors" / "checks.md").read_text(encoding="utf-8")
    limits = [s for s in HOSTILE if s.deserved]
    assert limits
    for entry in limits:
        assert entry.expected is not None and entry.reasons, entry.case
        assert all(cell in entry.expected and points < entry.expected[cell]
                   for cell, points in entry.deserved.items()), entry.case
        assert f"adversarial/{entry.lesson}/{entry.case}.py" in known, entry.case


SCANNED = [entry for entry in HOSTILE if any(reason.startswith("code ") for reason in entry.reasons)]


@pytest.mark.slow
@pytest.mark.parametrize("entry", SCANNED, ids=lambda s: f"{s.lesson}/{s.case}")
def test_an_entry_whose_reason_is_the_scans_is_flagged_by_the_scan(entry):
    """The scan reads the submitted notebook alone: each such entry, built as submitted, raises its flag
    here, without a kernel."""
    flags = code_scan.scan(samples.build(ROOT, entry))
    for reason in entry.reasons:
        if reason.startswith("code "):
            assert any(flag.startswith(reason) for flag in flags), (reason, flags)


def test_a_pallas_put_in_place_of_jaxs_is_named_after_a_pallas_probe(monkeypatch):
    """adversarial/performance-12/library-swapped-under-the-probe.py swaps `jax.experimental.pallas` for
    a copy whose pallas_call fixes the body: the probes' watch (kernel/library.py) names it."""
    import sys
    import types

    import jax.experimental
    from jax.experimental import pallas

    from perfcourse.kernel import library
    from perfcourse.kernel.probes import pallas as probe

    assert probe.pallas_as_installed() and "jax.experimental.pallas" not in library.changed()
    copy = types.ModuleType(pallas.__name__)
    copy.when, copy.program_id = pallas.when, pallas.program_id
    copy.pallas_call = lambda body, *args, **kwargs: pallas.pallas_call(body, *args, **kwargs)
    monkeypatch.setattr(jax.experimental, "pallas", copy)
    assert "jax.experimental.pallas" in library.changed()
    monkeypatch.setitem(sys.modules, "jax.experimental.pallas", copy)
    assert not probe.pallas_as_installed()  # in sys.modules too: its pallas_call is still a cell's


def test_the_dispatcher_names_a_probe_its_course_file_did_not_define(monkeypatch):
    """The performance-04 forgers reach the loops probe module three ways and replace run_measure: the
    dispatcher names it whatever way the module was reached; the course's own probe is not named."""
    from perfcourse.kernel import library, probes
    from perfcourse.kernel.probes import loops

    named = []
    monkeypatch.setattr(probes, "_report", named.extend)
    monkeypatch.setattr(loops, "PROBES", (*loops.PROBES, "build"))  # a probe that needs no measure to run
    assert probes.run("loops.build", "unrolled") is loops.unrolled and named == []
    monkeypatch.setattr(loops, "build", lambda kind, program=None: None)
    assert probes.run("loops.build", "unrolled") is None
    assert named == ["perfcourse.kernel.probes.loops.build"]
    monkeypatch.setattr(probes, "run", lambda name, *args, **kwargs: None)
    assert "perfcourse.kernel.probes.run" in library.changed()


def test_the_pallas_watch_sees_a_wrapper_and_a_module_left_only_in_sys_modules(monkeypatch):
    """A review found two ways past the watch: a student's function wrapped in functools.partial (a
    class from the standard library, which is installed) and the attribute deleted with a copy left
    in sys.modules, where `from jax.experimental import pallas` finds it."""
    import functools
    import sys
    import types

    import jax.experimental
    from jax.experimental import pallas

    from perfcourse.kernel.probes import pallas as probe

    def mine(body, *args, **kwargs):
        return pallas.pallas_call(body, *args, **kwargs)

    monkeypatch.setattr(pallas, "pallas_call", functools.partial(mine))
    assert not probe.pallas_as_installed()
    monkeypatch.undo()
    copy = types.ModuleType(pallas.__name__)
    copy.when, copy.program_id, copy.pallas_call = pallas.when, pallas.program_id, mine
    monkeypatch.delattr(jax.experimental, "pallas")
    monkeypatch.setitem(sys.modules, "jax.experimental.pallas", copy)
    assert not probe.pallas_as_installed()
    monkeypatch.setitem(sys.modules, "jax.experimental.pallas", pallas)  # the attribute gone, JAX's own left
    assert probe.pallas_as_installed()


def test_the_dispatcher_names_a_helper_of_a_probe_replaced_on_its_module(monkeypatch):
    """adversarial/performance-02/helper-under-the-probe.py finds the tracing probe module with
    inspect.getmodule of a function it lends and replaces `_each_step`, which the probes call, so the
    probe functions stay the course's: the dispatcher names the helper (and a class's replaced method)."""
    import inspect

    from perfcourse.kernel import probes
    from perfcourse.kernel.probes import tracing

    named = []
    monkeypatch.setattr(probes, "_report", named.extend)
    assert probes.run("tracing.listeners") == tracing.listeners() and named == []
    helpers = inspect.getmodule(tracing.Box("affine").fn)
    monkeypatch.setattr(helpers, "_each_step", lambda student, steps, with_compiles: ())
    monkeypatch.setattr(helpers.CompileEvents, "__enter__", lambda self: self)
    assert probes.run("tracing.count_traces", None, []) == ()
    assert named == ["perfcourse.kernel.probes.tracing.CompileEvents", "perfcourse.kernel.probes.tracing._each_step"]


def test_the_dispatcher_names_a_helper_a_probe_imports_from_a_sibling_when_replaced(monkeypatch):
    """A probe's helper imported from another probe module (`from .programs import as_jitted` in fsdp,
    memory and sharding) replaced on the probe's module is named too; the sibling's constants are not code."""
    import os

    from perfcourse.kernel import probes
    from perfcourse.kernel.probes import fsdp, profiling

    path = os.path.join(probes._here, "fsdp.py")
    assert probes._replaced(fsdp, path, "export_step") == []
    assert probes._replaced(profiling, os.path.join(probes._here, "profiling.py"), "three_numbers_run") == []
    monkeypatch.setattr(fsdp, "as_jitted", lambda fn: fn)
    assert probes._replaced(fsdp, path, "export_step") == ["perfcourse.kernel.probes.fsdp.as_jitted"]
