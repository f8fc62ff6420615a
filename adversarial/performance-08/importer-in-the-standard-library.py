# A correct notebook whose data_parallel cell reaches the course's probe modules by a name decoded
# at run time, through two standard-library functions that import what a string names and hand
# back the loaded module itself: pydoc.safeimport and logging.config's _resolve. The scan read
# pkgutil.resolve_name and pydoc.locate as importers, not these, so it saw no import and no module.
# Nothing is forged here; what was reached is what a forger needs (a probe it could replace, which
# the dispatcher would name once a probe ran). Evidence, not a verdict: full marks, now flagged.
# reason: code imports a computed name
# tier: nightly
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# %% solutions
# %% replace data_parallel
import logging.config as _logging_config
import pydoc as _pydoc

_root = bytes([112, 101, 114, 102, 99, 111, 117, 114, 115, 101]).decode()
_reached = [_pydoc.safeimport(f"{_root}.kernel.probes.sharding"), _logging_config._resolve(f"{_root}.kernel.agent")]


def data_parallel(mesh):
    batch = NamedSharding(mesh, P("data", None))
    return {"w": NamedSharding(mesh, P()), "x": batch, "y": batch}
