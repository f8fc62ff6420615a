"""Evidence read from the submitted code itself: what the cells outside the grade cells reach for.

The audit hook (kernel/evidence.py) records what the student's kernel does while it runs, from
inside that kernel, where code can silence it (the launcher and the per-cell heartbeat then say
so). This scan reads the submitted notebook in the grader, where nothing the student runs can
change it, and flags mechanisms that no lesson needs and that a submission replacing the course's
code in its own kernel does need:

    code names the grading package 'perfcourse'   imports or names it (its probes, the channel)
    code iterates sys.modules                      walks or searches the loaded modules (a lookup
                                                   or `in` test with a literal name is fine), or
                                                   the `.modules` of any module (`os.sys.modules`),
                                                   or inspect.getmodule (a lookup there by the name
                                                   any object carries: a probe's lent function's)
    code imports a computed name                   __import__ / importlib.import_module, or a
                                                   library call that imports what a string names
                                                   (pkgutil.resolve_name, pydoc.locate and
                                                   safeimport, logging.config's _resolve, an
                                                   importlib.metadata.EntryPoint, mock.patch),
                                                   of a name that is not spelled out in literals
    code changes how modules are imported          sys.meta_path, sys.path_hooks, a module's
                                                   __loader__ or __spec__, a loader's exec_module,
                                                   importlib's loader and finder classes
    code walks every class                         __subclasses__ (every class there is, the
                                                   course's among them, without naming a module)
    code replaces a module's attribute             `module.name = value`, setattr or delattr on a
                                                   module (a library the course's probes import
                                                   when they run, `jax.experimental.pallas`, or
                                                   one of its functions)
    code reads closures                            __closure__, cell_contents, getclosurevars, and a
                                                   function's __globals__ (which leads from any function
                                                   the course hands over to its module)
    code uses gc                                   imports or uses the gc module
    code takes frames                              sys._getframe, inspect.currentframe/stack,
                                                   f_back, f_globals, f_locals, tb_frame, IPython's
                                                   extract_module_locals, a signal handler (handed
                                                   the frame it interrupts), the modules whose
                                                   hooks are handed frames (bdb, pdb, trace, profile)
    code touches file descriptors                  os.dup, os.dup2, os.close, ... or names
                                                   /proc/<pid>/fd or /dev/fd (where the audit
                                                   hook's pipe is found and replaced)
    code reaches a module by a path the scan       a module object read through a name the scan
      cannot read                                  cannot compute (getattr, attrgetter or
                                                   __getattribute__ with a name built at run time;
                                                   a module's whole __dict__ or vars()), handed to
                                                   a call (where a parameter renames it) or stored
                                                   in a container or an attribute
    code shares device memory through dlpack       __dlpack__, from_dlpack, to_dlpack: a device array
                                                   read on the host (or a host array taken onto the
                                                   device) without the transfer a trace records, so a
                                                   loop can update on the host beside one device
                                                   program a step (performance-10's fixes)
    code writes a profiler trace                   a gzip file written or compressed, or a file opened
                                                   for writing in a cell that names a trace file
                                                   (perfetto_trace, trace.json, xplane.pb, TRACE_FILE):
                                                   the checks parse the trace the student's process
                                                   hands back, edited or planted there or not
    code could not be scanned                      a cell the scan could not read to its end
                                                   (nested beyond the walk, out of memory or time:
                                                   bounded_scan.py): never read as clean

The scan follows data flow through names, not spellings: a module is followed through every name
it is bound to (an import, `m = sys`, `a, b = os, sys`, `(m := sys)`, a default argument, a `for`
or `with` over modules, `globals()["m"] = sys`, over all the cells until nothing new is bound), and
an attribute is read whichever getter reads it (`.name`, `getattr` and any name bound to it,
`operator.attrgetter`, `__getattribute__` of the object or of any type, `inspect.getattr_static`,
`__dict__[...]`, `__dict__.get(...)`, `vars()[...]`; `__builtins__` is the builtins module, and a
lookup in it by a name built at run time reaches what that name holds). A relative import (`import_module(".x",
package=...)`, `__import__` with a level) is resolved where its package is spelled out, else it is a
computed name.

Each flag ends with the cells it was found in: "code takes frames (cell 7, 9)". Names joined from
literal pieces ("perf" + "course", f-strings, "".join and os.path.join of literals) count as
spelled out (up to LITERAL_DEPTH pieces). A cell is read as IPython runs it: magics and shell lines
become calls, and the code handed to a magic as text (`%time CODE`, a `%%timeit` cell) is read as
code too. What the scan cannot see: a name computed at run time from anything else, and code that
arrives as data (exec of a string read from a file) beyond what the audit hook records. The flags
are evidence for a human to review, never a verdict; tests/test_code_scan.py proves that no
lesson's own cells and no honest sample raise any.

The scan fails closed: a cell whose reading stops (RecursionError, MemoryError, a time limit) is
flagged "could not be scanned", never clean. A cell that is not Python (a SyntaxError, "too many
nested parentheses" included) is not flagged: the kernel cannot run it either. The grader runs the
scan in a process of its own, bounded in memory and time (bounded_scan.py); the cells' sizes are
capped before any of it (scratch.check_cells).
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import re
from typing import NamedTuple

# At import, not at the first scan: a grading worker scans on a thread (execute._SCANNER), and
# IPython imported there while the worker's main thread imports too failed with KeyError: 'IPython'.
# nbgrader is not imported here: the bounded scan's child (bounded_scan.py) imports this module and
# never needs it (all of nbgrader: 1.7 s and 1368 modules), only code_cells does, in the grader.
from IPython.core.inputtransformer2 import TransformerManager

GRADER_PACKAGE = __name__.split(".")[0]  # this package: perfcourse
LITERAL_DEPTH = 64  # pieces of a name joined from literals, at most: bounds the work on any cell

PACKAGE = f"code names the grading package {GRADER_PACKAGE!r}"
MODULES = "code iterates sys.modules"
COMPUTED_IMPORT = "code imports a computed name"
CLOSURES = "code reads closures"
GC = "code uses gc"
FRAMES = "code takes frames"
DESCRIPTORS = "code touches file descriptors"
UNRESOLVED = "code reaches a module by a path the scan cannot read"
IMPORT_MACHINERY = "code changes how modules are imported"
SUBCLASSES = "code walks every class"
REPLACES = "code replaces a module's attribute"
TRACE_WRITE = "code writes a profiler trace"
DLPACK = "code shares device memory through dlpack"
DLPACK_NAMES = {"__dlpack__", "from_dlpack", "to_dlpack"}
UNSCANNED = "code could not be scanned"
FLAGS = (UNSCANNED, PACKAGE, MODULES, COMPUTED_IMPORT, UNRESOLVED, IMPORT_MACHINERY, REPLACES, SUBCLASSES,
         CLOSURES, GC, FRAMES, DESCRIPTORS, TRACE_WRITE, DLPACK)  # the order they are reported in

# Names a notebook need not import to use: the lessons' first cell imports sys and os, and a
# student's cell may rely on that.
PRESUMED = {"sys": "sys", "os": "os", "inspect": "inspect", "importlib": "importlib", "builtins": "builtins",
            "traceback": "traceback", "posix": "posix", "__builtins__": "builtins"}
IMPORTERS = {"__import__", "import_module"}
# Library functions that import the module a string names and hand back what it holds: importers
# too, but only as these modules' (other libraries use the names for other things).
NAMED_IMPORTERS = {("pkgutil", "resolve_name"), ("pydoc", "locate"), ("pydoc", "safeimport"),
                   ("logging.config", "_resolve"), ("importlib.metadata", "EntryPoint"),
                   *((mock, name) for mock in ("unittest.mock", "mock") for name in ("patch", "_importer")),
                   *((f"{mock}.patch", name) for mock in ("unittest.mock", "mock") for name in ("dict", "multiple"))}
# Where a NAMED_IMPORTERS call takes the name it imports, when not as its first argument: an
# EntryPoint(name, value, group) imports its `value` ("module:attribute") when loaded.
NAME_ARGUMENTS = {("importlib.metadata", "EntryPoint"): ("value", 1)}
GETTERS = {"getattr", "getattr_static"}             # getter(object, name), under any name bound to it
# Calls a module may be handed to without leaving the scan's sight: they read nothing of it a
# forger needs (a name, a type, a printout).
HARMLESS_CALLS = {"print", "repr", "str", "dir", "hasattr", "isinstance", "id", "type", "help", "reload"}
ALIAS_ROUNDS = 16  # rounds of following `b = a` bindings across the cells: chains longer than this are rare
CLOSURE_ATTRIBUTES = {"__closure__", "cell_contents", "getclosurevars", "CellType", "__globals__"}
FRAME_ATTRIBUTES = {"_getframe", "_current_frames", "currentframe", "f_back", "f_globals", "f_locals",
                    "f_builtins", "f_code", "f_lasti", "f_trace", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
                    "getouterframes", "getinnerframes", "walk_stack", "walk_tb", "_getframemodulename",
                    "extract_module_locals", "extract_vars", "extract_vars_above"}  # the last three: IPython's
# Module attributes honest code rebinds: `sys.stdout = io.StringIO()` to capture a printout.
REDIRECTED = {("sys", "stdout"), ("sys", "stderr"), ("sys", "stdin")}
# Modules whose hooks are handed every frame they watch (debuggers, tracers, the pure-Python profiler).
FRAME_MODULES = {"bdb", "pdb", "trace", "profile"}
# How a module is found and run: finders and loaders of one's own can hand the course's modules
# code of their own, or code under a library's file name.
IMPORT_ATTRIBUTES = {"meta_path", "path_hooks", "path_importer_cache", "__loader__", "__spec__", "exec_module",
                     "load_module", "create_module", "source_to_code", "spec_from_loader", "spec_from_file_location",
                     "module_from_spec"}
IMPORTLIB_CLASSES = {"Loader", "SourceLoader", "FileLoader", "SourceFileLoader", "SourcelessFileLoader",
                     "MetaPathFinder", "PathEntryFinder", "PathFinder", "FileFinder"}  # as importlib's only
INSPECT_FRAMES = {"stack", "trace"}  # frames only as inspect's: inspect.stack(), inspect.trace()
DESCRIPTOR_FUNCTIONS = {"dup", "dup2", "close", "closerange", "fdopen", "set_inheritable", "pipe", "pipe2"}
DESCRIPTOR_MODULES = {"os", "posix"}
DESCRIPTOR_PATH = re.compile(r"/proc/[^/\s]*/fd(?:info)?\b|/dev/fd\b")
# A profiler's trace, as a cell names it: no lesson writes one but jax.profiler.
TRACE_NAMES = re.compile(r"perfetto_trace|trace\.json|xplane\.pb")
UNKNOWN = "\0"  # a piece of a string that is not a literal, in a shape


class Unscannable(Exception):
    """A cell whose reading stopped before its end: what it runs is not known."""


def _parse(text: str):
    """The syntax tree of `text`; None if it is not Python (the kernel could not run it either).
    A parser that runs out of recursion or memory has not read it: Unscannable (the kernel's
    limits may differ: a cell may raise its recursion limit before the next)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError) as exc:
        raise Unscannable(type(exc).__name__) from None


