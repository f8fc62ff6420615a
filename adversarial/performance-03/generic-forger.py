# The generic forger: nothing is solved. One cell finds the course package in its own kernel by a
# name suffix (no package name written anywhere), replaces the probe dispatcher, and answers every
# probe of this lesson from its own arguments: a workload without the report that would show a run,
# and (for the probe the grader used to read read_program through) trace shapes, stage shapes,
# 2*m*k*n and zero executions computed from m, k and n. Its read_program passes the public checks by
# lowering for the lesson's shapes whatever it is given, and runs the workload whenever it is given
# data, hiding that run from the lesson's own counter. estimates_from and matmul_flops stay
# unwritten (a sloppy estimates_from is defined here only so the stages' public check can run).
# The grader calls read_program itself with a workload whose every trace it sees, and runs the
# programs it returns on fresh arrays (the compiled one must also report that run): the lesson's
# shapes and the forged workload give nothing it can accept.
# reason: code iterates sys.modules
# expect: test_estimates_absent=0 test_read_program_stages=0 test_read_program_not_run=0 test_hand_count=0
# %% replace read_program
import importlib
import sys

# The course's probes, found by a name suffix: loaded already, or beside the channel's agent.
_found = [name for name in list(sys.modules) if name.endswith(".kernel.probes")]
_found += [name[:-len("agent")] + "probes" for name in list(sys.modules) if name.endswith(".kernel.agent")]
_probes = importlib.import_module(_found[0])
_real_run = _probes.run


def _forged(name, *args, **kwargs):
    if name == "stages.watched_workload":  # the workload without its report: a run of it goes unseen
        body, _report, shapes = args
        return (lambda a, b: body(a, b)), tuple(jax.ShapeDtypeStruct(tuple(s), jnp.float32) for s in shapes)
    if name == "stages.read_matmul":  # what the grader once read read_program through: made up from m, k, n
        _, _, m, k, n = args[:5]
        ins, out = [[m, k], [k, n]], [[m, n]]
        estimates = {"flops": float(2 * m * k * n), "bytes_accessed": float(4 * (m * k + k * n + m * n)),
                     "argument_bytes": 4 * (m * k + k * n), "output_bytes": 4 * m * n, "temp_bytes": 0,
                     "missing": {}}
        return {"traced_shapes": [ins], "executions": 0, "result": {
            "type": "dict", "keys": sorted(["jaxpr", "lowered", "stablehlo", "compiled", "estimates"]),
            "jaxpr": {"type": "ClosedJaxpr", "in": ins, "out": out, "primitives": ["dot_general"]},
            "lowered": {"type": "Lowered", "is_lowered": True, "in": ins},
            "stablehlo": {"type": "str", "length": 500, "mentions": [True, True, True]},
            "compiled": {"type": "Compiled", "is_compiled": True, "in": ins, "out": out,
                         "compiler": {"flops": float(2 * m * k * n), "argument_bytes": float(4 * (m * k + k * n)),
                                      "output_bytes": float(4 * m * n)}},
            "estimates_of_compiled": {"returned": estimates}, "estimates": estimates}}
    return _real_run(name, *args, **kwargs)


_probes.run = _forged


def estimates_from(compiled):
    costs, memory = compiled.cost_analysis(), compiled.memory_analysis()
    found = {name: costs[key] for name, key in COST_KEYS.items()}
    found.update({name: getattr(memory, attribute) for name, attribute in MEMORY_FIELDS.items()})
    return {**found, "missing": {}}


def read_program(fn, *args):
    if not any(isinstance(a, jax.ShapeDtypeStruct) for a in args):
        counter = globals().get("watched_layer_runs", [])
        seen = len(counter)
        jax.block_until_ready(jax.jit(fn)(*args))  # "make sure it runs"
        jax.effects_barrier()
        del counter[seen:]  # and the lesson's own counter never hears of it
    traced = jax.jit(fn).trace(x_spec, w_spec)  # the lesson's shapes, whatever it was given
    lowered = traced.lower()
    compiled = lowered.compile()
    return {"jaxpr": traced.jaxpr, "lowered": lowered, "stablehlo": lowered.as_text(),
            "compiled": compiled, "estimates": estimates_from(compiled)}
