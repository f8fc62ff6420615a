# A different correct approach: start_trace/stop_trace with try/finally, the warm-up waited for with
# the array's own block_until_ready, the wait by fetching the params (jax.device_get), the Python
# tracer left on; the evidence from bisect over the step starts and a Counter per step; the rule as a
# table of tests; the fixes with a static learning rate, the batch put with jnp.asarray once, and
# the per-example gradients as one vmapped program. Full marks.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# %% solutions
# %% replace trace_steps
def trace_steps(step, params, steps, trace_dir):
    warm, _ = step(params)
    jax.tree.map(lambda leaf: leaf.block_until_ready(), warm)
    jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
    try:
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, _ = step(params)
        params = jax.device_get(params)  # a copy to the host waits for every array in it
    finally:
        jax.profiler.stop_trace()
    return params, newest_trace(trace_dir)
# %% replace step_evidence
import bisect
from collections import Counter


def step_evidence(trace, scope):
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in spans if e["name"] == scope), key=lambda e: e["ts"])
    starts = [s["ts"] for s in steps]
    counts = [Counter() for _ in steps]
    chips = {e["pid"] for e in trace["traceEvents"]
             if e.get("name") == "process_name" and (e.get("args") or {}).get("name", "").startswith("/device:")}
    runs = {}
    for e in spans:
        args = e.get("args") or {}
        if "run_id" in args and (not chips or e["pid"] in chips):
            lo, hi = runs.get(args["run_id"], (e["ts"], e["ts"] + e["dur"]))
            runs[args["run_id"]] = (min(lo, e["ts"]), max(hi, e["ts"] + e["dur"]))
        if not steps or (e["pid"], e["tid"]) != (steps[0]["pid"], steps[0]["tid"]):
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if i >= 0 and e["ts"] <= steps[i]["ts"] + steps[i]["dur"]:
            if e["name"] in COMPILE_EVENTS:
                counts[i]["compiles"] += 1
            elif e["name"] in TRANSFER_EVENTS:
                counts[i]["transfers"] += 1
    loop = sorted(span for span in runs.values() if steps and span[0] >= starts[0])
    idle = [0.0] * len(steps)
    for i, s in enumerate(steps):
        mine = [span for span in loop if s["ts"] <= span[0] <= s["ts"] + s["dur"]]
        idle[i] = sum(max(0.0, b[0] - a[1]) for a, b in zip(mine, mine[1:]))
    return {"steps": len(steps), "compiles": [c["compiles"] for c in counts],
            "transfers": [c["transfers"] for c in counts], "executions": len(loop),
            "waiting": [w / s["dur"] for w, s in zip(idle, steps)]}
# %% replace diagnose
RULES = (
    ("recompile", lambda ev: all(ev["compiles"])),
    ("dispatch", lambda ev: ev["executions"] / ev["steps"] >= DISPATCH_LIMIT
     and np.median(np.asarray(ev["waiting"]) >= DISPATCH_SHARE) > 0.5),
    ("transfer", lambda ev: all(ev["transfers"])),
)


def diagnose(evidence):
    if not evidence["steps"]:
        return "none"
    return next((cause for cause, holds in RULES if holds(evidence)), "none")
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    update = jax.jit(sgd_update, static_argnames="lr")  # lr never changes: compiled once

    def step(params):
        return update(params, x, y, lr=lr)
    return step
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    x, y = jnp.asarray(x_host), jnp.asarray(y_host)

    @jax.jit
    def update(params, x, y):
        return sgd_update(params, x, y, lr)

    def step(params):
        return update(params, x, y)
    return step
# %% replace fast_loop_c
def fast_loop_c(x, y, lr):
    example = jax.value_and_grad(loss_fn)

    @jax.jit
    def update(params, x, y):
        losses, grads = jax.vmap(example, in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
        grads = jax.tree.map(lambda g: jnp.mean(g, axis=0), grads)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), jnp.mean(losses)

    def step(params):
        return update(params, x, y)
    return step
