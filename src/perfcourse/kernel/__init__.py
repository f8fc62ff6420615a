"""Code that runs inside the student's grading kernel: the evidence hook (`evidence`), the
channel's answering end (`agent`) and the probes it runs (`probes`). Nothing here is trusted."""

# The launcher hands the kernel the channel's listening socket, made before any student code runs,
# as this inherited file descriptor (perfcourse.grading.sandbox, perfcourse.kernel.agent).
CHANNEL_FD_ENV = "PERFCOURSE_CHANNEL_FD"
