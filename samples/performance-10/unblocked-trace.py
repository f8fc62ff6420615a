# Waits for the last step only after the trace has stopped: the lesson's small steps have run by
# then anyway, so every public check passes, but a loop whose steps are still queued when the trace
# stops loses their executions from the trace. Loses the tracing points only.
# expect: test_trace_steps=0 test_step_evidence=3 test_diagnose=3 test_fix_a=2 test_fix_b=2 test_fix_c=2
# tier: nightly
# %% solutions
# %% replace trace_steps
def trace_steps(step, params, steps, trace_dir):
    jax.block_until_ready(step(params))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation(STEP_SCOPE, step_num=i):
                params, loss = step(params)
    jax.block_until_ready(params)  # waits, but after the trace has stopped
    return params, newest_trace(trace_dir)
