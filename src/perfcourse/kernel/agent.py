"""The student's end of the channel, inside the student's kernel.

`install(path)` (run by the grader before any student cell) listens on a Unix socket. For each
grade cell the grader runs one line in this kernel, `serve()`, which answers the trusted kernel's
requests on the kernel's main thread, as the student's own cells run, until the grader says
`end`: look up names in the student's namespace, get attributes, call, apply an operator, and
run a course probe (`perfcourse.kernel.probes`). Whatever the student's code prints meanwhile
is the output of that line.

Nothing here is trusted: student code can replace any of it. The trusted side treats every
answer as untrusted data (values only, checked) and judges it itself.
"""
from __future__ import annotations

import operator
import os
import selectors
import socket

from ..channel.codec import ChannelError, Codec
from . import CHANNEL_FD_ENV, library
from ..channel.endpoint import Endpoint, PeerError, as_exception
from .probes import timing  # noqa: F401 (imported at start-up: the instrument binds what it calls now)

# The operators a grade cell may apply to a student's object (a == b, a / b, a[i], -a, ...).
OPERATORS = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs",
    "eq", "ne", "lt", "le", "gt", "ge", "getitem", "contains", "and_", "or_", "xor", "invert",
)}
MAX_ITERATION = 100_000


class Lent:
    """The student's stand-in for an object the trusted side handed over: calls go back to it."""

    def __init__(self, agent: "Agent", handle: int, info: dict):
        self._agent, self._handle, self._info = agent, handle, info

    def _ask(self, op: str, *args, **kwargs):
        try:
            return self._agent.current.request(op, self, *args, **kwargs)
        except PeerError as error:
            raise as_exception(error) from None

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._ask("getattr", name)

    def __repr__(self) -> str:
        return self._info.get("repr") or f"<{self._info.get('type')}>"


class Agent:
    def __init__(self, listener: socket.socket, namespace: dict):
        self.listener, self.namespace = listener, namespace
        self.codec = Codec(make_proxy=lambda handle, info: Lent(self, handle, info))
        self.codec.peer_handle = lambda value: value._handle if type(value) is Lent else None
        self.connections: list[Endpoint] = []  # kept between grade cells (the grader's among them)
        self.current: Endpoint | None = None

    @classmethod
    def at(cls, path: str, namespace: dict) -> "Agent":
        """An agent listening on a socket it makes itself (unsandboxed runs and tests)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        listener.bind(path)
        listener.listen(8)
        return cls(listener, namespace)

    def serve(self) -> None:
        """Answer requests until a connection says `end` (the grader, after the grade cell)."""
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        for endpoint in self.connections:
            selector.register(endpoint.sock, selectors.EVENT_READ, endpoint)

        def drop(endpoint):
            selector.unregister(endpoint.sock)
            endpoint.sock.close()
            self.connections.remove(endpoint)

        try:
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self.listener:
                        conn, _ = self.listener.accept()
                        endpoint = Endpoint(conn, self.codec, self.handle)
                        self.connections.append(endpoint)
                        selector.register(conn, selectors.EVENT_READ, endpoint)
                        continue
                    endpoint = key.data
                    try:
                        message = endpoint.receive()
                    except (ChannelError, OSError):
                        drop(endpoint)
                        continue
                    if message.get("op") == "end":
                        endpoint.send({"re": message.get("id"), "ok": None})
                        return
                    self.current = endpoint
                    try:
                        endpoint.answer(message)
                    except (ChannelError, OSError):
                        drop(endpoint)
        finally:
            selector.close()

    def handle(self, op: str, args: list, kwargs: dict):
        if op == "names":
            return {name: self.namespace[name] for name in args[0] if type(name) is str and name in self.namespace}
        if op == "getattr":
            return getattr(args[0], args[1])
        if op == "call":
            return args[0](*args[1:], **kwargs)
        if op == "op":
            return OPERATORS[args[0]](*args[1:])
        if op == "len":
            return len(args[0])
        if op == "iter":
            items = []
            for item in args[0]:
                items.append(item)
                if len(items) > MAX_ITERATION:
                    raise ValueError(f"more than {MAX_ITERATION} items")
            return tuple(items)
        if op in ("str", "repr", "bool", "float", "int", "index", "hash"):
            return {"str": str, "repr": repr, "bool": bool, "float": float, "int": int,
                    "index": operator.index, "hash": hash}[op](args[0])
        if op == "refresh":
            return args[0]
        if op == "probe":
            from . import probes

            # What the probes rely on and student code replaced, before or while one ran, is flagged.
            seen = library.changed()
            try:
                return probes.run(args[0], *args[1:], **kwargs)
            finally:
                library.report(dict.fromkeys(seen + library.changed()))
        raise ChannelError(f"unknown request {op[:40]!r}")


library.keep("perfcourse.kernel.agent.Lent", Lent, added=True)
library.keep("perfcourse.kernel.agent.Agent", Agent, added=True)
_agent: Agent | None = None


def install(path: str) -> None:
    """Listen for the trusted kernel (called by the grader before any student cell runs): on the
    socket the sandbox's launcher made and handed over, else on one made here at `path`."""
    global _agent
    from IPython import get_ipython

    namespace = get_ipython().user_ns
    fd = os.environ.pop(CHANNEL_FD_ENV, None)
    if fd is not None:
        listener = socket.socket(fileno=int(fd))
        os.set_inheritable(listener.fileno(), False)  # the student's subprocesses do not get it
        _agent = Agent(listener, namespace)
    else:
        _agent = Agent.at(path, namespace)
    # What answers the trusted side from now on: the agent and its codec as they are (its endpoint
    # for the current request is checked apart, `sound_endpoint`), kept before any student code runs.
    library.keep("perfcourse.kernel.agent._agent", _agent, added=True, skip=("current",))
    library.keep("perfcourse.kernel.agent._agent.codec", _agent.codec, added=True)
    library.watch("perfcourse.kernel.agent._agent.current", sound_endpoint)


def sound_endpoint(endpoint_type=Endpoint, socket_type=socket.socket, handle=Agent.handle,
                   fields=frozenset({"sock", "codec", "handle", "_next_id", "broken"})) -> bool:
    """Whether the connection now answering the trusted side is the agent's own, as accept() made it."""
    current = _agent.current
    return current is None or (type(current) is endpoint_type and type(current.sock) is socket_type
                               and current.codec is _agent.codec and set(vars(current)) <= fields
                               and getattr(current.handle, "__func__", None) is handle)


def serve() -> None:
    _agent.serve()
