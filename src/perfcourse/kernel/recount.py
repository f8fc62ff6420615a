"""performance-04's `measure` run apart from the notebook, on functions built from a seed (issue 51).

The equation check once took the count from a probe in the student's kernel, which a replaced
probe could answer with the course's own counting while `measure` never ran. The grader now also
runs `measure` in a process of its own (grading/recount.py starts it, sandboxed as a student's
kernel is): a plain Python process, no Jupyter kernel, that runs

1. the instructor's cells before the `measure` cell, from source/ (a helper the student redefined
   in one of them is the lesson's again; grade, solution, figure and report cells are left out);
2. from the submission's other code cells, only the def, class and import statements that bind a
   name the `measure` cell mentions (followed through what those mention in turn), never a name the
   lesson's cells bind: whatever those cells did at their top level (a replaced probe) is not here;
3. the submission's `measure` cell (magics run by a shell on its globals: `get_ipython`);

then calls `measure(fn, *args, warm_calls=1)` on each function `seeded_functions(seed)` builds (of
the lesson's loop's arguments, h, xs and a, at shapes drawn from the seed): random nestings of jit,
scan, cond, fori_loop, Python-unrolled steps and elementwise chains, so no table by kind and
length predicts a count. The trusted kernel builds the same functions from the
same seed and counts them itself (checks/loops.py). Nothing here counts anything.

What the `measure` cell may lack here (a name another cell binds by an assignment or changes at its
top level, one no cell binds, a module not installed: `selection`) is found before any student code
runs and said on a private pipe, with whether the lesson's cells ran; the pipe is closed before the
student's cells run, so the grader decides by it, never by what those cells print (a forged error,
a stall, an exit): where something was lacking a failed run is not the student's fault (the grader
flags it and falls back to the probe's word); where nothing was, it is theirs (issue 51).

In: the request, one JSON line on stdin ({"lesson": [source, ...], "cells": [source, ...], "target":
index of the measure cell in cells, "name": "measure", "seed": int}). Out: on the private pipe (the
descriptor in PERFCOURSE_EVIDENCE_FD: the launcher's evidence pipe, copied to a file outside the
sandbox) STARTED_MARK, PREPARED_MARK + {"unseen": {...}} or {"error": why}, then LESSON_RAN or
LESSON_FAILED + why (`private_marks`); on stdout, last, RESULT_MARK + {"counts": [...]} or
{"error": why, "stage": "lesson" | "cells" | "measure"}. `verify(request)` is the same sequence
(`run`) in-process.
"""
from __future__ import annotations

import ast
import builtins
import json
import os
import symtable
import sys

from .evidence import ENV_FD

RESULT_MARK = "perfcourse-recount: "           # stdout, the student's code's too: the reply, a claim
# The private pipe's lines, all written before any student code runs (main): the grader's knowledge.
STARTED_MARK = "perfcourse-recount started"
PREPARED_MARK = "perfcourse-recount prepared: "  # {"unseen": {subject: why}} or {"error": why}
LESSON_RAN = "perfcourse-recount lesson ran"    # then the pipe is closed and the student's cells run
LESSON_FAILED = "perfcourse-recount lesson failed: "
UNPARSED = "(a cell too deep or too large to read)"  # or not handed over: too large (grading/recount.py)
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
# What a student's kernel holds that no cell binds: IPython's, given here too (`_namespace`).
PROVIDED = ("get_ipython", "display")
UNSEEN_LIMIT = 10  # subjects named in the private answer (a flag names them)


def _global_names(source: str, node) -> set[str]:
    """Names a piece of code reads or sets as globals, in any scope inside it (Python's own scope
    rules: a name a function binds for itself is not one, even if another function reads it)."""
    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _mentioned(node)  # every name it mentions: more than it needs, never less
    names, todo = set(), [table]
    while todo:
        table = todo.pop()
        module = table.get_type() == "module"
        for symbol in table.get_symbols():
            if (symbol.is_referenced() if module else
                    symbol.is_global() and (symbol.is_referenced() or symbol.is_assigned())):
                names.add(symbol.get_name())
        todo.extend(table.get_children())
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


def _star(statement) -> bool:
    return isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names)


def _parsed(source: str | None) -> list:
    if source is None:
        return [None]  # not handed over (grading/recount.py: too large)
    try:
        return ast.parse(source).body
    except (SyntaxError, ValueError):
        return []      # it does not run in the notebook either: it binds nothing there
    except (RecursionError, MemoryError):
        return [None]  # too deep or too large to read here: what it binds is unknown


