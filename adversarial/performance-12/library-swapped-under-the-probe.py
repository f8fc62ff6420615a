# A body that never zeroes its accumulator (never-zeroed's mistake), hidden by the library the probe
# imports: `jax.experimental.pallas` replaced, as an attribute of `jax.experimental`, by a copy whose
# pallas_call zeroes each output block at the first k step before running the body it is given.
# The course's probe imports pallas inside its function (`from jax.experimental import pallas`), so
# it builds and exports the fixed body, a program the trusted kernel reads and runs as correct; the
# notebook's own `pl` is rebound to the copy too, for the public check's run_body. No module is
# walked, no importer called, no course name spelled: plain assignments.
#
# It deserves nothing for the body: matmul_kernel itself, run anywhere, adds to an unset block. A
# known limit: the program is the student's process's to build, and it builds it with the libraries
# it finds there, so the body's points are earned (`# deserves:` says what it should get, 10/10 with
# no flag before); the scan now flags a module's attribute replaced, and the pallas probe's watch
# names the pallas that is not JAX's own.
# reason: code replaces a module's attribute
# reason: what the course's instrument relies on was replaced in the student's kernel: jax.experimental.pallas
# tier: nightly
# deserves: test_matmul_kernel=0
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# %% solutions
# %% replace matmul_kernel
import types

import jax.experimental

_real = pl


def matmul_kernel(x_ref, y_ref, o_ref):
    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def _zeroed_first(body):
    def fixed(*refs):
        @_real.when(_real.program_id(2) == 0)
        def _():
            refs[-1][...] = jnp.zeros(refs[-1].shape, refs[-1].dtype)

        body(*refs)

    return fixed


_swapped = types.ModuleType(_real.__name__)
_swapped.ANY, _swapped.BlockSpec, _swapped.CostEstimate = _real.ANY, _real.BlockSpec, _real.CostEstimate
_swapped.num_programs, _swapped.program_id, _swapped.when = _real.num_programs, _real.program_id, _real.when
_swapped.pallas_call = lambda body, *args, **kwargs: _real.pallas_call(_zeroed_first(body), *args, **kwargs)
jax.experimental.pallas = _swapped  # what the course's probe imports
pl = _swapped  # what the lesson's run_body, used by the public check, reads