def python_of(cell):
    """A code cell's syntax tree, its IPython magics and shell lines left out; None if it is not Python."""
    return _python_in(cell.source)


def _python_in(source: str):
    return _parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))


def _code_in_source(source: str) -> list[ast.AST]:
    """The syntax trees of the code a cell runs: its source as IPython turns it into Python (magics
    and shell lines become calls), and the code handed to its magics as text (`%time CODE`,
    `%%timeit` cells); [] if it is not Python. Unscannable if the parser gave up on it."""
    try:
        transformed = TransformerManager().transform_cell(source)
    except (RecursionError, MemoryError) as exc:
        raise Unscannable(type(exc).__name__) from None
    except Exception:  # IPython's transformers on text no kernel would run: read what parses
        transformed = None
    tree = _parse(transformed) if transformed is not None else None
    if tree is None:
        tree = _python_in(source)
    if tree is None:
        return []
    trees, pending = [tree], [tree]
    while pending and len(trees) < 64:
        for node in ast.walk(pending.pop()):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("run_line_magic", "run_cell_magic")):
                for argument in node.args[1:]:
                    text = literal(argument)
                    inner = _code_in(text) if text else None
                    if inner is not None:
                        trees.append(inner)
                        pending.append(inner)
    return trees


def _code_in(text: str):
    """The code in a magic's text, after any options: `-n 3 -r 2 f(x)` -> f(x); None if none parses."""
    for _ in range(16):  # options first: drop a word at a time until the rest is code
        tree = _parse(text)
        if tree is not None:
            return tree
        parts = text.split(None, 1)
        if len(parts) < 2:
            return None
        text = parts[1]
    return None


