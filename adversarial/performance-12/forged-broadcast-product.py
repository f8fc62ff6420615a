# The known limit of the body's check, built: a forger whose own body never zeroes its accumulator
# (it only replaces the NaN the interpreter fills an unwritten block with, so the public check
# passes) replaces the course's probe dispatcher (found through sys.modules by a name suffix) and,
# asked to export the body, sends a program that runs the course's pallas_call around that body (so
# every block slice and update of the grid loop is there) and returns, in its place, x @ y written
# as a broadcast multiply and a sum, with the loop's result added times zero. No product operation
# multiplies a whole operand, and the values are right from every starting output.
#
# It deserves nothing for the body (what it returns is no Pallas kernel's work, and its own body
# keeps what an output block held before). The other cells are the solution's.
# reason: code iterates sys.modules
# expect: test_matmul_kernel=3 test_tiling=3 test_traffic=2 test_tolerance=2
# deserves: test_matmul_kernel=0
# tier: nightly
# %% solutions
# %% replace matmul_kernel
import sys as _sys


def matmul_kernel(x_ref, y_ref, o_ref):
    so_far = o_ref[...]  # NaN replaced (the interpreter's unwritten block), so the public check passes
    o_ref[...] = jnp.where(jnp.isnan(so_far), 0.0, so_far) + jnp.dot(x_ref[...], y_ref[...],
                                                                    preferred_element_type=jnp.float32)


def _find(suffix):
    for _name, _module in list(_sys.modules.items()):
        if _name.endswith(suffix):
            return _module
    raise RuntimeError(f"no {suffix} found")


_probes = _find(".kernel.probes")
_real_run = _probes.run


def _forged_run(name, *args, **kwargs):
    if str(name) == "pallas.export_kernel":
        _real_run(name, *args, **kwargs)  # the course's own export, thrown away: it loads the pallas probe
        _pallas_probe = _find(".kernel.probes.pallas")
        kernel, sizes, blocks = args
        m, k, n = (int(v) for v in sizes)
        bm, bn, bk = (int(v) for v in blocks)
        grid, in_blocks, out_block = _pallas_probe.expected_tiling(m, k, n, bm, bn, bk)
        loop = _pallas_probe.tiled_call(kernel, m, k, n, grid, *_pallas_probe.specs(in_blocks, out_block))

        def dressed(x, y, start):
            product = jnp.sum(x[:, :, None] * y[None, :, :], axis=1)
            return product + 0.0 * jnp.nan_to_num(loop(x, y, start))

        structs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in ((m, k), (k, n), (m, n))]
        return bytes(jax.export.export(jax.jit(dressed))(*structs).serialize())
    return _real_run(name, *args, **kwargs)


_probes.run = _forged_run
