"""What hidden tests call to grade a student's method, never a wall-clock threshold.

A check that fails raises `CheckFailed` (or one of its kinds, all named in STUDENT_FACING) with
a message written for the student: what was wrong and what to change, never a hidden test's
source or the values of the inputs it picked. Feedback shows these messages and nothing else of
a hidden test (grading/feedback.py): besides them, only the student's own exceptions and the
public checks' failures are shown with their messages, and an error of a hidden test's own lines
only as its type (grading/cell_error.py).
"""


class CheckFailed(AssertionError):
    """A hidden check's verdict, worded for the student; feedback shows the message."""


class InstrumentMissing(RuntimeError):
    """The JAX running a check does not show what the lesson reads (a renamed event, another trace
    layout): a fault of the course on this JAX, not of the submission, so never a CheckFailed.
    The grade report names it where a grade cell raised it (grading.execute.GRADER_ERRORS)."""


class MachineBusy(RuntimeError):
    """A check whose every run the grading machine disturbed (its instrument's work never came out as
    planned against its holds): nothing was decided about the submission, so never a CheckFailed. The
    cell scores nothing, as any error does, and the grade report names it where a grade cell raised it
    (grading.execute.GRADER_ERRORS): grade that notebook again on a quieter worker."""


# Every exception class whose message feedback may show: CheckFailed and its kinds
# (checks.audit.AuditFailure, checks.trusted.UntrustedResult). The grade cells run in the trusted
# kernel, and nothing raised by student code crosses the channel as one of these (only builtin
# exception types cross), so an error of one of these names came from a check.
STUDENT_FACING = ("CheckFailed", "AuditFailure", "UntrustedResult")

# A display message of this type, sent by the trusted kernel before it parses a program the
# student's kernel made (checks.remote.taint), tells the grader not to keep that kernel for the
# next notebook (grading/execute.py reads it and drops it from the notebook).
TAINT_MIME = "application/vnd.perfcourse.taint+json"


def on_the_grading_backend(what: str, why: str) -> bool:
    """True where this kernel runs JAX on the CPU, the backend grading always runs on. Elsewhere (a
    lesson recorded on a TPU or a GPU: `perfcourse artifacts --kernel jax-tpu`) a check whose
    reading holds for the CPU's compiler only calls this before that part: it prints one line naming
    what is not checked there and why, and the check runs the rest."""
    import jax

    backend = jax.default_backend()
    if backend == "cpu":
        return True
    print(f"not checked on {backend}: {what} ({why}); grading checks it on the CPU")
    return False


def verdict(problems: list[str]) -> None:
    """Raise CheckFailed naming every problem an audit found; nothing when there is none."""
    if problems:
        raise CheckFailed("\n".join(problems))


def forget_measurements() -> None:
    """Forget what checks measured of this machine: each checks module keeps its calibration (the
    machine's speed, measured in this process) in a module attribute `_calibration` for the rest of
    a notebook. The grader's trusted kernel grades several notebooks in turn; each notebook's
    checks measure afresh, as in a fresh kernel (checks.remote.start_notebook)."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith(__name__ + ".") and getattr(module, "_calibration", None) is not None:
            module._calibration = None