def literal(node, depth: int = 0) -> str | None:
    """The string a node spells out of literals only (at most LITERAL_DEPTH levels), or None."""
    text = shape(node, depth)
    return text if text is not None and UNKNOWN not in text else None


def shape(node, depth: int = 0) -> str | None:
    """The string a node builds, with UNKNOWN for each piece that is not a literal; None if it is
    not a string built from pieces (a plain name, a number, a call of anything else)."""
    if depth > LITERAL_DEPTH:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = shape(node.left, depth + 1), shape(node.right, depth + 1)
        if left is None and right is None:
            return None
        return (UNKNOWN if left is None else left) + (UNKNOWN if right is None else right)
    if isinstance(node, ast.JoinedStr):
        parts = [shape(value.value if isinstance(value, ast.FormattedValue) else value, depth + 1)
                 for value in node.values]
        return "".join(UNKNOWN if part is None else part for part in parts)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and node.args):
        if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):  # "glue".join([...])
            glue, items = shape(node.func.value, depth + 1), node.args[0].elts
        elif len(node.args) > 1 or isinstance(node.func.value, ast.Attribute):  # os.path.join(a, b, ...)
            glue, items = "/", node.args
        else:
            return None
        if glue is None or len(items) > LITERAL_DEPTH:
            return None
        parts = [shape(item, depth + 1) for item in items]
        return glue.join(UNKNOWN if part is None else part for part in parts)
    return None


class _CellFacts(NamedTuple):
    """What one cell gives the notebook-wide reading: its absolute imports and its (name, value) bindings.
    Kept with the cell's trees, so the given cells that every submission shares are walked once."""
    imports: list
    bindings: list

    @classmethod
    def of(cls, trees) -> _CellFacts:
        imports, bindings = [], []
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.module
                                                    and not node.level):
                    imports.append(node)
                bindings.extend(_bindings(node))
        return cls(imports, bindings)


