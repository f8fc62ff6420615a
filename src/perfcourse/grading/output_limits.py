"""How much of a notebook's output the grader keeps: each cell's caps and the notebook's one budget.

A cell keeps at most `max_bytes` of output in at most `max_messages` messages, and the notebook
NOTEBOOK_FACTOR x `max_bytes` over all its cells, every message kind nbclient keeps something of
counted (CAPPED_MESSAGES). A message past a cap is dropped, and the cell says once that its output
was cut; an error, or a grade cell's stderr, decides a grade, so it is kept, cut short (`trimmed`).
The grader's sockets refuse unread any message part over MESSAGE_FACTOR x `max_bytes`
(grading/bounded_kernel.py), so no single message swells the grader's memory before it is counted
here. GuardedExecute (grading/execute.py) holds one OutputBudget per notebook.
"""
from __future__ import annotations

import json

from nbformat.v4 import new_output

# Every message nbclient keeps something of: outputs, display updates (each rewrites every output
# that shares its display id, in any cell), widget comms (their state is kept for the notebook's
# metadata). The per-cell caps and the notebook's one budget count them all, and drop those past them.
CAPPED_MESSAGES = frozenset({"stream", "display_data", "execute_result", "update_display_data", "error",
                             "clear_output", "comm_open", "comm_msg", "comm_close"})
# A message past a budget is dropped, except what decides a grade: an error, or a grade cell's
# stderr (nbgrader scores either as a failure). It is kept cut to KEPT_CHARS characters a field.
KEPT_CHARS = 2000
# The grader's sockets to a student's kernel refuse a message part larger than this many times
# GuardedExecute.max_output_bytes, unread: no more than that of a cell's output is ever kept.
MESSAGE_FACTOR = 4
# One output budget for the whole notebook: NOTEBOOK_FACTOR x max_output_bytes, every cell and every
# message kind together (so 60 cells each just under the per-cell cap keep no more than this).
NOTEBOOK_FACTOR = 4
DISPLAYED = ("display_data", "execute_result", "update_display_data")


def notebook_budget(max_bytes: int) -> int:
    """The notebook's one output budget for a cell cap of `max_bytes`: the grader's count (OutputBudget)
    and the cap the student's kernel is started with (kernel/output_cap.py) read it here."""
    return NOTEBOOK_FACTOR * max_bytes


class OutputBudget:
    """One notebook's output caps: what its cells have sent, what it keeps, which cells were cut."""

    def __init__(self, max_bytes: int, max_messages: int):
        self.max_bytes, self.max_messages = max_bytes, max_messages
        self.notebook_bytes = 0        # kept so far, every cell together
        self.notebook_cut = False      # the notebook's budget ran out (said once, in the report)
        self.cut_cells: list[str] = []  # each cut, in words, for the grade report
        self.start_cell()

    @property
    def max_notebook_bytes(self) -> int:
        return notebook_budget(self.max_bytes)

    def start_cell(self) -> None:
        """A cell's caps count what it sends from here on."""
        self.cell_bytes = self.cell_messages = 0
        self.cell_cut = False

    def take(self, size: int) -> str | None:
        """Count a message of `size` bytes: None when it is kept, else the limit it is past, in words."""
        self.cell_bytes += size  # a cell's caps count what it sent, the notebook's budget what is kept
        self.cell_messages += 1
        limit = (f"{self.max_messages} messages" if self.cell_messages > self.max_messages
                 else f"{self.max_bytes} bytes" if self.cell_bytes > self.max_bytes
                 else f"the notebook's budget of {self.max_notebook_bytes} bytes"
                 if self.notebook_bytes + size > self.max_notebook_bytes else None)
        if limit is None:
            self.notebook_bytes += size
        return limit

    def stream_room(self, taken: int) -> int:
        """How many more characters of stream text to keep, `taken` of them kept in this cell already."""
        return max(0, min(self.max_bytes - taken, self.max_notebook_bytes - self.notebook_bytes))

    def spend(self, size: int) -> None:
        self.notebook_bytes += size

    def cut(self, outs, cell_index: int, limit: str, notebook: bool = False) -> None:
        """Drop this output; the first time in a cell, say so in the cell and in the grade report
        (the notebook's budget: once, from the cell where it ran out)."""
        if self.cell_cut:
            return
        self.cell_cut = True
        if not notebook:
            self.cut_cells.append(f"the output of cell {cell_index + 1} was cut at {limit}")
        elif not self.notebook_cut:
            self.notebook_cut = True
            self.cut_cells.append(f"the notebook's output was cut at {limit}, from cell {cell_index + 1} on")
        # stdout: nbgrader scores any stderr output of a grade cell as a failure
        outs.append(new_output("stream", name="stdout", text=f"\n[output limit of {limit} reached: "
                                                              "the rest of this cell's output was dropped]\n"))


def message_size(msg) -> int:
    """What a kernel message costs to keep: its content as JSON, and its binary buffers."""
    size = len(json.dumps(msg.get("content", {}), default=str))
    for buffer in msg.get("buffers") or ():
        size += memoryview(buffer).nbytes
    return size


def copies(msg, display_id_map: dict) -> int:
    """How many outputs a message becomes: a display id's message rewrites every output that shares
    it (`display_id_map`: nbclient's, display id -> cell -> output indices)."""
    transient = (msg.get("content") or {}).get("transient")
    display_id = transient.get("display_id") if isinstance(transient, dict) else None
    if not display_id or msg.get("msg_type") not in DISPLAYED:
        return 1
    shared = sum(len(found) for found in display_id_map.get(display_id, {}).values())
    return max(1, shared + (msg.get("msg_type") != "update_display_data"))


def trimmed(msg) -> dict:
    """An error or stderr message past a budget, kept (it decides a grade) with each field cut short."""
    content = dict(msg.get("content") or {})
    for key in ("text", "ename", "evalue"):
        if isinstance(content.get(key), str):
            content[key] = content[key][:KEPT_CHARS]
    if isinstance(content.get("traceback"), list):
        content["traceback"] = [str(line)[:KEPT_CHARS] for line in content["traceback"][-20:]]
    return {**msg, "content": content, "buffers": []}
