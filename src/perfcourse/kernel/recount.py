"""performance-04's `measure` run apart from the notebook, on functions built from a seed (issue 51).

The equation check once took the count from a probe in the student's kernel, which a replaced
probe could answer with the course's own counting while `measure` never ran. The grader now also
runs `measure` in a process of its own (grading/recount.py starts it, sandboxed as a student's
kernel is): a plain Python process, no Jupyter kernel, that runs

1. the instructor's cells before the `measure` cell, from source/ (a helper the student redefined
   in one of them is the lesson's again; grade, solution, figure and report cells are left out);
2. from the submission's other code cells, only the def, class and import statements that bind a
   name the `measure` cell needs (followed through what those bind in turn), never a name the
   lesson's cells bind: whatever those cells did at their top level (a replaced probe) is not here;
3. the submission's `measure` cell;

then calls `measure(fn, *args, warm_calls=1)` on each function `seeded_functions(seed)` builds (of
the lesson's loop's arguments, h, xs and a, at shapes drawn from the seed): random nestings of jit,
scan, cond, fori_loop, Python-unrolled steps and elementwise chains, so no table by kind and
length predicts a count. The trusted kernel builds the same functions from the
same seed and counts them itself (checks/loops.py). Nothing here counts anything.

A name the `measure` cell needs that another cell binds otherwise (an assignment, a loop, an
attribute set at the top level) cannot be had here: it is reported as `unseen`, and a run that then
fails is not the student's fault (the grader flags it and falls back to the probe's word).

One JSON line each way: the request on stdin ({"lesson": [source, ...], "cells": [source, ...],
"target": index of the measure cell in cells, "name": "measure", "seed": int}), the reply as the
last line of stdout, after RESULT_MARK: {"counts": [...], "unseen": [...]} or {"error": why,
"stage": "lesson" | "cells" | "measure", "unseen": [...]}. `verify(request)` is the same in-process.
"""
from __future__ import annotations

import ast
import builtins
import json
import sys

RESULT_MARK = "perfcourse-recount: "
STARTED_MARK = "perfcourse-recount started"  # before any cell runs: an end without a result after it is theirs
UNPARSED = "(a cell that does not parse)"
FUNCTIONS = 2          # functions measure is handed per notebook
WARM_CALLS = 1
_UNARY = ("sin", "cos", "tanh", "abs", "negative", "exp")
_HOLDERS = ("jit", "scan", "cond", "fori", "unroll", "seq")


def result_path(channel):
    """Where the grader writes the recount of the notebook whose channel folder is `channel`: beside
    it, in the folder only the trusted kernel has bound (grading/recount.py, checks/loops.py)."""
    return channel.parent / f"{channel.name}.recount.json"


# --------------------------------------------------------------------------- the seeded functions

def _plan(rng, depth: int):
    """A random program as plain data: a chain of elementwise steps, or a holder of smaller programs."""
    if depth <= 0 or rng.random() < 0.3:
        return ("chain", [str(_UNARY[int(i)]) if i < len(_UNARY) else ("scale" if i % 2 else "shift")
                          for i in rng.integers(0, len(_UNARY) + 2, int(rng.integers(1, 5)))])
    kind = _HOLDERS[int(rng.integers(0, len(_HOLDERS)))]
    if kind == "cond":
        return ("cond", _plan(rng, depth - 1), _plan(rng, depth - 1))
    if kind in ("fori", "unroll"):
        return (kind, int(rng.integers(2, 4)), _plan(rng, depth - 1))
    if kind == "seq":
        return ("seq", [_plan(rng, depth - 1) for _ in range(int(rng.integers(2, 4)))])
    return (kind, _plan(rng, depth - 1))


def _root(rng):
    """A program with at least one holder at its top level (a count of the top level alone is wrong)."""
    parts = [_plan(rng, 3) for _ in range(int(rng.integers(1, 3)))]
    parts.insert(int(rng.integers(0, len(parts) + 1)), _holder(rng))
    return ("seq", parts)


