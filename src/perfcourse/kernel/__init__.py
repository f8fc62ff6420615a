"""Code that runs inside the student's grading kernel: the evidence hook (`evidence`), the
channel's answering end (`agent`) and the probes it runs (`probes`). Nothing here is trusted.
`forkserver` is the warm process grading workers fork kernels from: it runs outside the sandbox,
but what it holds is what every kernel forked from it holds, so it is here, in the student's view."""

# The launcher hands the kernel the channel's listening socket, made before any student code runs,
# as this inherited file descriptor (perfcourse.grading.sandbox, perfcourse.kernel.agent).
CHANNEL_FD_ENV = "PERFCOURSE_CHANNEL_FD"