class _Notebook:
    """What the notebook's imports bind, over all the cells the student's kernel runs."""

    def __init__(self, facts: list[_CellFacts]):
        self.modules = dict(PRESUMED)   # name -> module it is bound to
        self.imported = {}              # name -> (module, attribute) bound by `from module import attribute`
        self.starred = set()            # modules imported with `from module import *`
        self.true_modules = set(PRESUMED)  # names bound to a module object itself (not an attribute)
        for cell in facts:
            for node in cell.imports:
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            self.modules[alias.asname] = alias.name
                        else:
                            top = alias.name.split(".")[0]
                            self.modules[top] = top
                        self.true_modules.add(alias.asname or alias.name.split(".")[0])
                else:
                    for alias in node.names:
                        self.imported[alias.asname or alias.name] = (node.module, alias.name)
                        if alias.name == "*":
                            self.starred.add(node.module)
                        else:
                            self.modules.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")
        self._follow_bindings([pair for cell in facts for pair in cell.bindings])

    def _follow_bindings(self, bindings) -> None:
        """Names bound to what an imported name stands for: `m = sys`, `g = getattr`, `d = sys.modules`.
        Flow-insensitive, as the imports are: a name bound to a module anywhere is that module
        everywhere. Each round follows one more link of a chain of such bindings."""
        for _ in range(ALIAS_ROUNDS):
            resolver, changed = _Resolver(self), False
            for name, value in bindings:
                if name in self.modules or name in self.imported:
                    continue
                if isinstance(value, ast.Name) and value.id in ("getattr", "__import__"):
                    self.imported[name], changed = ("builtins", value.id), True
                elif resolver.is_sys_modules(value):
                    self.imported[name], changed = ("sys", "modules"), True
                elif resolver.importer(value):
                    self.imported[name], changed = ("builtins", "__import__"), True
                elif (module := resolver.module(value)) is not None:
                    self.modules[name], changed = module, True
                    if (isinstance(value, ast.Name) and value.id in self.true_modules
                            or resolver.imported_by(value) is not None):
                        self.true_modules.add(name)
            if not changed:
                return


def _bindings(node):
    """(name, value) for each name a node binds to a value: assignments of any form (tuples pairwise,
    `globals()["name"] = value`), `:=`, default arguments, `for`/`with` over values spelled out."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            yield from _paired(target, node.value)
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value
    elif (isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
          and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set))):
        for value in node.iter.elts:
            yield from _paired(node.target, value)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                yield from _paired(item.optional_vars, item.context_expr)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        positional = node.args.posonlyargs + node.args.args
        for argument, default in zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults):
            yield argument.arg, default
        for argument, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
            if default is not None:
                yield argument.arg, default


def _paired(target, value):
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for one, other in zip(target.elts, value.elts):
            yield from _paired(one, other)
    elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Call)
          and isinstance(target.value.func, ast.Name) and target.value.func.id in ("globals", "vars")
          and not target.value.args and literal(target.slice) is not None):
        yield literal(target.slice), value


def _getattribute(call: ast.Call):
    """(object, name node) of `X.__getattribute__(object, name)` (object's, type's, any type's) or
    `object.__getattribute__(name)`; None for any other call."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "__getattribute__"):
        return None
    if len(call.args) == 2:
        return call.args[0], call.args[1]
    if len(call.args) == 1:
        return call.func.value, call.args[0]
    return None


def _first_argument(call: ast.Call):
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "name"), None)


