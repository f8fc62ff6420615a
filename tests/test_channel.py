"""The value channel between the trusted kernel and the student's: what crosses, what is refused.

The two ends run here in one process on two threads over a real Unix socket: the student's
`Agent` serving a plain namespace, the trusted `Channel` asking it. No kernel is started.
"""
import functools
import json
import os
import socket
import struct
import sys
import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import served_agent

from perfcourse.channel.codec import ChannelError, Codec
from perfcourse.checks import CheckFailed, remote, sharding
from perfcourse.kernel.agent import Agent


def plain_codec():
    return Codec(make_proxy=lambda handle, info: ("proxy", handle, info["type"]))


def roundtrip(value):
    codec = plain_codec()
    return codec.decode(json.loads(json.dumps(codec.encode(value))))


def test_values_cross_by_value_with_their_kind():
    value = {"n": 3, "x": 1.5, "s": "text", "none": None, "flag": True, "big": 2 ** 80,
             "nan": float("nan"), "t": (1, [2, 3]), "np": np.arange(6, dtype=np.float32).reshape(2, 3),
             "scalar": np.float32(2.5), "jax": jnp.ones((2, 2), jnp.bfloat16), "bytes": b"\x00\x01"}
    back = roundtrip(value)
    assert back["n"] == 3 and back["big"] == 2 ** 80 and back["t"] == (1, [2, 3]) and np.isnan(back["nan"])
    assert type(back["np"]) is np.ndarray and back["np"].dtype == np.float32 and back["np"].shape == (2, 3)
    assert type(back["scalar"]) is np.float32 and back["scalar"] == 2.5
    assert isinstance(back["jax"], jax.Array) and back["jax"].dtype == jnp.bfloat16
    assert back["bytes"] == b"\x00\x01"


def test_objects_cross_as_references_and_come_back_as_themselves():
    codec = plain_codec()
    fn = lambda: None  # noqa: E731
    encoded = codec.encode(fn)
    assert encoded["$t"] == "ref" and "function" in encoded["type"]
    assert codec.decode({"$t": "peer", "h": encoded["h"]}) is fn
    assert codec.encode(np.array([object()]))["$t"] == "ref"  # object arrays never cross by value


@pytest.mark.parametrize("message, why", [
    ({"$t": "array", "kind": "numpy", "dtype": "object", "shape": [1], "v": ""}, "dtype"),
    ({"$t": "array", "kind": "numpy", "dtype": "float32", "shape": [4], "v": "AAAA"}, "bytes"),
    ({"$t": "array", "kind": "numpy", "dtype": "float32", "shape": [-1], "v": ""}, "shape"),
    ({"$t": "pickle", "v": "gASVAAAAAAAAAAB9lC4="}, "unknown value tag"),
    ({"$t": "peer", "h": 99}, "no object"),
    ({"$t": "dict", "v": [[{"$t": "list", "v": []}, 1]]}, "key"),
    ({"$t": "float", "v": "1e400"}, "not a number"),
])
def test_malformed_or_dangerous_values_are_refused(message, why):
    with pytest.raises(ChannelError, match=why):
        plain_codec().decode(message)


def test_nesting_beyond_the_limit_is_refused():
    deep = 1
    for _ in range(100):
        deep = {"$t": "tuple", "v": [deep]}
    with pytest.raises(ChannelError, match="deep"):
        plain_codec().decode(deep)


def test_a_frame_nested_deeper_than_the_json_parser_recurses_is_refused():
    from perfcourse.channel.endpoint import Endpoint

    sender, receiver = socket.socketpair()
    with sender, receiver:
        body = ("[" * 5000 + "]" * 5000).encode()
        sender.sendall(struct.pack(">I", len(body)) + body)
        with pytest.raises(ChannelError, match="nested too deep"):
            Endpoint(receiver, plain_codec(), lambda op, args, kwargs: None).receive()


def test_free_names_are_the_names_a_cell_reads_but_never_binds():
    source = ("from perfcourse.checks import timing\nout = workload(x, w)\nfor _i in range(3):\n"
              "    print(out[_i], np.asarray(w))\ndef helper(a):\n    return a + shift\n"
              "[v for v in values]\ntry:\n    pass\nexcept ValueError as err:\n    err\n")
    assert remote.free_names(source) == {"workload", "x", "w", "np", "shift", "values"}


def _catches(obj):
    try:
        obj.memory_analysis()
    except KeyError as exc:
        return f"caught {exc}"


@pytest.fixture
def student():
    """A student namespace served by the real agent on a thread; the trusted channel connected to it."""
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "student.sock")
    counter = {"traces": 0}

    def counted(x):
        counter["traces"] += 1
        return x * 2

    def raises():
        raise ValueError("student says no")

    namespace = {"counter": counter, "counted": counted, "raises": raises, "np": np, "jnp": jnp,
                 "w": np.ones(3, np.float32), "scale": functools.partial(np.multiply, 3.0),
                 "jitted": jax.jit(lambda a: a + 1), "calls_back": lambda obj: obj.cost_analysis(),
                 "with_default": lambda obj: getattr(obj, "missing", "default"),
                 "catches": lambda obj: _catches(obj)}
    agent = Agent.at(path, namespace)
    thread = threading.Thread(target=agent.serve, daemon=True)
    thread.start()
    channel = remote.Channel(path, lendable=remote.LENDABLE + (__name__,))  # the classes below are this module's
    previous, remote._channel = remote._channel, channel
    try:
        yield channel, namespace
    finally:
        remote._channel = previous
        served_agent.end(path, thread)


