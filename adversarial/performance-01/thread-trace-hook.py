# A correct notebook whose workload cell leaves a trace function for every new thread
# (`threading.settrace`, which raises no audit event of its own): a thread the grader's code starts
# later would run under it and show it every frame. The audit hook looks at each cell's start for
# trace and profile functions in place. Evidence, not a verdict: the work is correct and keeps full marks.
# reason: a trace function for new threads was in place (threading.settrace)
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# tier: nightly
# %% solutions
# %% replace workload
import threading as _threading

_seen_calls = []
_threading.settrace(lambda frame, event, arg: _seen_calls.append(frame.f_code.co_name))


@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)
