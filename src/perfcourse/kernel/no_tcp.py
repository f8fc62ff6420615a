"""`python -m perfcourse.kernel.no_tcp -f CONNECTION_FILE`: ipykernel on a host without TCP.

kernels.manager_class() starts kernels with this module in place of `ipykernel_launcher` where
PERFCOURSE_NO_TCP is set. The kernel's channels already use unix sockets there (the connection
file says `ipc`); what remains is the IOPub pipe that ipykernel opens on tcp://127.0.0.1 for the
output of forked child processes, which IPKernelApp always asks for (libzmq aborts the kernel
where TCP is refused). This app binds IOPub as ipykernel 7 does and asks for no pipe: a forked
child's prints are lost; everything else behaves as in ipykernel.
"""
import zmq
from ipykernel.iostream import IOPubThread
from ipykernel.kernelapp import IPKernelApp


class NoTcpKernelApp(IPKernelApp):
    def init_iopub(self, context):
        self.iopub_socket = context.socket(zmq.XPUB)
        self.iopub_socket.linger = 1000
        self._apply_curve_server_options(self.iopub_socket)
        self.iopub_port = self._bind_socket(self.iopub_socket, self.iopub_port)
        self.configure_tornado_logger()
        self.iopub_thread = IOPubThread(self.iopub_socket, pipe=False, session=self.session)
        self.iopub_thread.start()
        self.iopub_socket = self.iopub_thread.background_socket  # as IPKernelApp: the thread's socket API


if __name__ == "__main__":
    NoTcpKernelApp.launch_instance()
