"""The grader's memory is bounded against oversized messages: the sockets of its client to a
student's kernel refuse, unread, any message part over MESSAGE_FACTOR x max_output_bytes (libzmq's
MAXMSGSIZE), and the connection libzmq then closes is noticed and made again."""
from __future__ import annotations

import time

import pytest
import zmq

from conftest import ROOT

from perfcourse.grading.bounded_kernel import BoundedKernelClient, BoundedKernelManager, MessageWatch
from perfcourse.grading.execute import GuardedExecute
from perfcourse.grading.output_limits import MESSAGE_FACTOR
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


# --- the notebook's one output budget ----------------------------------------------------------
def budgeted(max_bytes=1000, messages=50):
    """A GuardedExecute ready to take a notebook's messages, as during grading (no kernel)."""
    import nbformat

    execute = GuardedExecute(config=course_config(ROOT))
    execute.max_output_bytes, execute.max_output_messages = max_bytes, messages
    execute.nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x") for _ in range(80)])
    execute.reset_execution_trackers()
    execute.clear_before_next_output = False
    execute.reset_notebook_state()
    return execute


def start_cell(execute):
    execute.output_budget.start_cell()


def message(kind, content, buffers=()):
    return {"msg_type": kind, "header": {"msg_type": kind}, "parent_header": {"msg_id": "m"}, "metadata": {},
            "content": content, "buffers": list(buffers)}


def kept_bytes(nb) -> int:
    import json

    return sum(len(json.dumps(out)) for cell in nb.cells for out in cell.outputs)


def test_cells_each_under_the_cell_cap_share_one_notebook_budget():
    execute = budgeted()
    budget = execute.max_notebook_output_bytes
    assert budget == 4 * execute.max_output_bytes
    for index, cell in enumerate(execute.nb.cells[:60]):  # 60 cells, each just under its cap
        start_cell(execute)
        execute.process_message(message("stream", {"name": "stdout", "text": "x" * 900}), cell, index)
    assert kept_bytes(execute.nb) < budget + 60 * 200  # the rest: one line per cut cell saying so
    assert execute.output_budget.cut_cells == [
        f"the notebook's output was cut at the notebook's budget of {budget} bytes, from cell 5 on"]
    assert "output limit" in execute.nb.cells[59].outputs[-1].text


def test_display_updates_count_every_output_they_rewrite():
    execute = budgeted()
    for index, cell in enumerate(execute.nb.cells[:8]):  # one small display per cell, one display id
        start_cell(execute)
        execute.process_message(message("display_data", {"data": {"text/plain": "."}, "metadata": {},
                                                         "transient": {"display_id": "d"}}), cell, index)
    start_cell(execute)
    update = message("update_display_data", {"data": {"text/plain": "u" * 300}, "metadata": {},
                                             "transient": {"display_id": "d"}})
    execute.process_message(update, execute.nb.cells[8], 8)  # 300 bytes alone, rewriting 8 outputs
    assert all(cell.outputs[0].data["text/plain"] == "." for cell in execute.nb.cells[:8])
    assert execute.output_budget.cut_cells == ["the output of cell 9 was cut at 1000 bytes"]


def test_comm_messages_spend_the_budget_and_are_not_kept_past_it():
    execute = budgeted()
    start_cell(execute)
    cell = execute.nb.cells[0]
    for number in range(6):
        execute.process_message(message("comm_open", {"comm_id": f"c{number}", "target_name": "jupyter.widget",
                                                      "data": {"state": {"_model_module": "m", "_model_name": "n"}}},
                                                     [b"x" * 700]), cell, 0)
        start_cell(execute)
    assert 0 < len(execute.widget_state) < 6 and execute.output_budget.notebook_cut


def test_an_error_past_every_budget_is_kept_cut_short():
    execute = budgeted()
    start_cell(execute)
    cell = execute.nb.cells[0]
    execute.process_message(message("stream", {"name": "stdout", "text": "x" * 5000}), cell, 0)
    execute.process_message(message("error", {"ename": "AssertionError", "evalue": "e" * 9000,
                                              "traceback": ["t" * 9000] * 50}), cell, 0)
    errors = [out for out in cell.outputs if out.output_type == "error"]
    assert len(errors) == 1 and len(errors[0].evalue) == 2000 and len(errors[0].traceback) == 20


def nested(levels: int) -> dict:
    deep = {}
    level = deep
    for _ in range(levels):
        level["a"] = {}
        level = level["a"]
    return deep


def test_an_output_nested_past_the_bound_is_dropped_unread_with_a_note():
    # adversarial/performance-09/nested-display.py: 700 levels once took nbformat past the recursion
    # limit, and the notebook was not graded. An error as deep is kept by its strings alone.
    from perfcourse.grading.nesting import MAX_NESTING

    execute = budgeted(max_bytes=1 << 20)
    start_cell(execute)
    cell = execute.nb.cells[0]
    shallow = {"data": {"application/json": nested(MAX_NESTING - 5), "text/plain": "ok"}, "metadata": {}}
    execute.process_message(message("display_data", shallow), cell, 0)
    execute.process_message(message("display_data", {"data": {"application/json": nested(5000)}, "metadata": {}}),
                            cell, 0)
    execute.process_message(message("error", {"ename": "E", "evalue": "v", "traceback": [nested(5000)]}), cell, 0)
    kinds = [out.output_type for out in cell.outputs]
    assert kinds == ["display_data", "stream", "error"], kinds
    assert "100 levels of nesting" in cell.outputs[1].text and cell.outputs[2].evalue == "v"
    assert execute.output_budget.cut_cells == ["the output of cell 1 was cut at 100 levels of nesting"]


def test_a_message_part_too_deep_to_parse_reads_as_too_deep_and_is_dropped():
    # adversarial/performance-09/nested-past-the-parser.py: a kernel that raised its own recursion limit
    # sent 5,000 levels, and the grader's client raised as the message arrived.
    from jupyter_client.session import json_unpacker

    from perfcourse.grading.nesting import TOO_DEEP, bounded_unpack

    unpack = bounded_unpack(json_unpacker)
    assert bounded_unpack(unpack) is unpack
    assert unpack(b'{"data": {"text/plain": "ok"}}') == {"data": {"text/plain": "ok"}}
    assert unpack(b'{"a":' * 5000 + b"1" + b"}" * 5000) == {TOO_DEEP: True}
    with pytest.raises(ValueError):
        unpack(b"{not json")
    execute = budgeted()
    start_cell(execute)
    execute.process_message(message("display_data", {TOO_DEEP: True}), execute.nb.cells[0], 0)
    assert execute.output_budget.cut_cells == ["the output of cell 1 was cut at 100 levels of nesting"]
    km = BoundedKernelManager(kernel_name="python3")
    assert getattr(km.client().session.unpack, "bounded", False)


def test_a_status_or_other_message_too_deep_or_without_its_state_is_dropped():
    """A review found a student's status message with content {} (or too deep to parse) reached
    nbclient, which raised on it: the notebook was not graded. Dropped, whatever its kind."""
    from perfcourse.grading.nesting import TOO_DEEP

    execute = budgeted()
    start_cell(execute)
    cell = execute.nb.cells[0]
    for content in ({}, {TOO_DEEP: True}, {"execution_state": ["idle"]}):
        assert execute.process_message(message("status", content), cell, 0) is None
    assert execute.process_message(message("execute_input", {TOO_DEEP: True}), cell, 0) is None
    assert cell.outputs == []  # (the output kinds too deep are cut with a note: the tests above)
