# Reads the verdict from the medians alone: a device count whose median is below one device's is
# "faster", whatever the spread. Right on timings whose middle halves are apart, wrong where they
# overlap: a median 3% lower is no evidence when the samples of both counts spread over 20%. Loses
# the scaling-evidence cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=0
# tier: nightly
# %% solutions
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    one_median = np.median(warm_seconds[1])
    evidence = {}
    for count, samples in warm_seconds.items():
        low, high = np.percentile(samples, [25, 75])
        median = np.median(samples)
        speedup = float(one_median / median)
        verdict = "faster" if speedup > 1 else "slower" if speedup < 1 else "within the spread"
        evidence[count] = {"median_seconds": float(median), "middle_half": [float(low), float(high)],
                           "speedup": speedup, "efficiency": speedup / count, "verdict": verdict}
    return evidence
