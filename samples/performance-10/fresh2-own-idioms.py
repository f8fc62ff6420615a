# A student's own idioms: the profiler options built once, the evidence counted through one helper, the
# executions kept as sorted (start, end) pairs, the rule written as early returns, lr bound as a static
# argument, and loop C's batch gradient as the mean of the examples' gradients under jax.vmap.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% replace trace_steps
def trace_steps(step, params, steps, trace_dir):
    jax.block_until_ready(step(params))  # warm-up: its result is not used
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, _ = step(params)
        params = jax.block_until_ready(params)
    return params, newest_trace(trace_dir)
# %% replace step_evidence
def step_evidence(trace, scope):
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in complete if e.get("name") == scope), key=lambda e: e["ts"])
    if not steps:
        return {"steps": 0, "compiles": [], "transfers": [], "executions": 0, "waiting": []}
    home = (steps[0].get("pid"), steps[0].get("tid"))

    def on_step(names, step):
        return sum(1 for e in complete if e.get("name") in names and (e.get("pid"), e.get("tid")) == home
                   and step["ts"] <= e["ts"] <= step["ts"] + step["dur"])

    runs = sorted((start, end) for _, start, end in device_runs(trace).values())
    waiting = []
    for step in steps:
        mine = [run for run in runs if step["ts"] <= run[0] <= step["ts"] + step["dur"]]
        idle = sum(max(0.0, later[0] - earlier[1]) for earlier, later in zip(mine, mine[1:]))
        waiting.append(min(1.0, idle / step["dur"]) if step["dur"] > 0 else 0.0)
    return {"steps": len(steps),
            "compiles": [on_step(COMPILE_EVENTS, s) for s in steps],
            "transfers": [on_step(TRANSFER_EVENTS, s) for s in steps],
            "executions": sum(1 for start, _ in runs if start >= steps[0]["ts"]),
            "waiting": waiting}
# %% replace diagnose
def diagnose(evidence):
    steps = evidence["steps"]
    if steps == 0:
        return "none"
    if min(evidence["compiles"]) >= 1:
        return "recompile"
    waited = sum(1 for share in evidence["waiting"] if share >= DISPATCH_SHARE)
    if evidence["executions"] >= DISPATCH_LIMIT * steps and 2 * waited > steps:
        return "dispatch"
    if min(evidence["transfers"]) >= 1:
        return "transfer"
    return "none"
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    update = jax.jit(sgd_update, static_argnames="lr")  # lr is hashed into the program once

    def step(params):
        return update(params, x, y, lr=lr)
    return step
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    x, y = jax.device_put((x_host, y_host))  # the one upload, when the loop is built
    update = jax.jit(lambda params, x, y: sgd_update(params, x, y, lr))

    def step(params):
        return update(params, x, y)
    return step
# %% replace fast_loop_c
def fast_loop_c(x, y, lr):
    per_example = jax.vmap(jax.value_and_grad(loss_fn), in_axes=(None, 0, 0))

    @jax.jit
    def update(params, x, y):
        losses, grads = per_example(params, x, y)
        grads = jax.tree.map(lambda g: g.mean(axis=0), grads)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), losses.mean()

    def step(params):
        return update(params, x, y)
    return step
