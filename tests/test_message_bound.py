"""The grader's memory is bounded against oversized messages: the sockets of its client to a
student's kernel refuse, unread, any message part over MESSAGE_FACTOR x max_output_bytes (libzmq's
MAXMSGSIZE), and the connection libzmq then closes is noticed and made again."""
from __future__ import annotations

import time

import pytest
import zmq

from conftest import ROOT

from perfcourse.grading.execute import (MESSAGE_FACTOR, BoundedKernelClient, BoundedKernelManager, GuardedExecute,
                                        MessageWatch)
from perfcourse.nbgrader_bridge import config as course_config

BOUND = 1 << 20


def test_the_bound_is_a_few_times_the_output_cap_of_grader_config():
    execute = GuardedExecute(config=course_config(ROOT))
    assert execute.max_output_bytes == course_config(ROOT).GuardedExecute.max_output_bytes
    assert execute.max_message_bytes == MESSAGE_FACTOR * execute.max_output_bytes and 2 <= MESSAGE_FACTOR <= 8
    assert execute.kernel_manager_class is BoundedKernelManager  # nbgrader's Execute would set its own


def test_every_socket_of_a_bounded_client_has_maxmsgsize():
    km = BoundedKernelManager(kernel_name="python3")
    km.max_message_bytes = BOUND
    assert km.context.getsockopt(zmq.MAXMSGSIZE) == BOUND  # its control socket: interrupts
    kc = km.client()
    assert isinstance(kc, BoundedKernelClient) and kc.max_message_bytes == BOUND
    for connect in (kc.connect_iopub, kc.connect_shell, kc.connect_stdin, kc.connect_hb, kc.connect_control):
        socket = connect()
        try:
            assert socket.getsockopt(zmq.MAXMSGSIZE) == BOUND
        finally:
            socket.close(linger=0)
    kc.context.destroy(linger=0)
    km.context.destroy(linger=0)


class FakeKernel:
    """A kernel's iopub (XPUB) and shell (ROUTER) sockets, bound where a client looks for them."""

    def __init__(self, folder):
        self.context = zmq.Context()
        self.ip = str(folder / "kernel")
        self.iopub = self.context.socket(zmq.XPUB)
        self.iopub.bind(f"ipc://{self.ip}-1")
        self.shell = self.context.socket(zmq.ROUTER)
        self.shell.bind(f"ipc://{self.ip}-2")

    def client(self) -> BoundedKernelClient:
        kc = BoundedKernelClient(transport="ipc", ip=self.ip, iopub_port=1, shell_port=2, stdin_port=3,
                                 control_port=4, hb_port=5, max_message_bytes=BOUND)
        kc.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        return kc

    def subscribed(self, timeout=10.0) -> bool:
        """Has a subscriber (again) joined the iopub socket? (An unsubscription comes first after a drop.)"""
        deadline = time.monotonic() + timeout
        while self.iopub.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            if self.iopub.recv()[:1] == b"\x01":
                return True
        return False

    def close(self):
        self.context.destroy(linger=0)


def received(socket, timeout=2.0) -> list[bytes]:
    found, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        if socket.poll(100):
            found.append(socket.recv_multipart()[-1][:16])
    return found


def sent_until_received(sender, receiver, payload, timeout=10.0) -> bytes | None:
    """Send until the receiver has it: what is published before the subscription is made again is lost."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sender.send_multipart([b"header", payload])
        if receiver.poll(50):
            return receiver.recv_multipart()[-1]
    return None


def dropped(watch, timeout=10.0) -> set[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = watch.dropped()
        if found:
            return found
        time.sleep(0.05)
    return set()


@pytest.fixture
def fake_kernel(tmp_path):
    kernel = FakeKernel(tmp_path)
    yield kernel
    kernel.close()


@pytest.mark.slow
def test_an_oversized_output_message_is_refused_and_its_channel_connected_again(fake_kernel):
    kc = fake_kernel.client()
    watch = MessageWatch(kc)
    iopub = zmq.Socket.shadow(kc.iopub_channel.socket.underlying)  # read it here without an event loop
    try:
        assert fake_kernel.subscribed()
        fake_kernel.iopub.send_multipart([b"header", b"before"])
        fake_kernel.iopub.send_multipart([b"header", b"x" * (BOUND + 1)])
        assert received(iopub) == [b"before"]
        assert dropped(watch) == {"iopub"}      # libzmq closed the connection: seen, and made again
        assert sent_until_received(fake_kernel.iopub, iopub, b"after") == b"after"
        received(iopub, timeout=0.5)  # the copies sent while waiting
        fake_kernel.iopub.send_multipart([b"header", b"y" * BOUND])  # at the bound: kept
        assert received(iopub) == [b"y" * 16] and watch.dropped() == set()
    finally:
        kc.stop_channels()


def test_an_oversized_shell_message_is_refused_too(fake_kernel):
    kc = fake_kernel.client()
    watch = MessageWatch(kc)
    try:
        kc.shell_channel.send(kc.session.msg("kernel_info_request"))
        assert fake_kernel.shell.poll(10_000)
        identity = fake_kernel.shell.recv_multipart()[0]
        fake_kernel.shell.send_multipart([identity, b"x" * (BOUND + 1)])
        assert dropped(watch) == {"shell"}
    finally:
        kc.stop_channels()