def fetch(channel, *names):
    found = channel.request("names", list(names))
    return [found.get(name) for name in names]


def test_names_resolve_to_values_modules_and_remote_objects(student):
    channel, _ = student
    w, np_module, counted, missing = fetch(channel, "w", "np", "counted", "no_such_name")
    assert type(w) is np.ndarray and np_module is np and missing is None
    assert type(counted) is remote.Remote
    assert counted(np.float32(2)) == 4  # the call ran in the student's namespace


def test_a_students_dict_refreshes_after_student_code_ran(student):
    channel, _ = student
    counter, counted = fetch(channel, "counter", "counted")
    assert isinstance(counter, dict) and counter["traces"] == 0
    counted(1)
    counted(2)
    assert counter["traces"] == 2 and counter.get("traces") == 2 and dict(counter) == {"traces": 2}


def test_student_exceptions_arrive_as_the_same_builtin_type(student):
    channel, _ = student
    (raises,) = fetch(channel, "raises")
    with pytest.raises(ValueError, match="student says no"):
        raises()


def test_jitted_functions_are_proxies_that_look_like_jax_objects(student):
    channel, _ = student
    (jitted,) = fetch(channel, "jitted")
    out = jitted(jnp.arange(3.0))
    assert isinstance(out, jax.Array) and out.tolist() == [1.0, 2.0, 3.0]
    lowered = jitted.lower(jnp.arange(3.0))
    assert isinstance(lowered, jax.stages.Lowered) and type(lowered) is remote.Remote
    with pytest.raises(AttributeError):
        jitted.__globals__  # noqa: B018 (underscore attributes never cross)


def test_student_code_calls_back_only_into_what_it_was_handed(student):
    channel, _ = student

    class Compiled:
        def cost_analysis(self):
            return {"flops": 0.0}

        def _secret(self):
            return "hidden"

    (calls_back,) = fetch(channel, "calls_back")
    assert calls_back(Compiled()) == {"flops": 0.0}
    handed = Compiled()
    calls_back(handed)
    with pytest.raises(ChannelError):
        channel.handle("call", [object()], {})  # never handed to the student
    with pytest.raises(AttributeError):
        channel.handle("getattr", [handed, "_secret"], {})
    with pytest.raises(ChannelError):
        channel.handle("exec", [handed], {})


def test_student_code_gets_no_capability_of_the_grading_kernel(student):
    """A module, a builtin, a class or a library's object of the trusted kernel is never something
    student code can call into, even once a check has handed it over: the trusted kernel's modules
    cross by name only (the student's kernel gets its own copy, or nothing), and a request into
    anything but the checks' and grade cells' own code is refused."""
    import builtins
    import functools
    import os

    channel, _ = student
    sent = channel.codec.encode(builtins)
    assert sent == {"$t": "module", "name": "builtins"}  # no reference to call into
    refusing = Codec(make_proxy=lambda handle, info: ("proxy", handle), import_modules=False)
    with pytest.raises(ChannelError, match="by name only"):
        refusing.decode(sent)
    for capability in (builtins.exec, os.system, type, functools.partial(print, "x"), os, remote.pin):
        channel.codec._reference(capability)  # as if a check had handed it over
        with pytest.raises(ChannelError, match="may not call into"):
            channel.handle("call", [capability, "1"], {})
        with pytest.raises(ChannelError, match="may not call into"):
            channel.handle("getattr", [capability, "system"], {})


def test_a_library_wrapper_around_check_code_is_not_lendable():
    """functools.wraps copies __module__ onto a wrapper; what counts is the module its code runs in."""
    library = {"__name__": "some_library"}
    exec("import functools\ndef wrap(f):\n    @functools.wraps(f)\n    def wrapper(*a, **k):\n"
         "        return f(*a, **k)\n    return wrapper\n", library)
    wrapped = library["wrap"](sharding.reference_step)
    assert wrapped.__module__ == "perfcourse.checks.sharding"
    assert remote._lendable(sharding.reference_step, remote.LENDABLE)
    assert not remote._lendable(wrapped, remote.LENDABLE)


class AgreesWithAnything:
    """What a forged probe might return in the student's kernel: it equals whatever it is compared with."""

    def __init__(self, length: int):
        self.length = length

    def __len__(self):
        return self.length

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


