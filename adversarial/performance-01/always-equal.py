# Returns an object that claims to equal anything.
# expect: test_workload=0 test_timer_first_call_apart=0 test_timer_synchronized=0 test_queued=0
# tier: nightly
# %% replace workload
class AlwaysEqual:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __getattr__(self, name):
        return AlwaysEqual()
    def __array__(self, dtype=None, copy=None):
        return np.zeros((64, 16), np.float32)

def workload(x, w):
    return AlwaysEqual()
