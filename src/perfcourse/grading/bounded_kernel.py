"""The grader's kernel clients to a student's kernel: each message part bounded, each dropped connection made again.

A student's kernel could send one message large enough to swell the grader's memory. The grader's
sockets to it refuse, unread, any message part over `max_message_bytes` (libzmq's MAXMSGSIZE: the
`BoundedKernelManager` and its `BoundedKernelClient`s); libzmq then closes that connection, which
`MessageWatch` notices and makes again. `wait_until_answering` is how both grading kernels are
awaited before their first cell.
"""
from __future__ import annotations

import contextlib
import time
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.utils import ensure_async
from traitlets import DottedObjectName, Integer, Type, default, observe
from zmq.utils.monitor import recv_monitor_message

from .nesting import bounded_unpack


async def wait_until_answering(kc, timeout: float) -> None:
    """jupyter_client's `wait_for_ready` without its last 0.2 s: a kernel is ready for cells once it
    has answered a kernel_info request on the shell channel *and* its IOPub status "idle" for that
    same request has reached this client, which proves the client's IOPub subscription live and
    drained up to it. jupyter_client instead reads IOPub until it has been quiet for 0.2 s: a fifth
    of a second of every notebook, twice, for kernels long up. A status published before the
    subscription took hold is lost (ZeroMQ's slow joiner): then it asks again, as jupyter_client does."""
    deadline = time.monotonic() + timeout
    while True:
        asked = kc.kernel_info()
        reply = None
        with contextlib.suppress(Empty):
            while reply is None:  # a late reply to an earlier request of this loop is passed over
                msg = await ensure_async(kc.shell_channel.get_msg(timeout=1))
                if msg["msg_type"] == "kernel_info_reply" and msg["parent_header"].get("msg_id") == asked:
                    reply = msg
        if reply is not None:
            with contextlib.suppress(Empty):
                while True:
                    msg = await ensure_async(kc.iopub_channel.get_msg(timeout=0.5))
                    if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                            and msg["parent_header"].get("msg_id") == asked):
                        kc._handle_kernel_info_reply(reply)
                        return
        if not await ensure_async(kc.is_alive()):
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")


class BoundedKernelClient(AsyncKernelClient):
    """A client whose sockets refuse, unread, any message part over `max_message_bytes` (0: no bound).

    libzmq's MAXMSGSIZE, set on the client's own zmq context before any socket exists, so every
    channel has it: the refused message is never allocated here. libzmq treats it as a protocol
    error and closes that connection for good; `MessageWatch` notices and connects again."""

    max_message_bytes = Integer(0, help="Largest message part the grader reads from the kernel (0: any)")

    @default("context")
    def _context_default(self) -> zmq.asyncio.Context:
        context = super()._context_default()
        if self.max_message_bytes:
            context.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        return context

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        await wait_until_answering(self, float("inf") if timeout is None else timeout)


class BoundedKernelManager(AsyncKernelManager):
    """The student's kernel manager: its clients are BoundedKernelClients with its bound, and its own
    control socket (interrupts) has the bound too."""

    max_message_bytes = Integer(0, help="Largest message part the grader reads from the kernel (0: any)")
    client_class = DottedObjectName("perfcourse.grading.bounded_kernel.BoundedKernelClient")
    client_factory = Type(BoundedKernelClient, klass=AsyncKernelClient)

    @observe("max_message_bytes")
    def _bound_changed(self, change) -> None:
        if change["new"]:
            self.context.setsockopt(zmq.MAXMSGSIZE, change["new"])

    def client(self, **kwargs) -> BoundedKernelClient:
        kwargs.setdefault("max_message_bytes", self.max_message_bytes)
        client = super().client(**kwargs)
        client.session.unpack = bounded_unpack(client.session.unpack)  # JSON too deep to parse: nesting.py
        return client


class MessageWatch:
    """Which of a kernel client's connections libzmq closed since the last look; each is connected again.

    A message part over a socket's MAXMSGSIZE closes its connection (a protocol error: libzmq does
    not connect again by itself, so every later message on that channel would be lost), and a
    socket monitor reports it as a disconnection. A kernel that dies is reported the same way:
    callers check that the kernel still runs before they blame a message."""

    def __init__(self, kc, channels=("iopub", "shell")):
        self._watched = []
        for name in channels:
            sock = getattr(kc, f"{name}_channel").socket
            monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)  # closed with the client's context
            self._watched.append((name, sock, zmq.Socket.shadow(monitor.underlying)))

    def dropped(self) -> set[str]:
        found = set()
        for name, sock, events in self._watched:
            try:
                while events.poll(0):
                    endpoint = recv_monitor_message(events, zmq.NOBLOCK).get("endpoint") or b""
                    endpoint = endpoint.decode() if isinstance(endpoint, bytes) else str(endpoint)
                    found.add(name)
                    if endpoint:
                        try:
                            sock.disconnect(endpoint)
                        except zmq.ZMQError:
                            pass
                        sock.connect(endpoint)  # a SUB socket subscribes again by itself
            except zmq.ZMQError:  # the client's sockets are closed: nothing more to watch
                pass
        return found
