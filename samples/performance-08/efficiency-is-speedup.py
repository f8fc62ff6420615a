# Reports the speed-up as the efficiency: against the ideal line t(1) / k, eight devices twice as
# fast as one reach a quarter of it, not 2.0. The verdicts are right. Loses the scaling-evidence
# cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=0
# tier: nightly
# %% solutions
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    one_low, one_high = np.percentile(warm_seconds[1], [25, 75])
    one_median = np.median(warm_seconds[1])
    evidence = {}
    for count, samples in warm_seconds.items():
        low, high = np.percentile(samples, [25, 75])
        speedup = float(one_median / np.median(samples))
        verdict = "faster" if high < one_low else "slower" if low > one_high else "within the spread"
        evidence[count] = {"median_seconds": float(np.median(samples)), "middle_half": [float(low), float(high)],
                           "speedup": speedup, "efficiency": speedup, "verdict": verdict}
    return evidence
