"""The timing instrument, built in the student's process: a real jitted function whose calls last
as long as the trusted side decides, and whose result becomes ready only after an amount of device
work the trusted side picks for every call.

The work is a loop on the device (`lax.fori_loop`) whose trip count is an argument, next to a
small matrix product: XLA's CPU client then dispatches the program asynchronously, as an
accelerator would, so the call returns before its result is ready. Each call first asks the
trusted side's `schedule` how many iterations it runs; the trusted side records the call and
holds its answer for a time it never tells (checks/timing.py). The program is compiled before
the function is handed over, so no call's length includes compiling it. A throughput timer
(performance-01's Task 3) gets the same work chained (`run_queued_timer`): each call's program takes
the previous call's result as an argument, so its work begins only once that result is ready and
queued calls run one after another in dispatch order, as on one accelerator device, whatever XLA's
CPU client would run side by side.

The trip count must reach the device without passing anything student code could replace to
read it (a timer that learned each call's count could sleep the predicted work instead of
waiting). So everything the instrument calls is bound here, when the kernel imports this module
at start-up (perfcourse.kernel.agent), before any student code: the count goes from the channel's
reply (whose classes, `json` and `socket` are kept as they were then: kernel/library.py) through
NumPy's int32 (a C type) into the jitted program (JAX's C++ dispatch: no Python runs on the way).
The function handed over is a closure made in a namespace of its own, so its `__globals__` lead
nowhere. The agent compares everything kept with what it was at start-up, before and after each
probe runs (the student's timer, here), and has each difference flagged (library.report). What
remains is JAX's own machinery (its tracing, lowering and compiler, run when the program is first
built): a callback added to the program that way shows in its lowered text, which is read once
and flagged; a rewrite that reports the count by other means is beyond what is kept
(docs/authors/checks.md, Known limits).
"""
from __future__ import annotations

import builtins
import importlib
import json
import json.decoder
import json.encoder
import socket
import sys

import jax
import jax.numpy as jnp
import numpy as np

from ...channel import codec, endpoint
from .. import library

PROBES = ("run_timer", "run_queued_timer", "spin")
MATRIX = 256
# The builtins the channel's code, json's and this module's call on the count's way (looked up at
# each call: replacing `builtins.type` would show it every value decoded).
BUILTINS = ("abs", "all", "any", "bool", "bytearray", "bytes", "callable", "chr", "dict", "float", "frozenset",
            "getattr", "hasattr", "hash", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "max",
            "min", "next", "object", "range", "repr", "set", "str", "super", "tuple", "type", "vars", "zip")

# Bound now, at the kernel's start-up: what student code later does to these names is not called here.
_jit, _block, _fori = jax.jit, jax.block_until_ready, jax.lax.fori_loop
_float32, _ones, _int32 = jnp.float32, jnp.ones, np.int32

for _name, _owner, _attributes in (
        ("jax", jax, ("jit", "block_until_ready")), ("jax.lax", jax.lax, ("fori_loop",)),
        ("jax.numpy", jnp, ("int32", "float32", "ones")), ("numpy", np, ("int32",)),
        ("json", json, ("loads", "dumps", "_default_decoder", "_default_encoder", "JSONDecoder", "JSONEncoder")),
        ("json.decoder", json.decoder, None), ("json.encoder", json.encoder, None),
        ("socket", socket, ("socket",)), ("sys", sys, ("audit",)), ("importlib", importlib, ("import_module",)),
        ("builtins", builtins, BUILTINS),
        ("perfcourse.channel.endpoint", endpoint, None), ("perfcourse.channel.codec", codec, None)):
    library.keep(_name, _owner, _attributes)
for _name, _owner in (("json.JSONDecoder", json.JSONDecoder), ("json.JSONEncoder", json.JSONEncoder),
                      ("json._default_decoder", json._default_decoder), ("socket.socket", socket.socket),
                      ("perfcourse.channel.endpoint.Endpoint", endpoint.Endpoint),
                      ("perfcourse.channel.codec.Codec", codec.Codec)):
    library.keep(_name, _owner, added=True)


def _spin(iterations, matrix):
    spun = _fori(0, iterations, lambda i, c: c * _float32(0.9999999) + 1.0, _float32(0))
    # Ready only after the loop and the product, but the same value for every trip count (XLA
    # keeps a float times zero): a result that grew with the work would tell a timer how much
    # work each call had without its waiting for it.
    return (matrix @ matrix)[:2, :2] * 0 + (spun * 0 + 1)


