"""The only way grading code and student code talk: values over a Unix socket.

While a notebook is graded, two kernels run it. The student's kernel runs every cell the
student could change (solution cells, added cells, the instructor's lesson cells); the trusted
kernel runs every grade cell (public and hidden checks) and never executes student code. A grade
cell reaches the student's definitions only through this package:

- `codec`: values cross as JSON (numbers, strings, arrays as dtype + shape + bytes, tuples,
  lists and dicts of those); anything else crosses as a numbered reference to an object that
  stays where it lives. Nothing read from the socket is ever unpickled or executed, and every
  message is checked for kind and size before it is used.
- `endpoint`: a symmetric request/reply protocol. While one side waits for its reply it answers
  the other side's requests, so student code can call back into objects the trusted side handed
  it (a stand-in compiler, an instrumented function) without ever holding them.

The student's end lives in `perfcourse.kernel.agent`, the trusted end in `perfcourse.checks.remote`.
"""
