"""How deep a kernel message nests, read without recursion.

A display's JSON (`application/json`, a comm's state) is the student's: a few kilobytes nested
700 levels deep once took the grader past its recursion limit where nbformat turns an output into
a notebook node (two Python frames a level), and the notebook was not graded. The grader drops
such an output before anything recursive reads it (grading/execute.py), as it drops one past a cap.
A kernel that raised its own recursion limit can send JSON deeper than the grader's parser reads
at all (5,000 levels): `bounded_unpack` reads such a part as {TOO_DEEP: true}, which is dropped the
same way, instead of raising in the client's loop. (A header or parent header nested so deep, which
only a message forged below ipykernel could carry, still stops the notebook: not graded.)
"""
from __future__ import annotations

MAX_NESTING = 100  # levels of a message's content: a notebook output needs a handful
TOO_DEEP = "perfcourse/too-deep"  # what a message part nested past the JSON parser's reach reads as


def bounded_unpack(unpack):
    """A Session's unpack that reads a part nested past the parser's reach as {TOO_DEEP: True}."""
    if getattr(unpack, "bounded", False):
        return unpack

    def unpack_bounded(data):
        try:
            return unpack(data)
        except RecursionError:
            return {TOO_DEEP: True}
        except ValueError as exc:  # orjson's depth limit: "Recursion limit reached"
            if "ecursion" not in str(exc):
                raise
            return {TOO_DEEP: True}

    unpack_bounded.bounded = True
    return unpack_bounded


def deeper_than(value, levels: int = MAX_NESTING) -> bool:
    """Does `value` (dicts and lists, as a message decodes) nest more than `levels` deep?"""
    if isinstance(value, dict) and value.get(TOO_DEEP) is True:
        return True
    containers = (dict, list, tuple)
    pending = [(value, 0)] if isinstance(value, containers) else []
    while pending:  # containers only: a message of two million numbers costs a pass over a list, no more
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth >= levels and len(children):  # its children lie deeper than `levels`
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, containers))
    return False


def flattened(msg: dict) -> dict:
    """A message that decides a grade (an error, a grade cell's stderr) but nests too deep: kept with
    its string fields only (an error's traceback emptied), so nothing recursive reads the rest."""
    content = msg.get("content") or {}
    flat = {key: value for key, value in content.items() if isinstance(value, str)}
    if msg.get("msg_type") == "error":
        flat = {"ename": "", "evalue": "", **flat, "traceback": []}
    return {**msg, "content": flat, "buffers": []}
