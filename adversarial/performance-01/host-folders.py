# A correct notebook that finds the host folders bound into its sandbox (the channel's folder, its
# kernel's runtime folder) and tries to fill them, and to replace the channel's socket by a link to
# another socket, hoping the grader follows it. The grader keeps both folders; the kernel can add
# nothing to them once it is up, and the grader's own connection was made before any student code.
# reason: code names the grading package
# expect: test_workload=3 test_timer_first_call_apart=2 test_timer_synchronized=3 test_queued=3
# %% solutions
# %% replace workload
import os
import sys

@jax.jit
def workload(x, w):
    return jnp.tanh(x @ w)

_folders = set()
try:
    import perfcourse.kernel.agent as _agent
    _folders.add(os.path.dirname(_agent._agent.listener.getsockname()))
except Exception as exc:
    print("no channel folder:", type(exc).__name__)
if "-f" in sys.argv:
    _folders.add(os.path.dirname(sys.argv[sys.argv.index("-f") + 1]))
for _folder in sorted(f for f in _folders if f):
    try:
        with open(os.path.join(_folder, "fill.bin"), "wb") as _handle:
            _handle.write(b"\0" * (8 << 20))
        print("host folder WRITTEN")
    except OSError as exc:
        print("host folder refused:", type(exc).__name__)
    for _name in os.listdir(_folder):
        if _name.endswith(".sock"):
            try:
                os.unlink(os.path.join(_folder, _name))
                os.symlink("/run/some-other.sock", os.path.join(_folder, _name))
                print("socket REPLACED")
            except OSError as exc:
                print("socket refused:", type(exc).__name__)