def _keyword(call: ast.Call, name: str, position: int):
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Resolver:
    """What a node stands for, given what the notebook's names are bound to."""

    def __init__(self, notebook: _Notebook):
        self.notebook = notebook
        self._modules: dict[int, str | None] = {}  # id(node) -> module(node): each chain read once

    def getter(self, node) -> bool:
        """Is this node getattr or inspect.getattr_static (under any name)?"""
        if isinstance(node, ast.Name):
            return node.id == "getattr" or self.notebook.imported.get(node.id) in (
                ("builtins", "getattr"), ("inspect", "getattr_static"))
        return isinstance(node, ast.Attribute) and node.attr in GETTERS

    def attribute_read(self, node):
        """(object, name node) of an attribute read by any getter: `object.name`, getattr (under any
        name), attrgetter(name)(object), __getattribute__, getattr_static, `__dict__[name]`,
        `__dict__.get(name)`, `vars(object)[name]`; the name node is None for `.name`."""
        if isinstance(node, ast.Attribute):
            return node.value, None
        if isinstance(node, ast.Call):
            if self.getter(node.func) and len(node.args) >= 2:
                return node.args[0], node.args[1]
            inner = node.func
            if (isinstance(inner, ast.Call) and len(inner.args) == 1 and len(node.args) == 1
                    and _called_name(inner.func) == "attrgetter"):
                return node.args[0], inner.args[0]
            found = _getattribute(node)
            if found is not None:
                return found
            if (isinstance(inner, ast.Attribute) and inner.attr == "get" and node.args
                    and isinstance(inner.value, ast.Attribute) and inner.value.attr == "__dict__"):
                return inner.value.value, node.args[0]
        if isinstance(node, ast.Subscript):
            owner = node.value
            if isinstance(owner, ast.Attribute) and owner.attr == "__dict__":
                return owner.value, node.slice
            if isinstance(owner, ast.Name) and owner.id == "__builtins__":  # a dict outside IPython
                return owner, node.slice
            if (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "vars"
                    and len(owner.args) == 1):
                return owner.args[0], node.slice
        return None

    def attribute(self, node) -> tuple[ast.AST, str] | None:
        """(object, name) of an attribute read whose name is spelled out; the last part of a dotted
        attrgetter name."""
        found = self.attribute_read(node)
        if found is None:
            return None
        owner, name = found
        if name is None:
            return owner, node.attr
        text = literal(name)
        return (owner, text) if text is not None else None

    def importer(self, node) -> bool:
        """Is this node __import__, importlib.import_module or a NAMED_IMPORTERS function (under any name)?"""
        if isinstance(node, ast.Name):
            bound = self.notebook.imported.get(node.id)
            return (node.id == "__import__" or bound in (("importlib", "import_module"), ("builtins", "__import__"))
                    or bound in NAMED_IMPORTERS)
        found = self.attribute(node)
        return found is not None and (found[1] in IMPORTERS or (self.module(found[0]), found[1]) in NAMED_IMPORTERS)

    def imported_by(self, call) -> str | None:
        """The module a call of an importer imports, when its name is spelled out in literals (a
        relative name with its package spelled out too); None otherwise."""
        if not (isinstance(call, ast.Call) and self.importer(call.func)):
            return None
        bound = self.notebook.imported.get(call.func.id) if isinstance(call.func, ast.Name) else None
        dunder = bound == ("builtins", "__import__")
        found = self.attribute(call.func)
        named = NAME_ARGUMENTS.get(bound) or (found is not None
                                               and NAME_ARGUMENTS.get((self.module(found[0]), found[1])))
        name = literal(_keyword(call, *named) if named else _first_argument(call))
        if name is None:
            return None
        if bound in NAMED_IMPORTERS or found is not None and (self.module(found[0]), found[1]) in NAMED_IMPORTERS:
            return name.replace(":", ".")  # `module:attribute` or a dotted path: what it names, imported
        if _called_name(call.func) == "__import__" or dunder:
            level = _keyword(call, "level", 4)
            if level is not None and not (isinstance(level, ast.Constant) and level.value == 0):
                return None  # relative to a package the scan does not know
            fromlist = _keyword(call, "fromlist", 3)
            listed = fromlist is not None and not (isinstance(fromlist, (ast.List, ast.Tuple)) and not fromlist.elts) \
                and not (isinstance(fromlist, ast.Constant) and not fromlist.value)
            return name if listed else name.split(".")[0]
        if name.startswith("."):
            package = literal(_keyword(call, "package", 1))
            if package is None:
                return None
            try:
                return importlib.util.resolve_name(name, package)
            except (ImportError, ValueError):
                return None
        return name

    def module(self, node) -> str | None:
        """The module a node evaluates to, where the code says so. An attribute chain is followed
        down to its base in a loop and each link remembered, so a chain of any length costs its
        length once (`a.b.c...` of thousands of links neither recurses nor goes quadratic)."""
        chain = []  # (node, attribute name), outermost first
        while id(node) not in self._modules:
            found = self._base_module(node)
            if found is not False:
                self._modules[id(node)] = found
                break
            attribute = self.attribute(node)
            chain.append((node, attribute[1]))
            node = attribute[0]
        owner = self._modules[id(node)]
        for link, name in reversed(chain):
            owner = None if owner is None else f"{owner}.{name}"
            self._modules[id(link)] = owner
        return owner

    def _base_module(self, node):
        """module(node) where it is not an attribute of something else; False where it is."""
        if isinstance(node, ast.Name):
            return self.notebook.modules.get(node.id)
        if isinstance(node, ast.NamedExpr):
            return self.module(node.value)
        imported = self.imported_by(node)
        if imported is not None:
            return imported
        if isinstance(node, ast.Subscript) and self.is_sys_modules(node.value):
            return literal(node.slice)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and self.is_sys_modules(node.func.value) and node.args):
            return literal(node.args[0])
        return False if self.attribute(node) is not None else None

    def is_sys_modules(self, node) -> bool:
        """sys.modules, under any name: the `modules` of any module (`os.sys.modules`,
        `importlib.import_module("sys").modules`, a module bound by import or assignment), or a name
        bound to it (`from sys import modules`, `d = sys.modules`). No module but sys has an
        attribute `modules`."""
        if isinstance(node, ast.Name):
            return self.notebook.imported.get(node.id) == ("sys", "modules")
        found = self.attribute(node)
        return (found is not None and found[1].split(".")[-1] == "modules"
                and self.module(found[0]) is not None)


