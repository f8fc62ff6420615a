# Correct in other idioms: options built in one expression, the steps as a while loop, the file
# found with os.walk; the evidence from one pass over the events sorted by time; the rule written
# with any() and early returns; fix A with jax.jit as a decorator inside the factory, fix B putting
# the batch with jax.device_put of the pair, fix C a jitted step that returns what sgd_update does.
# Full marks.
# expect: test_trace_steps=2 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace trace_steps
def trace_steps(step, params, steps, trace_dir):
    jax.block_until_ready(step(params)[0])
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options):
        i = 0
        while i < steps:
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, loss = step(params)
            i += 1
        jax.block_until_ready((params, loss))
    newest, when = None, -1.0
    for folder, _, names in os.walk(trace_dir):
        if TRACE_FILE in names and os.path.getmtime(os.path.join(folder, TRACE_FILE)) >= when:
            newest = os.path.join(folder, TRACE_FILE)
            when = os.path.getmtime(newest)
    return params, newest
# %% replace step_evidence
def step_evidence(trace, scope):
    events = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["ts"])
    steps = [e for e in events if e["name"] == scope]
    evidence = {"steps": len(steps), "compiles": [0] * len(steps), "transfers": [0] * len(steps), "executions": 0,
                "waiting": [0.0] * len(steps)}
    if not steps:
        return evidence
    home = (steps[0]["pid"], steps[0]["tid"])
    for e in events:
        if (e["pid"], e["tid"]) != home:
            continue
        for i, s in enumerate(steps):
            if s["ts"] <= e["ts"] <= s["ts"] + s["dur"]:
                evidence["compiles"][i] += e["name"] in COMPILE_EVENTS
                evidence["transfers"][i] += e["name"] in TRANSFER_EVENTS
    last_end = {}
    for _, start, end in sorted(device_runs(trace).values(), key=lambda run: run[1]):
        if start < steps[0]["ts"]:
            continue
        evidence["executions"] += 1
        for i, s in enumerate(steps):
            if s["ts"] <= start <= s["ts"] + s["dur"]:
                if i in last_end:
                    evidence["waiting"][i] += max(0.0, start - last_end[i]) / s["dur"]
                last_end[i] = end
    return evidence
# %% replace diagnose
def diagnose(evidence):
    n = evidence["steps"]
    if n == 0:
        return "none"
    if not any(c == 0 for c in evidence["compiles"]):
        return "recompile"
    host_bound = [w >= DISPATCH_SHARE for w in evidence["waiting"]]
    if evidence["executions"] >= n * DISPATCH_LIMIT and host_bound.count(True) > host_bound.count(False):
        return "dispatch"
    if not any(t == 0 for t in evidence["transfers"]):
        return "transfer"
    return "none"
# %% replace fast_loop_a
def fast_loop_a(x, y, lr):
    @jax.jit
    def update(params, x, y):
        return sgd_update(params, x, y, lr)

    return lambda params: update(params, x, y)
# %% replace fast_loop_b
def fast_loop_b(x_host, y_host, lr):
    x, y = jax.device_put((x_host, y_host))
    update = jax.jit(functools.partial(sgd_update, lr=lr))
    return lambda params: update(params, x, y)
# %% replace fast_loop_c
def fast_loop_c(x, y, lr):
    @jax.jit
    def step(params):
        return sgd_update(params, x, y, lr)
    return step
