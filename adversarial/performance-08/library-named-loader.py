# A correct notebook whose compiles_per_call cell loads a helper module with a loader of its own:
# the class of `json.__loader__` (a file loader, reached without naming importlib) subclassed to
# read its source from a string while its path stays a real file of the standard library. Python's
# import machinery compiles and runs it, so its code carries that library file's name, and a
# sys._getframe inside it counted as the library's. The helper is called as each call is counted
# and keeps its caller's caller frame. Evidence, not a verdict: full marks, flagged.
# reason: code changes how modules are imported
# tier: nightly
# expect: test_data_parallel=3 test_collectives=2 test_weights_split=3 test_grad_with_psum=2 test_compile_key=2 test_scaling_evidence=2
# %% solutions
# %% replace compiles_per_call
import json as _json
import types as _types

_HELPER = "import sys\n\ndef above():\n    return sys._getframe(2)\n"


class _StringLoader(type(_json.__loader__)):
    def get_data(self, path):
        if str(path).endswith(".py"):
            return _HELPER.encode()
        raise OSError("no cached bytecode")

    def set_data(self, path, data, *args):
        pass  # never write a cache beside the library's file


_library_file = _json.__file__.replace("__init__.py", "scanner.py")
_helper = _types.ModuleType("json._helper")
_helper.__file__ = _library_file
_StringLoader("json._helper", _library_file).exec_module(_helper)
_frames_kept = []


def compiles_per_call(fn, calls):
    _frames_kept.append(_helper.above())
    events = []

    def on_duration(event, duration_secs, **details):
        if event == COMPILE_EVENT:
            events.append(duration_secs)

    counts = []
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for args in calls:
            before = len(events)
            jax.block_until_ready(fn(*args))
            counts.append(len(events) - before)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    return counts
