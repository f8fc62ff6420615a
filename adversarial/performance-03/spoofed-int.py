# No hand count at all: matmul_flops returns an object whose class claims to be re.RegexFlag (an
# int subclass) and whose == answers True, hoping an isinstance check lets the stand-in be compared.
# Stand-ins report no class but JAX's own object types, so the count is not an int.
# expect: test_estimates_absent=3 test_read_program_stages=3 test_read_program_not_run=2 test_hand_count=0
# %% solutions
# %% replace hand_count
class _Count:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
    def __repr__(self):
        return "2*m*k*n"
    def __format__(self, spec):
        return "2*m*k*n"

_Count.__module__, _Count.__qualname__, _Count.__name__ = "re", "RegexFlag", "RegexFlag"

def matmul_flops(m, k, n):
    return _Count()
