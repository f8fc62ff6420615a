# Starts the traced steps from the warm-up's result: the task says the warm-up's result is not used
# and the traced steps start from params. The notebook's own checks compare two traces made alike, so
# they pass. Loses the tracing points only.
# expect: test_trace_steps=0 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace trace_steps
def trace_steps(step, params, steps, trace_dir):
    params, _ = jax.block_until_ready(step(params))  # the warm-up, and the first step
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, loss = step(params)
        jax.block_until_ready(params)
    return params, newest_trace(trace_dir)
