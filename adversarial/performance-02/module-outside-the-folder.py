# A correct notebook whose count_traces cell writes a module into the kernel's temporary folder
# (outside its working folder), imports it, and has a builtin (`sorted`) call its function, which
# takes an interpreter frame. A module outside the working folder once counted as a library's, so
# the frame went unrecorded; a module is now the student's unless the installed environment
# holds it. Evidence, not a verdict: full marks.
# reason: took an interpreter frame (sys._getframe)
# expect: test_counted_jit=3 test_count_traces=4 test_count_traces_isolated=2 test_count_traces_and_compiles=3
# tier: nightly
# %% solutions
# %% replace count_traces
import importlib as _importlib
import os as _os
import sys as _sys
import tempfile as _tempfile

_where = _tempfile.mkdtemp()
with open(_os.path.join(_where, "peek_elsewhere.py"), "w") as _handle:
    _handle.write("import sys\ndef peek(_):\n    return sys._getframe(1) is None\n")
_sys.path.insert(0, _where)
sorted([2, 1], key=_importlib.import_module("peek_elsewhere").peek)


def count_traces(fn, calls, **jit_kwargs):
    jitted, counter = counted_jit(fn, **jit_kwargs)
    for args, kwargs in calls:
        jitted(*args, **kwargs)
    return counter["traces"]
