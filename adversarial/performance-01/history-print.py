# A correct notebook that prints IPython's input history after every later cell, hoping to put
# the hidden tests' source into its own output and so into the feedback. Grade cells never run
# in the student's kernel, so its history holds none of them.
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

def _print_history(result):
    print("HISTORY:", "\n".join(get_ipython().user_ns.get("In", [])))

get_ipython().events.register("post_run_cell", _print_history)