def _holder(rng):
    kind = ("jit", "scan", "cond", "fori")[int(rng.integers(0, 4))]
    inner = ("seq", [("chain", ["sin", "scale"]), _plan(rng, 2)])  # two or more operations inside
    if kind == "cond":
        return ("cond", inner, _plan(rng, 2))
    if kind == "fori":
        return ("fori", int(rng.integers(2, 4)), inner)
    return (kind, inner)


def _build(plan, constant: float):
    """The function of h (batch, width), xs (length, batch, width) and a (width,), the lesson's
    loop's arguments, that `plan` describes."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    kind = plan[0]
    if kind == "chain":
        def chain(v, xs, a):
            for step in plan[1]:
                if step == "scale":
                    v = v * a * constant
                elif step == "shift":
                    v = v + xs[0]
                else:
                    v = getattr(jnp, step)(v)
            return v
        return chain
    if kind == "seq":
        parts = [_build(part, constant) for part in plan[1]]

        def seq(v, xs, a):
            for part in parts:
                v = part(v, xs, a)
            return v
        return seq
    if kind == "cond":
        yes, no = _build(plan[1], constant), _build(plan[2], constant)
        return lambda v, xs, a: lax.cond(jnp.sum(v) > 0, lambda u: yes(u, xs, a), lambda u: no(u, xs, a), v)
    if kind in ("fori", "unroll"):
        trips, inner = plan[1], _build(plan[2], constant)
        if kind == "fori":
            return lambda v, xs, a: lax.fori_loop(0, trips, lambda i, c: inner(c, xs, a), v)

        def unroll(v, xs, a):
            for _ in range(trips):
                v = inner(v, xs, a)
            return v
        return unroll
    inner = _build(plan[1], constant)
    if kind == "jit":
        jitted = jax.jit(inner)
        return lambda v, xs, a: jitted(v, xs, a)
    return lambda v, xs, a: lax.scan(lambda c, x: (inner(c, xs, a) + x, None), v, xs)[0]


def _as_function(body):
    def fn(h, xs, a):
        return body(h, xs, a)
    return fn


def seeded_functions(seed: int) -> list[tuple]:
    """FUNCTIONS pairs (fn, args) built from `seed`: the same functions, of the same arguments'
    shapes and values, in every process that asks with the same seed."""
    import numpy as np

    rng = np.random.default_rng(int(seed))
    built = []
    for _ in range(FUNCTIONS):
        plan = _root(rng)
        batch, width, length = int(rng.integers(1, 5)), int(rng.integers(2, 9)), int(rng.integers(2, 8))
        fn = _as_function(_build(plan, float(rng.uniform(0.5, 0.9))))
        args = (rng.standard_normal((batch, width)).astype(np.float32),
                rng.standard_normal((length, batch, width)).astype(np.float32),
                rng.uniform(-0.9, 0.9, width).astype(np.float32))
        built.append((fn, args))
    return built


# --------------------------------------------------------------------------- what runs here

_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _loaded(node) -> set[str]:
    """Names a piece of code reads and does not bind itself anywhere inside (a superset of its free
    names, less a name it reads globally in one place and binds locally in another)."""
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - _stored(node)


def _stored(node) -> set[str]:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= bound_by(n)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
    return names


def _top_level(statement) -> set[str]:
    """Names a statement binds at the top level of its cell (not those of a function or class inside it)."""
    if isinstance(statement, _DEFINES):
        return bound_by(statement)
    names, todo = set(), [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= bound_by(node)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _mentioned(node) -> set[str]:
    """Every name a piece of code reads, binds, declares global or deletes, anywhere inside it."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | _declared(node)


def _declared(node) -> set[str]:
    return {name for n in ast.walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}