def _not_installed(statement) -> list[str]:
    """The modules an import statement names that this process cannot find (a student's own file:
    the recount runs without the submission's folder). Found, not imported: nothing runs."""
    import importlib.util

    if isinstance(statement, ast.ImportFrom):
        tops = ["." * statement.level + (statement.module or "")] if statement.level else [statement.module or ""]
    elif isinstance(statement, ast.Import):
        tops = [alias.name for alias in statement.names]
    else:
        return []
    missing = []
    for top in (name.split(".")[0] for name in tops):
        try:
            found = bool(top) and importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(top or "(a relative import)")
    return missing


def selection(lesson: list[str], cells: list[str], target: int) -> tuple[list[str], dict[str, str]]:
    """The other cells' statements to run before the measure cell (their source, in notebook order),
    and what the measure cell, run apart, may lack: {name or module: why}. The measure cell must parse.

    Chosen: every def, class and import of another cell that binds a name the measure cell (or a
    statement chosen) mentions, free or not (a helper's name reused for a local elsewhere is still
    the helper's); star imports too, where a name it needs is bound by no statement here. Lacking:
    a name those need (by Python's scope rules) that a statement left out binds or changes, or that
    no statement binds (IPython's names, `globals()[...] = `, a star import's); a module not installed
    that the measure cell or a statement chosen imports, at its top level or inside;
    UNPARSED, a cell too deep to read. Computed before any student code runs (main: then it is the
    grader's knowledge, said on the private pipe)."""
    given = {name for source in lesson for statement in ast.parse(source).body for name in _top_level(statement)}
    given |= set(dir(builtins)) | set(PROVIDED)
    measure_cell = ast.parse(cells[target])
    own = {name for statement in measure_cell.body for name in _top_level(statement)}
    others = [s for i, source in enumerate(cells) if i != target for s in _parsed(source)]
    mentioned = _mentioned(measure_cell) - own - given
    needed = _global_names(cells[target], measure_cell) - own - given
    binders: dict[str, list[int]] = {}  # name -> the defs, classes and imports binding it (linear, however long)
    for number, statement in enumerate(others):
        if isinstance(statement, _DEFINES):
            for name in bound_by(statement):
                binders.setdefault(name, []).append(number)
    chosen: dict[int, object] = {}
    todo = list(mentioned)
    while todo:
        for number in binders.get(todo.pop(), ()):
            if number in chosen:
                continue
            statement = chosen[number] = others[number]
            more = _mentioned(statement) - own - given - mentioned
            mentioned |= more
            todo.extend(more)
            needed |= _global_names(ast.unparse(statement), statement) - own - given
    lacking = {UNPARSED: "what it binds is unknown"} if any(s is None for s in others) else {}
    bound = {name for statement in others if statement is not None for name in _top_level(statement)}
    nowhere = needed - bound
    if nowhere:
        chosen.update({n: s for n, s in enumerate(others) if s is not None and _star(s)})
    for name in sorted(nowhere):
        lacking[name] = "no cell binds it where the recount can see"
    for number, statement in enumerate(others):
        if number in chosen or statement is None:
            continue
        # A statement left out changes a needed name if it binds it, sets or deletes something of it, or (a
        # def's body, once called) declares it global; a def's other mentions of it change nothing.
        for name in (_declared(statement) if isinstance(statement, _DEFINES) else _mentioned(statement)) & needed:
            lacking.setdefault(name, "another cell binds or changes it at its top level")
    for node in (n for part in [measure_cell, *chosen.values()] for n in ast.walk(part)):  # inside functions too
        for module in _not_installed(node):
            lacking[f"module {module}"] = "not installed: a file of the submission's?"
    return [ast.unparse(chosen[n]) for n in sorted(chosen)], lacking


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


def _plain(source: str | None) -> str | None:
    if source is None:
        return None
    try:
        return python_of(source)
    except Exception:  # noqa: BLE001 (what IPython cannot read, Python's parser judges)
        return source


def _namespace() -> dict:
    """The cells' globals: IPython's `get_ipython` (a shell on these globals, made on first use: the
    magics run in it) and `display`, as a student's kernel has them."""
    namespace, shells = {"__name__": "__main__", "__builtins__": builtins}, []

    def get_ipython():
        if not shells:  # a shell of its own, not the process's singleton: its globals are these
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config

            config = Config()
            config.HistoryManager.enabled = False  # nothing written to the sandbox's home
            shells.append(InteractiveShell(config=config, user_ns=namespace))
        return shells[0]

    def display(*objects, **options):
        from IPython.display import display as shown

        return shown(*objects, **options)

    namespace.update(get_ipython=get_ipython, display=display)
    return namespace