class _Cell(_Resolver):
    """The mechanisms one cell's code uses."""

    def __init__(self, notebook: _Notebook, trees):
        super().__init__(notebook)
        self.found, self.parents = set(), {}
        self.writes_file = self.names_trace = False
        for tree in trees:
            for node in ast.walk(tree):
                for child in ast.iter_child_nodes(node):
                    self.parents[child] = node
        for tree in trees:
            for node in ast.walk(tree):
                self.visit(node)
        if self.writes_file and self.names_trace:
            self.found.add(TRACE_WRITE)

    # --- each node -------------------------------------------------------------------------------
    def visit(self, node) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.visit_import(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.visit_name(node)
        text = shape(node) if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr, ast.Call)) else None
        if text is not None:
            if text == GRADER_PACKAGE or text.startswith(GRADER_PACKAGE + "."):
                self.found.add(PACKAGE)
            if DESCRIPTOR_PATH.search(text.replace(UNKNOWN, "x")):
                self.found.add(DESCRIPTORS)
            self.names_trace |= bool(TRACE_NAMES.search(text))
        if isinstance(node, ast.Name) and node.id == "TRACE_FILE":
            self.names_trace = True
        if isinstance(node, ast.Call):
            self.visit_file_write(node)
        if isinstance(node, ast.Call) and self.importer(node.func):
            name = self.imported_by(node)
            if name is None:
                self.found.add(COMPUTED_IMPORT)  # a name built at run time, or relative to an unknown package
            elif name.split(".")[0] == "gc":
                self.found.add(GC)
            elif name.split(".")[0] in FRAME_MODULES:
                self.found.add(FRAMES)
        if self.is_sys_modules(node) and not self.plain_lookup(node):
            self.found.add(MODULES)
        found = self.attribute(node)
        if found is not None:
            self.visit_attribute(node, *found)
        self.visit_module_paths(node)
        self.visit_replacement(node)

    def visit_file_write(self, call: ast.Call) -> None:
        """TRACE_WRITE for a gzip file written (a trace's format); a file written at all is remembered."""
        name = _called_name(call.func)
        owner = self.module(call.func.value) if isinstance(call.func, ast.Attribute) else None
        # A path's own open (`Path(p).open("wb")`) takes the mode first; open() and gzip.open second.
        mode = _keyword(call, "mode", 0 if name == "open" and isinstance(call.func, ast.Attribute) and owner is None
                        else 1)
        text = shape(mode) if mode is not None else ""
        # A mode the scan cannot read counts as writing (what it cannot read is never clean).
        writing = mode is not None and (text is None or UNKNOWN in text or any(c in text for c in "wax+"))
        if owner == "gzip" and (name == "compress" or name in ("open", "GzipFile") and writing):
            self.found.add(TRACE_WRITE)
        elif (name == "open" and writing or name in ("write_bytes", "write_text")
              or owner == "os" and name in ("open", "write", "replace", "rename", "link", "symlink")
              or owner == "shutil" and name in ("copy", "copy2", "copyfile", "copyfileobj", "move")):
            self.writes_file = True

    def visit_replacement(self, node) -> None:
        """REPLACES where a module's attribute is assigned or deleted (`jax.experimental.pallas = mine`,
        `setattr(module, name, value)`): what the course's probes find there when they run is then
        the student's."""
        replaced = (isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
                    or isinstance(node, ast.Call) and _called_name(node.func) in ("setattr", "delattr")
                    and len(node.args) >= 2)
        if not replaced:
            return
        owner, name = (node.value, node.attr) if isinstance(node, ast.Attribute) else (node.args[0],
                                                                                       literal(node.args[1]))
        module = self.module(owner)
        if module is not None and (module, name) not in REDIRECTED:
            self.found.add(REPLACES)

    def visit_module_paths(self, node) -> None:
        """UNRESOLVED where a module object goes where the scan cannot follow it."""
        read = self.attribute_read(node)
        if read is not None and read[1] is not None and literal(read[1]) is None \
                and self.module(read[0]) is not None:
            self.found.add(UNRESOLVED)  # getattr(sys, name): which attribute is not known
        parent = self.parents.get(node)
        whole_dict = (isinstance(node, ast.Attribute) and node.attr == "__dict__"
                      or isinstance(node, ast.Call) and _called_name(node.func) == "vars" and len(node.args) == 1)
        if whole_dict:
            owner = node.value if isinstance(node, ast.Attribute) else node.args[0]
            looked_up = isinstance(parent, ast.Subscript) or isinstance(parent, ast.Attribute) and parent.attr == "get"
            if not looked_up and self.module(owner) is not None:
                self.found.add(UNRESOLVED)  # a module's whole namespace: every module it holds
        if self.true_module(node):
            handed = isinstance(parent, ast.Call) and node in parent.args + [k.value for k in parent.keywords]
            getter = self.attribute_read(parent) if handed else None  # getattr(sys, ...): read above
            if (handed and getter is None and _called_name(parent.func) not in HARMLESS_CALLS
                    and not self.importer(parent.func)):
                self.found.add(UNRESOLVED)  # a parameter renames it: `(lambda m: m.modules)(sys)`
            stored = isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node and any(
                isinstance(t, (ast.Attribute, ast.Subscript)) and not self.is_sys_modules(getattr(t, "value", None))
                for t in (parent.targets if isinstance(parent, ast.Assign) else [parent.target]))
            # In a container the names no longer follow, except the pairs of `a, b = os, sys` and
            # the values of `for m in (os, sys)`, which _bindings reads.
            above = self.parents.get(parent)
            paired = (isinstance(parent, (ast.Tuple, ast.List)) and isinstance(above, ast.Assign)
                      and all(isinstance(t, (ast.Tuple, ast.List)) for t in above.targets)
                      or isinstance(above, (ast.For, ast.AsyncFor, ast.comprehension)) and above.iter is parent)
            contained = isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and not paired
            if stored or contained:
                self.found.add(UNRESOLVED)  # `holder.m = sys`, `[sys][0]`: out of the names' sight

    def true_module(self, node) -> bool:
        """A module object itself (not an attribute of one): a name bound by `import`, an alias of
        one, an importer's result, a lookup in sys.modules."""
        if isinstance(node, ast.Name):
            return node.id in self.notebook.true_modules
        return self.imported_by(node) is not None or (
            isinstance(node, ast.Subscript) and self.is_sys_modules(node.value))

    def visit_import(self, node) -> None:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            if top == GRADER_PACKAGE:
                self.found.add(PACKAGE)
            if top == "gc":
                self.found.add(GC)
            if top in FRAME_MODULES:
                self.found.add(FRAMES)
        if isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                self.visit_imported(node.module or "", alias.name)

    def visit_named(self, module: str | None, name: str) -> None:
        """The flags a name earns as its module's, whether imported from it (`from inspect import
        stack`) or read from it (`inspect.stack`); `module` None where the owner is no module."""
        if name in FRAME_ATTRIBUTES or (module == "inspect" and name in INSPECT_FRAMES):
            self.found.add(FRAMES)
        if module in DESCRIPTOR_MODULES and name in DESCRIPTOR_FUNCTIONS:
            self.found.add(DESCRIPTORS)
        if module == "signal" and name == "signal":
            self.found.add(FRAMES)  # a handler is handed the frame it interrupts
        if name in IMPORT_ATTRIBUTES or (module or "").split(".")[0] == "importlib" and name in IMPORTLIB_CLASSES:
            self.found.add(IMPORT_MACHINERY)
        if name == "__subclasses__":
            self.found.add(SUBCLASSES)
        if module == "inspect" and name == "getmodule":
            self.found.add(MODULES)  # sys.modules[obj.__module__]: the course's module from what it lends
        if name in DLPACK_NAMES:  # of any module or object: jax.dlpack, numpy, an array's method
            self.found.add(DLPACK)

    def visit_imported(self, module: str, name: str) -> None:
        self.visit_named(module, name)
        if module == "sys" and name == "modules":
            self.found.add(MODULES)
        if module == "inspect" and name in CLOSURE_ATTRIBUTES or module == "types" and name == "CellType":
            self.found.add(CLOSURES)

    def visit_name(self, node: ast.Name) -> None:
        if node.id == GRADER_PACKAGE:
            self.found.add(PACKAGE)
        parent = self.parents.get(node)
        called = isinstance(parent, ast.Call) and parent.func is node
        if self.importer(node) and not called:
            self.found.add(COMPUTED_IMPORT)  # passed around: what it imports is not read here
        if self.notebook.modules.get(node.id, "").split(".")[0] == "gc" and node.id not in PRESUMED:
            self.found.add(GC)
        bound = self.notebook.imported.get(node.id)
        if bound is not None and bound[1] != "*":
            self.visit_imported(*bound)
        for module in self.notebook.starred:  # `from inspect import *`, then currentframe()
            self.visit_imported(module, node.id)

    def visit_attribute(self, node, owner, name: str) -> None:
        module = self.module(owner)
        top = (module or "").split(".")[0]
        self.visit_named(module, name)
        if name in CLOSURE_ATTRIBUTES:  # of any object: a function's, a cell's
            self.found.add(CLOSURES)
        if top == "gc":
            self.found.add(GC)
        if top == GRADER_PACKAGE:
            self.found.add(PACKAGE)
        if self.importer(node):
            parent = self.parents.get(node)
            # Passed around, what it imports is not read here; `mock.patch.object(...)` imports nothing.
            if not (isinstance(parent, ast.Call) and parent.func is node or isinstance(parent, ast.Attribute)):
                self.found.add(COMPUTED_IMPORT)

    def plain_lookup(self, node) -> bool:
        """Is this use of sys.modules a lookup of one literal name: `sys.modules["numpy"]`,
        `sys.modules.get("numpy")`, `"google.colab" in sys.modules`, `sys.modules["x"] = module`?"""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return literal(parent.slice) is not None
        if isinstance(parent, ast.Compare) and node in parent.comparators and len(parent.ops) == 1:
            return isinstance(parent.ops[0], (ast.In, ast.NotIn)) and literal(parent.left) is not None
        if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in ("get", "pop", "setdefault"):
            call = self.parents.get(parent)
            return (isinstance(call, ast.Call) and call.func is parent and bool(call.args)
                    and literal(call.args[0]) is not None)
        return False