def bound_by(statement) -> set[str]:
    """Names a def, class or import statement binds at the top level."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name.split(".")[0]) for alias in statement.names if alias.name != "*"}
    return {statement.name}


def _parsed(source: str) -> list:
    try:
        return ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [None]  # a cell that does not parse: what it binds is unknown


def selection(lesson: list[str], cells: list[str], target: int) -> tuple[list[str], set[str]]:
    """The other cells' statements to run before the measure cell (their source, in notebook order),
    and the names the measure cell needs that only statements left out bind or change (UNPARSED:
    a cell that does not parse, whatever it binds). The measure cell must parse."""
    given = {name for source in lesson for statement in ast.parse(source).body for name in _top_level(statement)}
    given |= set(dir(builtins))
    measure_cell = ast.parse(cells[target])
    own = {name for statement in measure_cell.body for name in _top_level(statement)}
    others = [(i, s) for i, source in enumerate(cells) if i != target for s in _parsed(source)]
    needed, wanted = set(), _loaded(measure_cell) - own - given
    chosen: dict[tuple[int, int], object] = {}
    while wanted - needed:
        needed |= wanted
        wanted = set(needed)
        for number, (_, statement) in enumerate(others):
            if number not in chosen and isinstance(statement, _DEFINES) and bound_by(statement) & needed:
                chosen[number] = statement
                wanted |= _loaded(statement) - own - given
    unseen = {UNPARSED} if any(statement is None for _, statement in others) else set()
    for number, (_, statement) in enumerate(others):
        if number in chosen or statement is None:
            continue
        # A statement left out changes a needed name if it binds it, sets or deletes something of it, or (a
        # def's body, once called) declares it global; a def's other mentions of it change nothing.
        unseen |= (_declared(statement) if isinstance(statement, _DEFINES) else _mentioned(statement)) & needed
    return [ast.unparse(chosen[n]) for n in sorted(chosen)], unseen


def _equations(value) -> int:
    """The count measure returned, read as the check reads it (an int, or what int() takes)."""
    if not isinstance(value, dict) or "equations" not in value:
        raise ValueError(f"measure returned {type(value).__name__}, not a dict holding 'equations'")
    try:
        return int(value["equations"])
    except (TypeError, ValueError):
        raise ValueError(f"equations should be an integer, got {type(value['equations']).__name__}") from None


def python_of(source: str) -> str:
    """A cell's source as plain Python: IPython's magics and shell escapes become calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def verify(request: dict) -> dict:
    """Run the lesson's cells, the chosen statements and the measure cell in a fresh namespace, then
    measure on the seeded functions; the counts it returned, or where and why it failed."""
    lesson = [python_of(source) for source in request["lesson"]]
    cells = [python_of(source) for source in request["cells"]]
    target = int(request["target"])
    try:
        chosen, unseen = selection(lesson, cells, target)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {"error": f"the measure cell could not be parsed ({type(exc).__name__})", "stage": "measure",
                "unseen": []}
    unseen = sorted(unseen)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    stages = [("lesson", source) for source in lesson] + [("cells", source) for source in chosen]
    stages.append(("measure", cells[target]))
    for stage, source in stages:
        try:
            exec(compile(source, f"<{stage}>", "exec"), namespace)
        except BaseException as exc:  # noqa: BLE001 (SystemExit too: what stopped it is the answer)
            return {"error": f"{_said(exc)} while running the {stage} cells", "stage": stage, "unseen": unseen}
    measure = namespace.get(request["name"])
    if not callable(measure):
        return {"error": f"the cell defines no function {request['name']}", "stage": "measure", "unseen": unseen}
    import jax

    counts = []
    for fn, args in seeded_functions(request["seed"]):
        args = jax.block_until_ready(tuple(jax.device_put(arg) for arg in args))
        try:
            counts.append(_equations(measure(fn, *args, warm_calls=WARM_CALLS)))
        except BaseException as exc:  # noqa: BLE001
            return {"error": f"measure raised {_said(exc)}", "stage": "measure", "unseen": unseen}
    return {"counts": counts, "unseen": unseen}


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}" if str(exc) else type(exc).__name__


def main() -> None:
    request = json.loads(sys.stdin.readline())
    print(STARTED_MARK, flush=True)
    result = verify(request)
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = round(used.ru_utime + used.ru_stime, 3)  # for the record: what a recount costs here
    sys.stdout.flush()
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
