# Compares each count's median with one device's quartiles: "faster" when the median lies below one
# device's 25th percentile, "slower" above its 75th. The lesson compares the middle halves: a median
# past one device's quartile whose own middle half still reaches into one device's is within the
# spread. The public example has no such count. Loses the scaling-evidence cell only.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=0
# tier: nightly
# %% solutions
# %% replace scaling_evidence
def scaling_evidence(warm_seconds):
    base = np.asarray(warm_seconds[1], dtype=np.float64)
    base_q1, base_q3 = np.percentile(base, [25, 75])
    out = {}
    for count, samples in warm_seconds.items():
        values = np.asarray(samples, dtype=np.float64)
        q1, q3 = np.percentile(values, [25, 75])
        middle = float(np.median(values))
        gain = float(np.median(base)) / middle
        if middle < base_q1:
            verdict = "faster"
        elif middle > base_q3:
            verdict = "slower"
        else:
            verdict = "within the spread"
        out[count] = {"median_seconds": middle, "middle_half": [float(q1), float(q3)], "speedup": gain,
                      "efficiency": gain / count, "verdict": verdict}
    return out
