"""Grade a timer by the order of its clock reads, on a scripted clock.

A student's timer is handed a function whose results behave like JAX arrays that are
still being computed: dispatch returns at once, and the work is only finished (and the
clock only advances by it) when the result is synchronized, by `jax.block_until_ready`,
`.block_until_ready()`, or conversion to a NumPy array. While the check runs, every
clock the timer can reach reads the scripted time instead of the machine's, so the
durations the timer reports are exact and say which method it used:

    synchronized timer:    first = compile + dispatch + work,  warm = dispatch + work
    unsynchronized timer:  first = compile + dispatch,         warm = dispatch
"""
from __future__ import annotations

import contextlib
import math
import time
import timeit
from dataclasses import dataclass, field

import numpy as np

COMPILE_SECONDS = 5.0     # only the first call pays tracing and compilation
DISPATCH_SECONDS = 0.001  # the host's share of every call
WORK_SECONDS = 0.010      # device work, paid when the result is synchronized
START_SECONDS = 1000.0

# Every clock a timer is likely to read, and how each reports the scripted time.
_CLOCKS = {
    "perf_counter": lambda s: s,
    "monotonic": lambda s: s,
    "time": lambda s: s,
    "perf_counter_ns": lambda s: int(round(s * 1e9)),
    "monotonic_ns": lambda s: int(round(s * 1e9)),
    "time_ns": lambda s: int(round(s * 1e9)),
}


@dataclass
class ScriptedDevice:
    """The clock, and the log of what happened in which order."""
    now: float = START_SECONDS
    events: list = field(default_factory=list)
    calls: int = 0

    def read(self, convert):
        self.events.append(("clock", self.now))
        return convert(self.now)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.now += (COMPILE_SECONDS if self.calls == 1 else 0.0) + DISPATCH_SECONDS
        self.events.append(("call", self.calls))
        return PendingResult(self, self.calls)


class PendingResult:
    """A result whose device work finishes only when someone waits for it."""

    def __init__(self, device: ScriptedDevice, call: int):
        self._device, self._call, self._ready = device, call, False
        self.shape, self.dtype = (2, 2), np.dtype(np.float32)

    def block_until_ready(self):
        if not self._ready:
            self._ready = True
            self._device.now += WORK_SECONDS
            self._device.events.append(("sync", self._call))
        return self

    def __array__(self, dtype=None, copy=None):
        self.block_until_ready()
        return np.zeros(self.shape, dtype or self.dtype)

    def copy_to_host_async(self):
        pass


def _scripted_clocks(device: ScriptedDevice) -> dict:
    return {
        getattr(time, name): (lambda convert=convert: device.read(convert))
        for name, convert in _CLOCKS.items()
    }


@contextlib.contextmanager
def scripted_time(device: ScriptedDevice, *namespaces: dict):
    """Point every reachable clock at the scripted one, and put them all back after.

    Reachable: the `time` module's clocks, `timeit`'s default timer (also the default
    argument of `timeit.Timer`, `timeit.timeit` and `timeit.repeat`), and any name in the
    given namespaces (the student's globals) bound to a real clock by `from time import ...`.
    """
    replacements = _scripted_clocks(device)
    undo = []

    def swap_attr(owner, name, value):
        undo.append((setattr, owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def swap_item(mapping, key, value):
        undo.append((dict.__setitem__, mapping, key, mapping[key]))
        mapping[key] = value

    try:
        for name in _CLOCKS:
            swap_attr(time, name, replacements[getattr(time, name)])
        if timeit.default_timer in replacements:
            swap_attr(timeit, "default_timer", replacements[timeit.default_timer])
        for func in (timeit.Timer.__init__, timeit.timeit, timeit.repeat):
            defaults = func.__defaults__ or ()
            if any(d in replacements for d in defaults):
                swap_attr(func, "__defaults__", tuple(replacements.get(d, d) for d in defaults))
        for namespace in namespaces:
            for key, value in list(namespace.items()):
                try:
                    if value in replacements:
                        swap_item(namespace, key, replacements[value])
                except TypeError:  # unhashable values cannot be clocks
                    pass
        yield device
    finally:
        for restore, owner, key, value in reversed(undo):
            restore(owner, key, value)


@dataclass
class TimerRun:
    first: float
    warm: list
    calls: int
    events: list

    def unsynchronized_measurements(self) -> list[int]:
        """Calls whose measurement ended (the next clock read) before their result was ready."""
        late = []
        ready = set()
        pending = None
        for kind, value in self.events:
            if kind == "call":
                pending = value
            elif kind == "sync":
                ready.add(value)
            elif kind == "clock" and pending is not None:
                if pending not in ready:
                    late.append(pending)
                pending = None
        return late


def run_timer(timer, warm_calls: int, *, keyword: str = "warm_calls") -> TimerRun:
    """Run a student's `timer(fn, *args, warm_calls=N)` on the scripted device."""
    device = ScriptedDevice()
    namespace = getattr(timer, "__globals__", {})
    with scripted_time(device, namespace):
        first, warm = timer(device, "x", "w", **{keyword: warm_calls})
    return TimerRun(float(first), [float(s) for s in warm], device.calls, list(device.events))


def close(value: float, expected: float) -> bool:
    return math.isclose(value, expected, rel_tol=0, abs_tol=1e-6)
