"""Code that runs inside the student's grading kernel: the evidence hook (`evidence`), the
channel's answering end (`agent`) and the probes it runs (`probes`). Nothing here is trusted.
`forkserver` is the warm process grading workers fork kernels from: it runs outside the sandbox,
but what it holds is what every kernel forked from it holds, so it is here, in the student's view."""

# The launcher hands the kernel the channel's listening socket, made before any student code runs,
# as this inherited file descriptor (perfcourse.grading.sandbox, perfcourse.kernel.agent).
CHANNEL_FD_ENV = "PERFCOURSE_CHANNEL_FD"


def working_folder_on_path() -> None:
    """Put the working folder ('') on sys.path as IPython does where Python is not run with -P:
    before the first site-packages, after the standard library. The grader starts kernels with -P
    (perfcourse.grading.kernel_pair.kernel_argv) and calls this once the course's start-up lines are
    imported, so a student's own modules import while nothing handed in replaces the course's."""
    import os
    import sys

    if "" in sys.path:
        return
    for index, path in enumerate(sys.path):
        if os.path.basename(path) in ("site-packages", "dist-packages"):
            break
    else:
        index = 0
    sys.path.insert(index, "")