def test_a_probe_answer_holding_an_object_is_refused(student, monkeypatch):
    """Forged compile counts that agree with any expectation: refused as not values."""
    from perfcourse.kernel.probes import sharding as probes

    channel, namespace = student
    monkeypatch.setattr(probes, "devices", lambda: {"count": sharding.GRADED_DEVICES, "platform": "cpu"})
    monkeypatch.setattr(probes, "compile_setup", lambda calls, *rest: {"step": None, "calls": list(calls)})
    namespace["forged_counts"] = lambda fn, calls: AgreesWithAnything(len(calls))
    (forged_counts,) = fetch(channel, "forged_counts")
    with pytest.raises(CheckFailed, match="object of type AgreesWithAnything where the grader reads values"):
        sharding.check_compile_key(forged_counts)
    nested = {"a": [1, 2.0, "x", (np.ones(2), {"deep": [AgreesWithAnything(1)]})]}
    monkeypatch.setattr(probes, "devices", lambda: nested)
    with pytest.raises(CheckFailed, match="AgreesWithAnything"):
        remote.probe("sharding.devices")
    plain = {"a": [1, 2.0, "x", (np.ones(2), {"deep": [None, True]})]}
    monkeypatch.setattr(probes, "devices", lambda: plain)
    found = remote.probe("sharding.devices")
    assert found["a"][:3] == [1, 2.0, "x"] and found["a"][3][1] == {"deep": [None, True]}
    # Plain copies, not mirrors of the student's lists and dicts that would fetch new contents later.
    assert type(found) is dict and type(found["a"]) is list and type(found["a"][3][1]["deep"]) is list


def test_grading_needs_the_lessons_devices(student, monkeypatch):
    """A process claiming one device would make every placement whole: refused when grading."""
    from perfcourse.kernel.probes import sharding as probes

    monkeypatch.setattr(probes, "devices", lambda: {"count": 1, "platform": "cpu"})
    with pytest.raises(CheckFailed, match=f"1 device\\(s\\), not the {sharding.GRADED_DEVICES} CPU devices"):
        sharding.device_count()
    monkeypatch.setattr(remote, "_channel", None)  # sharing the notebook's process: the devices there are
    assert sharding.device_count() == 1


def test_trusted_exceptions_reach_student_code_as_the_same_builtin_type(student):
    channel, _ = student

    class Compiled:
        def memory_analysis(self):
            raise KeyError("no plan")

    with_default, catches = fetch(channel, "with_default", "catches")
    assert with_default(Compiled()) == "default"
    assert catches(Compiled()) == "caught 'no plan'"


def test_a_kept_trusted_kernel_forgets_the_last_notebook(monkeypatch):
    """The grader's trusted kernel grades one notebook after another (grading/trusted_kernel.py):
    nothing a grade cell bound or fetched, and nothing a check measured, reaches the next notebook."""
    from IPython.core.interactiveshell import InteractiveShell

    from perfcourse.checks import timing

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # install() points stderr at stdout
    monkeypatch.setattr(remote, "_channel", None)
    shell = InteractiveShell.instance()
    first, first_thread = served_agent.serve({"answer": 21, "helper": lambda x: x + 1})
    second, second_thread = served_agent.serve({"other": 5})
    try:
        remote.start_notebook(first, "import numpy as np")
        assert shell.run_cell("doubled = answer * 2\nbumped = helper(1)\nnp_here = np.float32").success
        assert shell.user_ns["doubled"] == 42 and shell.user_ns["bumped"] == 2
        monkeypatch.setattr(timing, "_calibration", timing.Calibration(1e-9))
        remote._trusted_class("jax.stages.Lowered")
        assert not shell.run_cell("raise ValueError('last notebook')").success
        served_agent.end(first, first_thread)

        remote.start_notebook(second, "")
        assert timing._calibration is None  # measured afresh for this notebook
        assert not remote._CLASSES  # nor the type names the last student's objects gave
        assert not {"doubled", "bumped", "answer", "helper", "np", "np_here"} & set(shell.user_ns)
        assert getattr(sys, "last_value", None) is None
        result = shell.run_cell("seen = answer")  # the last student's name: not there any more
        assert isinstance(result.error_in_exec, NameError)
        assert shell.run_cell("seen = other + 1").success and shell.user_ns["seen"] == 6
    finally:
        for path, thread in ((first, first_thread), (second, second_thread)):
            if thread.is_alive():
                served_agent.end(path, thread)
        if remote._channel is not None:
            shell.events.unregister("pre_run_cell", remote._channel.before_cell)
            remote._channel.close()
        InteractiveShell.clear_instance()


def test_a_type_name_from_the_student_imports_nothing_here():
    """A stand-in reports a JAX class only from a module the trusted kernel has loaded: the name
    is the student's, and an import would outlive the notebook in a kept trusted kernel."""
    import importlib.util

    unloaded = next(name for name in ("jax.experimental.jet", "jax.experimental.ode", "jax.experimental.sparse",
                                      "jax.experimental.checkify") if name not in sys.modules
                    and importlib.util.find_spec(name) is not None)
    assert remote._trusted_class(f"{unloaded}.Anything") is None
    assert unloaded not in sys.modules
    assert remote._trusted_class("jax.stages.Lowered") is jax.stages.Lowered