def _spin_after(iterations, matrix, previous):
    # The same work, begun only once `previous` (the last call's result) is ready: queued calls
    # then run one after another in the order they were dispatched, as they do on one accelerator
    # device, whatever the CPU client's thread pool would otherwise run side by side.
    spun = _fori(0, iterations, lambda i, c: c * _float32(0.9999999) + 1.0, previous[0, 0] * 0)
    return (matrix @ matrix)[:2, :2] * 0 + (spun * 0 + 1)


_UNIT = _jit(_spin)
_CHAINED = _jit(_spin_after)
_matrix: list = []  # made at the first use: an array needs JAX's backend, which the lesson may configure first

# The function handed to the timer closes over the program, the count's type, the schedule's
# call and the matrix; defined in a namespace of its own, it reaches nothing else.
_MAKER: dict = {"__builtins__": {}}
exec(compile("def make(unit, int32, ask, matrix):\n"
             "    def timed_function(*args, **kwargs):\n"
             "        return unit(int32(ask()), matrix)\n"
             "    return timed_function\n"
             "def make_chained(unit, int32, ask, matrix, last):\n"
             "    def timed_function(*args, **kwargs):\n"
             "        last[0] = unit(int32(ask(last[0].is_ready())), matrix, last[0])\n"
             "        return last[0]\n"
             "    return timed_function\n", "<perfcourse timing instrument>", "exec"), _MAKER)


def _unit():
    if not _matrix:
        _matrix.append(_ones((MATRIX, MATRIX), _float32))
    return _UNIT, _matrix[0]


# Whether the program, as JAX lowered it here, calls out of the device (a custom call: the
# callback a rewritten JAX lowering would add to report each call's trip count). The course's
# program has none; read once, when the instrument is first built (after student code ran).
_calls_out: dict = {}  # program name -> whether its lowered text calls out


def _program_is_plain() -> bool:
    return not any(_calls_out.values())


library.watch("the timing instrument's program (a call out of the device added to it)", _program_is_plain)


def spin(iterations: int):
    """One call of the unit, dispatched; the caller synchronizes (used to calibrate)."""
    unit, matrix = _unit()
    return unit(_int32(iterations), matrix)


def instrument(schedule):
    """The function handed to the student's timer: each call runs the work its schedule says."""
    unit, matrix = _unit()
    _block(unit(_int32(1), matrix))  # compiled now, not in the first call
    if "unit" not in _calls_out:
        _calls_out["unit"] = "custom_call" in unit.lower(_int32(1), matrix).as_text()
    return _MAKER["make"](unit, _int32, schedule.next_call, matrix)


def queued_instrument(schedule, last: list | None = None):
    """The function handed to a throughput timer: each call's work starts after the previous call's,
    and each call tells the schedule whether the previous call's result was ready when it was made
    (`last` holds the newest result)."""
    unit, matrix = _unit()
    last = [] if last is None else last
    last[:] = [_block(_CHAINED(_int32(1), matrix, _ones((2, 2), _float32)))]  # compiled now
    if "chained" not in _calls_out:
        _calls_out["chained"] = "custom_call" in _CHAINED.lower(_int32(1), matrix, last[0]).as_text()
    return _MAKER["make_chained"](_CHAINED, _int32, schedule.next_call, matrix, last)


def run_timer(timer, schedule, calls_keyword: str, warm_calls: int):
    """The student's timer, run on the instrument with two small arrays as its arguments (what the
    instrument relies on and student code changed, before or while it ran, the agent has flagged)."""
    fn = instrument(schedule)
    return timer(fn, _ones((4, 3), _float32), _ones((3, 2), _float32), **{calls_keyword: warm_calls})


def run_queued_timer(timer, schedule, calls_keyword: str, calls: int):
    """A throughput timer, run like `run_timer` on the queued instrument: [what it returned, whether
    the last call's result was ready when it returned]."""
    last: list = []
    fn = queued_instrument(schedule, last)
    value = timer(fn, _ones((4, 3), _float32), _ones((3, 2), _float32), **{calls_keyword: calls})
    return [value, last[0].is_ready()]
