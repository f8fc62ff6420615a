# A report that records every measurement, the median and the environment, but says nothing
# about memory: a reader cannot tell "not measured" from "forgot to write it down".
# expect: test_workload=2 test_first_call_evidence=3 test_trace_count=2 test_evidence=0 test_audit=0
# %% solutions
# %% replace report
def build_report(measurements):
    report = dict(measurements)
    report["steady_median_seconds"] = statistics.median(measurements["steady_seconds"])
    report["backend"] = jax.default_backend()
    report["jax"] = jax.__version__
    report["jaxlib"] = jaxlib.__version__
    report["numpy"] = np.__version__
    report["python"] = platform.python_version()
    return report
