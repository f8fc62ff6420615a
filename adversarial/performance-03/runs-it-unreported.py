# Runs the workload once "to make sure it works" before reading its stages, as runs-the-workload
# does, but runs a copy of its program first stripped of its debug callbacks, so the execution that
# the trusted kernel's report callback would announce never reports itself; with no data (shapes
# only) it reads the stages alone. The stripping is the course's own helper, reached by
# pydoc.safeimport of a name decoded at run time, which is the only thing flagged: the same few lines
# written out with jax.extend.core would run the workload as unseen and raise no flag. Reading a
# program without running it is evidence only where the program reports its runs itself
# (checks/stages.py): a known limit. Deserves to lose not-run's points.
# reason: code imports a computed name
# tier: nightly
# deserves: test_read_program_not_run=0
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=2
# %% solutions
# %% replace read_program
import pydoc as _pydoc

from jax.extend import core as _core

_helpers = _pydoc.safeimport(bytes([112, 101, 114, 102, 99, 111, 117, 114, 115, 101]).decode() + ".kernel.probes.programs")


def _run_unreported(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    quiet = _core.jaxpr_as_fun(_core.ClosedJaxpr(_helpers._without_debug_callbacks(closed.jaxpr), closed.consts))
    return jax.block_until_ready(jax.jit(lambda *values: quiet(*values)[0])(*args))


def read_program(fn, *args):
    if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
        _run_unreported(fn, *args)  # check that it runs before reading it
    traced = jax.jit(fn).trace(*args)
    lowered = traced.lower()
    compiled = lowered.compile()
    return {"jaxpr": traced.jaxpr, "lowered": lowered, "stablehlo": lowered.as_text(), "compiled": compiled,
            "estimates": estimates_from(compiled)}
