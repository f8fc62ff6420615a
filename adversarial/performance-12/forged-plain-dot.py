# A forger written against this lesson's probe and checks: its body never zeroes the accumulator,
# only replaces the NaN the interpreter fills an unwritten block with (so the public check, run in
# interpret mode, passes), and it replaces the course's probe dispatcher (found through sys.modules
# by a name suffix) so that, asked to export the body in the course's pallas_call, it sends a plain
# jnp.dot program of the shapes it is told instead. Before the trusted kernel read the program's
# structure, that earned the body's 3 points with no Pallas at all.
#
# It deserves nothing for the body: the program it sends holds no grid loop slicing the blocks the
# course's pallas_call slices (the trusted kernel compares it with its own export of that call), and
# its own body, exported honestly, keeps what an output block held before. The other cells are the
# solution's.
# reason: code iterates sys.modules
# expect: test_matmul_kernel=0 test_tiling=3 test_traffic=2 test_tolerance=2
# tier: nightly
# %% solutions
# %% replace matmul_kernel
import sys as _sys


def matmul_kernel(x_ref, y_ref, o_ref):
    so_far = o_ref[...]
    o_ref[...] = jnp.where(jnp.isnan(so_far), 0.0, so_far) + jnp.dot(x_ref[...], y_ref[...],
                                                                    preferred_element_type=jnp.float32)


def _find_probes():
    for _name, _module in list(_sys.modules.items()):
        if _name.endswith(".kernel.probes"):
            return _module
    raise RuntimeError("no probes found")


_probes = _find_probes()
_real_run = _probes.run


def _forged_run(name, *args, **kwargs):
    if str(name) == "pallas.export_kernel":
        _, (m, k, n), _ = args
        structs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in ((m, k), (k, n), (m, n))]
        return bytes(jax.export.export(jax.jit(lambda x, y, start: jnp.dot(x, y)))(*structs).serialize())
    return _real_run(name, *args, **kwargs)


_probes.run = _forged_run
