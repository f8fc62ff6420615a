# Takes the middle half from statistics.quantiles(samples, n=4), whose default method is "exclusive": not the
# linear interpolation of np.percentile(samples, [25, 75]) the text names.
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=0
# tier: nightly
# %% solutions
# %% replace scaling_evidence
import statistics


def scaling_evidence(warm_seconds):
    def half(samples):
        if len(samples) == 1:
            return [float(samples[0])] * 2
        q = statistics.quantiles(samples, n=4)
        return [q[0], q[2]]

    base, base_median = half(warm_seconds[1]), statistics.median(warm_seconds[1])
    out = {}
    for k, samples in warm_seconds.items():
        low, high = half(samples)
        median = statistics.median(samples)
        out[k] = {"median_seconds": median, "middle_half": [low, high], "speedup": base_median / median,
                  "efficiency": base_median / median / k,
                  "verdict": "faster" if high < base[0] else "slower" if low > base[1] else "within the spread"}
    return out
