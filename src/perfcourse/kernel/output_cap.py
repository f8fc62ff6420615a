"""Keep a flood of output from leaving the student's kernel: a budget of messages and bytes per cell.

Every flushed print and every display is a message of its own, which the grader must receive,
authenticate and parse; 20,000 of them in one cell, or 50 MB of prints, cost the grader more than
the cell's time limit on a busy machine. The grader drops what is past its per-cell caps
(`GuardedExecute.max_output_messages`, `max_output_bytes`), but receiving it is already the
cost. So the kernel spends the same budgets first (and the notebook's one budget of printed
text, `notebook_bytes`, across its cells): past them, in that cell, a display is
dropped, an explicit flush does nothing (what is printed leaves with ipykernel's periodic flush,
a few messages a second) and printed text past the byte budget is dropped. The first drop says
so: a display message of type OUTPUT_CUT_MIME, which the grader shows as a line in the cell's output
and names in the grade report ("the output of cell N was cut at 2000 messages").

Student code can undo this like anything else in its interpreter; then its flood costs only its
own cells' time. The grader's caps remain the rule.
"""
from __future__ import annotations

import sys

OUTPUT_CUT_MIME = "application/vnd.perfcourse.output-cut+json"  # {"limit": "2000 messages"}


def install(max_messages: int, max_bytes: int, notebook_bytes: int | None = None) -> None:
    """Give each cell of this kernel `max_messages` explicit flushes and displays and
    `max_bytes` characters of printed text, and all its cells together `notebook_bytes`."""
    from IPython import get_ipython

    shell = get_ipython()
    state = {"messages": 0, "bytes": 0, "noted": set(), "notebook": 0}
    publish = shell.display_pub.publish

    def note(limit: str) -> None:
        if limit not in state["noted"]:
            state["noted"].add(limit)
            publish(data={OUTPUT_CUT_MIME: {"limit": limit}})

    def spend_message() -> bool:
        state["messages"] += 1
        if state["messages"] <= max_messages:
            return True
        note(f"{max_messages} messages")
        return False

    def capped(write):
        def capped_write(text, *args, **kwargs):
            size = len(text) if isinstance(text, str) else 0
            state["bytes"] += size
            state["notebook"] += size
            if notebook_bytes is not None and state["notebook"] > notebook_bytes:
                note(f"the notebook's budget of {notebook_bytes} bytes")
                return size
            if state["bytes"] <= max_bytes:
                return write(text, *args, **kwargs)
            note(f"{max_bytes} bytes")
            return size
        capped_write.capped = True
        return capped_write

    def new_cell(*_):
        state["messages"], state["bytes"] = 0, 0
        state["noted"].clear()
        # IPython swaps each stream's write for a recording one while a cell runs and puts the
        # old one back after it (InteractiveShell._tee), so the byte budget wraps it per cell.
        for stream in (sys.stdout, sys.stderr):
            if not getattr(stream.write, "capped", False):
                stream.write = capped(stream.write)

    shell.events.register("pre_run_cell", new_cell)

    def capped_publish(*args, **kwargs):
        return publish(*args, **kwargs) if spend_message() else None

    shell.display_pub.publish = capped_publish

    for stream in (sys.stdout, sys.stderr):
        def capped_flush(flush=stream.flush):
            if spend_message():
                flush()

        stream.flush = capped_flush