class Prepared:
    """What the grader knows before any student code runs: the cells to run and what they may lack
    (or why the measure cell cannot run at all), then whether the lesson's cells ran."""

    def __init__(self, request: dict):
        self.request, self.error, self.namespace = request, None, _namespace()
        self.lesson = [_plain(source) for source in request["lesson"]]
        cells = [_plain(source) for source in request["cells"]]
        self.measure_cell, self.chosen, self.lacking = cells[int(request["target"])], [], {}
        try:
            if self.measure_cell is None:
                raise ValueError("too large")
            self.chosen, self.lacking = selection(self.lesson, cells, int(request["target"]))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            self.error = f"the measure cell could not be parsed ({type(exc).__name__})"

    def said(self) -> dict:
        """The private answer's line: what the grader decides the fallback by."""
        if self.error:
            return {"error": self.error}
        # Each name and reason cut as the grader quotes them: a long one must not push the line past what it reads.
        return {"unseen": {str(name)[:60]: str(why)[:80] for name, why in sorted(self.lacking.items())[:UNSEEN_LIMIT]}}

    def run_lesson(self) -> str | None:
        """The lesson's cells (the instructor's, before any of the student's): None, or why they failed."""
        for source in self.lesson:
            try:
                exec(compile(source, "<lesson>", "exec"), self.namespace)
            except BaseException as exc:  # noqa: BLE001 (SystemExit too)
                return f"{_said(exc)} while running the lesson's cells"
        return None

    def run_student(self) -> dict:
        """The chosen statements, the measure cell, then measure on the seeded functions."""
        stages = [("cells", source) for source in self.chosen] + [("measure", self.measure_cell)]
        for stage, source in stages:
            try:
                exec(compile(source, f"<{stage}>", "exec"), self.namespace)
            except BaseException as exc:  # noqa: BLE001 (SystemExit too: what stopped it is the answer)
                return {"error": f"{_said(exc)} while running the {stage} cells", "stage": stage}
        measure = self.namespace.get(self.request["name"])
        if not callable(measure):
            return {"error": f"the cell defines no function {self.request['name']}", "stage": "measure"}
        import jax

        counts = []
        for fn, args in seeded_functions(self.request["seed"]):
            args = jax.block_until_ready(tuple(jax.device_put(arg) for arg in args))
            try:
                counts.append(_equations(measure(fn, *args, warm_calls=WARM_CALLS)))
            except BaseException as exc:  # noqa: BLE001
                return {"error": f"measure raised {_said(exc)}", "stage": "measure"}
        return {"counts": counts}


def run(request: dict, tell, close) -> dict:
    """The recount's one sequence, apart (main) or in-process (verify): prepare, `tell` the private
    side each of its lines (STARTED_MARK, what the cell may lack, whether the lesson's cells ran),
    `close` it, and only then run the student's cells: the reply."""
    tell(STARTED_MARK)
    prepared = Prepared(request)
    tell(PREPARED_MARK + json.dumps(prepared.said()))
    problem = None if prepared.error else prepared.run_lesson()
    tell(LESSON_RAN if problem is None else LESSON_FAILED + problem[:300])
    close()
    if prepared.error:
        return {"error": prepared.error, "stage": "measure"}
    if problem:
        return {"error": problem, "stage": "lesson"}
    return prepared.run_student()


def verify(request: dict) -> dict:
    """The recount in-process (tests): the counts measure returned, or where and why it failed,
    with what the grader would know of it beforehand (`unseen`, as the private side was told)."""
    private = []
    result = run(request, private.append, lambda: None)
    said = json.loads(next(line for line in private if line.startswith(PREPARED_MARK))[len(PREPARED_MARK):])
    return {**result, "unseen": said.get("unseen", {})}


def private_marks(said: dict, lesson: str | None) -> str:
    """What the private pipe holds once the lesson's cells ran (`lesson`: None, or why they failed)."""
    return (f"{STARTED_MARK}\n{PREPARED_MARK}{json.dumps(said)}\n"
            + (LESSON_RAN + "\n" if lesson is None else f"{LESSON_FAILED}{lesson[:300]}\n"))


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}" if str(exc) else type(exc).__name__


def main() -> None:
    # The private pipe (the launcher's evidence pipe, copied outside the sandbox): closed before any
    # student code runs, so what it says is the grader's knowledge; what follows on stdout is theirs.
    value = os.environ.pop(ENV_FD, "")
    private = int(value) if value.isdigit() else None
    request = json.loads(sys.stdin.readline())

    def tell(line: str) -> None:
        if private is not None:
            os.write(private, (line + "\n").encode())

    def close() -> None:
        if private is not None:
            os.close(private)

    result = run(request, tell, close)
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_seconds"] = round(used.ru_utime + used.ru_stime, 3)  # for the record: what a recount costs here
    result["peak_kib"] = used.ru_maxrss
    sys.stdout.flush()
    sys.stdout.write("\n" + RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