def _called_name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


# A grading worker scans every notebook it grades, and most cells are the lesson's own, the same
# in every submission: a small cell's trees are kept by its text, and every cell's flags by a digest
# of its text and one of what the notebook's imports bind (all a cell's flags depend on), for the
# worker's next notebooks. Large trees are never kept: a cell past CACHED_TREE_CHARS is parsed again.
# The scan's child has 1 GiB (bounded_scan.py) and a tree costs up to ~350 bytes per character of its
# source (measured: `a;` repeated, `x=1` lines): the trees kept are bounded by their sources'
# characters together (CACHED_SOURCE_CHARS, ~370 MB at worst) besides their number, beside one
# notebook's own (512 KiB of source at most: scratch.MAX_NOTEBOOK_CHARS). A flags entry is two
# digests and a few names, whatever the notebook imports: CACHED_CELLS of them bound it.
CACHED_CELLS = 2048
CACHED_TREE_CHARS = 32 << 10
CACHED_SOURCE_CHARS = 1 << 20
_trees: dict[str, tuple[list[ast.AST], _CellFacts]] = {}
_flags: dict[tuple[bytes, bytes], frozenset[str]] = {}


def _remember(cache: dict, key, value):
    if len(cache) >= CACHED_CELLS:
        cache.clear()
    cache[key] = value
    return value


