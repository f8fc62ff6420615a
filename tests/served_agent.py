"""A student's namespace served by the real agent on a thread, over a real socket, as the grading
kernel sees it: the channel tests and the lessons' over-the-channel tests share it."""
import contextlib
import json
import os
import socket
import struct
import tempfile
import threading

from perfcourse.checks import remote
from perfcourse.kernel.agent import Agent


def serve(namespace: dict) -> tuple[str, threading.Thread]:
    """The agent serving `namespace` on a thread, until the grader's "end": (its socket, the thread)."""
    path = os.path.join(tempfile.mkdtemp(), "student.sock")
    agent = Agent.at(path, namespace)
    thread = threading.Thread(target=agent.serve, daemon=True)
    thread.start()
    return path, thread


def end(path: str, thread: threading.Thread) -> None:
    """What the grader sends after a grade cell: the agent stops serving."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        message = json.dumps({"id": 0, "op": "end", "args": [], "kwargs": []}).encode()
        sock.sendall(struct.pack(">I", len(message)) + message)
        sock.recv(64)
    thread.join(5)


@contextlib.contextmanager
def served(namespace: dict, lendable: tuple | None = None):
    """While the block runs, this process's checks talk to `namespace` through the channel, as the
    trusted kernel's do: yields the channel."""
    path, thread = serve(namespace)
    channel = remote.Channel(path) if lendable is None else remote.Channel(path, lendable=lendable)
    previous, remote._channel = remote._channel, channel
    try:
        yield channel
    finally:
        remote._channel = previous
        end(path, thread)
