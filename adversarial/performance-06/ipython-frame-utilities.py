# A correct notebook whose device_time cell, each time the checks call it, walks up the stack with
# IPython's own frame utilities (IPython.utils.frame.extract_module_locals: the module and locals
# of the frame `depth` levels up) and keeps the modules it finds, the course's agent and probe
# among them. The frames are taken by sys._getframe inside IPython, a library the audit hook
# counted as the code responsible, and the scan knew no such name. Evidence, not a verdict: full
# marks, flagged.
# reason: took an interpreter frame (sys._getframe)
# tier: nightly
# expect: test_capture=3 test_read_trace=3 test_find_syncs=3 test_train=3 test_device_time=3 test_three_numbers=3
# %% solutions
# %% replace device_time
from IPython.utils import frame as _frames

_modules_seen = {}


def _look_up_the_stack():
    for depth in range(1, 40):
        try:
            module, _locals = _frames.extract_module_locals(depth)
        except (ValueError, AttributeError):
            break
        if module is not None:
            _modules_seen[getattr(module, "__name__", "?")] = module


def device_seconds_per_call(trace, module):
    _look_up_the_stack()
    lines = line_names(trace)
    runs = {}
    for event in trace["traceEvents"]:
        if event.get("ph") != "X":
            continue
        args = event.get("args") or {}
        process, thread = lines.get((event.get("pid"), event.get("tid")), ("", ""))
        if "hlo_op" in args and args.get("hlo_module") == module:
            key = ("cpu", args.get("run_id"))
        elif process.startswith(DEVICE_PROCESS) and thread == "XLA Modules" and event["name"].split("(")[0] == module:
            key = ("device", event.get("pid"), args.get("run_id"))
        else:
            continue
        start, end = runs.get(key, (event["ts"], event["ts"] + event["dur"]))
        runs[key] = (min(start, event["ts"]), max(end, event["ts"] + event["dur"]))
    return float(np.median([end - start for start, end in runs.values()])) / 1e6
