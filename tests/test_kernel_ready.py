"""When the grader takes a kernel to be ready: once it has answered and its IOPub status for that
answer has arrived (bounded_kernel.wait_until_answering), without jupyter_client's 0.2 s of quiet."""
import pytest
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.utils import run_sync

from perfcourse.grading.bounded_kernel import wait_until_answering

pytestmark = pytest.mark.e2e  # starts a kernel


def _outputs(kc, msg_id: str) -> list[str]:
    """The stream text of one request, read from IOPub until its idle status."""
    said = []
    while True:
        msg = run_sync(kc.get_iopub_msg)(timeout=10)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            said.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return said


def test_a_kernel_is_ready_once_it_answers_and_its_output_channel_is_live():
    km = AsyncKernelManager(kernel_name="python3")
    run_sync(km.start_kernel)()
    try:
        # A kernel still starting: asked until it answers; then its output reaches this client.
        kc = km.client()
        kc.start_channels()
        run_sync(wait_until_answering)(kc, 60)
        assert _outputs(kc, kc.execute("print('first')")) == ["first\n"]
        kc.stop_channels()
        # A kernel long up, as a kernel started ahead is: a fresh client is ready at its first answer.
        kc = km.client()
        kc.start_channels()
        run_sync(wait_until_answering)(kc, 60)
        assert _outputs(kc, kc.execute("print('second')")) == ["second\n"]
        kc.stop_channels()
    finally:
        run_sync(km.shutdown_kernel)(now=True)


def test_a_dead_kernel_is_not_waited_for():
    km = AsyncKernelManager(kernel_name="python3")
    run_sync(km.start_kernel)()
    run_sync(km.shutdown_kernel)(now=True)
    kc = km.client()
    kc.start_channels()
    try:
        with pytest.raises(RuntimeError, match="died"):
            run_sync(wait_until_answering)(kc, 60)
    finally:
        kc.stop_channels()