def _remember_trees(source: str, trees: tuple[list[ast.AST], _CellFacts]) -> None:
    """Keep a small cell's trees and facts, within CACHED_CELLS cells and CACHED_SOURCE_CHARS characters of source."""
    if len(source) > CACHED_TREE_CHARS:
        return
    # Summed at each new cell (its parse costs far more): no running count to keep in step.
    if len(_trees) >= CACHED_CELLS or sum(map(len, _trees)) + len(source) > CACHED_SOURCE_CHARS:
        _trees.clear()
    _trees[source] = trees


def code_cells(nb) -> list[tuple[int, str]]:
    """(number, source) of the cells the scan reads: the code cells outside the grade cells."""
    from nbgrader.utils import is_grade  # here only: the bounded scan's child never needs nbgrader

    return [(number, cell.source) for number, cell in enumerate(nb.cells, 1)
            if cell.cell_type == "code" and not is_grade(cell)]


def scan(nb) -> list[str]:
    """Every flag for the code of the cells outside the grade cells: 'code uses gc (cell 4, 9)'."""
    return scan_cells(code_cells(nb))


def scan_cells(cells: list[tuple[int, str]], guard=contextlib.nullcontext) -> list[str]:
    """scan's flags for (number, source) pairs. Each cell is read inside `guard()` (the bounded
    scan's per-cell time limit); a cell whose reading stops, there or in the parser or the walk,
    is flagged UNSCANNED and the others are read as usual."""
    unscanned, parsed = [], []
    for number, source in cells:
        kept = _trees.get(source)
        if kept is None:
            try:
                with guard():
                    trees = _code_in_source(source)
                    kept = trees, _CellFacts.of(trees)
            except (Unscannable, RecursionError, MemoryError):
                unscanned.append(number)
                continue
            _remember_trees(source, kept)
        parsed.append((number, source, kept))
    notebook = _Notebook([facts for _, _, (_, facts) in parsed])
    bindings = hashlib.sha256(repr((sorted(notebook.modules.items()), sorted(notebook.imported.items()),
                                    sorted(notebook.starred), sorted(notebook.true_modules)))
                              .encode("utf-8", "surrogatepass")).digest()
    where = {flag: [] for flag in FLAGS}
    for number, source, (trees, _) in parsed:
        key = (hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest(), bindings)
        found = _flags.get(key)
        if found is None:
            try:
                with guard():
                    found = frozenset(_Cell(notebook, trees).found)
            except (Unscannable, RecursionError, MemoryError):  # never kept: the next try may finish
                unscanned.append(number)
                continue
            _remember(_flags, key, found)
        for flag in found:
            where[flag].append(number)
    where[UNSCANNED] = sorted(unscanned)
    return [f"{flag} (cell {', '.join(map(str, numbers))})" for flag, numbers in where.items() if numbers]


def grader_named(nb) -> list[str]:
    """The one flag of `scan` for cells outside the grade cells that import or name the grader's
    own package. A lesson needs none of it (Colab has none); a submission that reaches for it is
    after the code that answers or grades its checks (a probe replaced in its own kernel can
    answer with made-up data)."""
    return [flag for flag in scan(nb) if flag.startswith(PACKAGE)]
