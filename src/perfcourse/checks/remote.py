"""The trusted end of the channel, inside the trusted kernel that runs every grade cell.

`install(path)` (run by the grader when the trusted kernel starts) hooks the kernel so that,
before each grade cell, every name the cell reads but does not define itself is looked up in the
student's kernel: values (numbers, strings, arrays, tuples, lists and dicts of those) arrive as
plain copies checked by `channel.codec`; modules by name, as this kernel's own copy; everything
else as a `Remote`, a stand-in whose calls, attributes, items and operators are requests to the
student's kernel. So a public check such as `out = workload(x, w)` runs here unchanged, and what
comes back is data, judged here, where student code cannot reach.

Lists and dicts that live in the student's kernel (a counter the student's function updates)
arrive as `RemoteList` / `RemoteDict`: real lists and dicts that fetch a fresh copy when student
code has run since they were last read.

`probe(name, ...)` asks course code in the student's kernel (`perfcourse.kernel.probes`) for
structured data that only that process has (a jaxpr, residuals, compiler estimates, timings
against an instrument). Student code can replace that code too, so checks judge what comes back
for inputs picked here at grading time (values only: `values_only`): see each checks module for
what a forger would need.
"""
from __future__ import annotations

import ast
import builtins
import socket
import sys
import types

from ..channel.codec import ChannelError, Codec
from ..channel.endpoint import Endpoint, PeerError, as_exception
from . import TAINT_MIME, CheckFailed

_channel: "Channel | None" = None

# Where the code lives whose objects student code may call back into, once a check hands it one:
# the checks and the grade cells (a class a grade cell defines lives in this kernel's __main__).
# Never a module, a class, a builtin or a library's object: in this kernel those are capabilities
# (exec, files, processes) over the grading of this notebook and, the kernel being kept, the next.
LENDABLE = ("__main__", "perfcourse.checks")
NEVER_LENT = (__name__,)  # this module: the channel itself, and pin() runs the code it is given


def _lendable(target, where: tuple[str, ...]) -> bool:
    """Is `target` a function, method or instance of code defined in one of `where` (not this module)?"""
    if isinstance(target, types.MethodType):
        target = target.__func__
    if isinstance(target, types.FunctionType):
        # The module whose globals the code runs in: functools.wraps copies __module__ onto a
        # library's wrapper, never its globals.
        module = target.__globals__.get("__name__")
    elif isinstance(target, (type, types.ModuleType)):
        return False
    else:
        module = type(target).__module__
    return (isinstance(module, str) and module not in NEVER_LENT
            and any(module == w or module.startswith(w + ".") for w in where))


class Channel:
    def __init__(self, path: str, lendable: tuple[str, ...] = LENDABLE):
        self.path = path
        self.endpoint: Endpoint | None = None
        self.generation = 0
        self.lendable = lendable
        self.codec = Codec(make_proxy=lambda handle, info: Remote(handle, info), wrap_container=self._container,
                           lend_modules=False)
        self.codec.peer_handle = _peer_handle
        self.fetched: set[str] = set()
        self.pinned: set[str] = set()   # names bound here by the instructor's imports: never fetched

    # --- connection ------------------------------------------------------------------------
    def close(self) -> None:
        if self.endpoint is not None:
            try:
                self.endpoint.sock.close()
            except OSError:
                pass

    def connect(self) -> None:
        self.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.path)
        self.endpoint = Endpoint(sock, self.codec, self.handle)

    def request(self, op: str, *args, **kwargs):
        if self.endpoint is None or self.endpoint.broken:
            self.connect()
        # Student code may run while this request is answered: containers fetched before it are
        # stale; those decoded from its reply carry the new generation and are current.
        self.generation += 1
        try:
            return self.endpoint.request(op, *args, **kwargs)
        except PeerError as error:
            raise as_exception(error) from None

    def handle(self, op: str, args: list, kwargs: dict):
        """The student's requests: only calls and public attributes of objects this side lent it."""
        if op not in ("call", "getattr") or not args:
            raise ChannelError(f"the student's kernel may not ask for {op[:40]!r}")
        target = args[0]
        if self.codec._handle_of.get(id(target)) not in self.codec.referenced:
            raise ChannelError("that object was not handed to the student's code")
        if not _lendable(target, self.lendable):
            raise ChannelError(f"student code may not call into a {type(target).__name__[:40]} of the grading kernel")
        if op == "call":
            return target(*args[1:], **kwargs)
        name = args[1] if len(args) == 2 else None
        if type(name) is not str or name.startswith("_"):
            raise AttributeError(f"{name!r} is not available to student code")
        return getattr(target, name)

    def _container(self, value, handle: int):
        kind = RemoteDict if type(value) is dict else RemoteList
        return kind(value, handle, self.generation)

    # --- names -----------------------------------------------------------------------------
    def before_cell(self, info) -> None:
        """Bind the names this cell reads from the student's kernel (fresh for every cell)."""
        from IPython import get_ipython

        shell = get_ipython()
        try:
            source = shell.transform_cell(info.raw_cell or "")
            wanted = free_names(source)
        except SyntaxError:
            return
        namespace = shell.user_ns
        wanted = sorted(name for name in wanted
                        if name not in self.pinned and (name not in namespace or name in self.fetched))
        if not wanted:
            return
        try:
            self.connect()
            found = self.request("names", wanted)
        except Exception as exc:
            print(f"grading: the student's kernel did not answer ({type(exc).__name__}: {exc})")
            return
        for name in wanted:
            if name in found:
                namespace[name] = found[name]
                self.fetched.add(name)
            elif name in self.fetched:
                namespace.pop(name, None)
                self.fetched.discard(name)


def _peer_handle(value):
    kind = type(value)
    if kind is Remote or kind is RemoteDict or kind is RemoteList:
        return object.__getattribute__(value, "_handle")
    return None


def free_names(source: str) -> set[str]:
    """Names a cell reads that it never binds itself, builtins left out."""
    tree = ast.parse(source)
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return {name for name in loaded - bound if not hasattr(builtins, name)}


def _request(op: str, *args, **kwargs):
    return _channel.request(op, *args, **kwargs)


def probe(name: str, *args, **kwargs):
    """Run course code `perfcourse.kernel.probes.<name>` in the student's kernel; untrusted data back,
    values only (`values_only`).

    Without a channel (unit tests, the project's command-line checker, where student and checks
    share one process by design) the probe runs in this process.
    """
    if _channel is None:
        from ..kernel import probes

        return probes.run(name, *args, **kwargs)
    return values_only(_request("probe", name, *args, **kwargs))


def stand_in(name: str, *args):
    """Run course code `perfcourse.kernel.probes.<name>` in the student's kernel, like `probe`, for
    objects that stay in that process (a mesh, a jitted step and its placed arguments, a workload):
    the answer here is a stand-in, only ever handed back to the student's own functions as an
    argument, never compared, read or believed. Without a channel (tests, the command-line
    checker) the probe runs in this process and the objects are themselves."""
    if _channel is None:
        from ..kernel import probes

        return probes.run(name, *args)
    return _request("probe", name, *args)


def taint(reason: str) -> None:
    """Say, before doing it, that this kernel is about to do something a crafted input could abuse
    (parse a program the student's kernel made): the grader stops it after this notebook, so
    whatever such an input did here reaches no other student's grading. Nothing without a channel."""
    if _channel is None:
        return
    from IPython.display import publish_display_data

    publish_display_data({TAINT_MIME: {"reason": str(reason)}})


def grading() -> bool:
    """Do the checks run in the trusted kernel, apart from the notebook's process?"""
    return _channel is not None


def channel_path() -> str | None:
    """The path of the channel's socket to the student's kernel while grading, else None: the grader
    writes what it hands the trusted kernel beside it (grading/recount.py)."""
    return _channel.path if _channel is not None else None


def values_only(answer):
    """A plain copy of `answer` when it holds values only, else CheckFailed naming what it holds.

    A probe's answer is data. An object of the student's kernel arrives as a stand-in whose `==`,
    `!=`, `len` and conversions that kernel answers, so a check comparing it could be told
    anything: a forged probe returning an object whose `!=` is always False would pass. Lists and
    dicts come back as plain ones, not mirrors of the student's that would fetch new contents
    once student code has run again.
    """
    kind = type(answer)  # type(), not isinstance: a stand-in may report a JAX class as __class__
    if kind is Remote:
        held = str(object.__getattribute__(answer, "_info").get("type", "?")).rpartition(".")[2]
        raise CheckFailed(f"the notebook's code gave back an object of type {held[:80]} where the "
                          "grader reads values: return numbers, strings, arrays, and lists, tuples or "
                          "dicts of those")
    # The base classes' own views: a mirror does not fetch again while it is copied.
    if issubclass(kind, dict):
        return {key: values_only(value) for key, value in dict.items(answer)}
    if issubclass(kind, list):
        return [values_only(value) for value in list.__iter__(answer)]
    if kind is tuple:
        return tuple(values_only(value) for value in answer)
    return answer


# --- stand-ins --------------------------------------------------------------------------------
def _operator(name: str, reflected: bool = False):
    def apply(self, other):
        return _request("op", name, other, self) if reflected else _request("op", name, self, other)
    return apply


def _unary(name: str):
    def apply(self):
        return _request("op", name, self)
    return apply


class Remote:
    """An object in the student's kernel. Using it asks that kernel; what comes back is data."""

    __slots__ = ("_handle", "_info", "__weakref__")

    def __init__(self, handle: int, info: dict):
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_info", info)

    def __getattr__(self, name: str):
        if name.startswith("_"):  # IPython's display probes, pickling, copy: none of them cross
            raise AttributeError(name)
        return _request("getattr", self, name)

    def __setattr__(self, name, value):
        raise AttributeError("grade cells do not change the student's objects")

    def __call__(self, *args, **kwargs):
        return _request("call", self, *args, **kwargs)

    def __getitem__(self, key):
        return _request("op", "getitem", self, key)

    def __contains__(self, item):
        return bool(_request("op", "contains", self, item))

    def __len__(self):
        return _request("len", self)

    def __iter__(self):
        return iter(_request("iter", self))

    def __bool__(self):
        return _request("bool", self)

    def __float__(self):
        return _request("float", self)

    def __int__(self):
        return _request("int", self)

    def __index__(self):
        return _request("index", self)

    def __str__(self):
        return _request("str", self)

    def __repr__(self):
        return _request("repr", self)

    def __format__(self, spec):
        return format(_request("str", self), spec) if spec else _request("str", self)

    __hash__ = object.__hash__

    @property
    def __class__(self):
        """The student's object's class, where this kernel has the same one (so isinstance works)."""
        return _trusted_class(self._info.get("type", "")) or Remote

    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor"):
        _dunder = _name.rstrip("_")
        locals()[f"__{_dunder}__"] = _operator(_name)
        locals()[f"__r{_dunder}__"] = _operator(_name, reflected=True)
    for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
        locals()[f"__{_name}__"] = _operator(_name)
    for _name in ("neg", "pos", "abs", "invert"):
        locals()[f"__{_name}__"] = _unary(_name)
    del _name


_CLASSES: dict[str, type | None] = {}


# Stand-ins report a class only where it is one of JAX's own object types (jax.stages.Lowered,
# a jaxpr...): never a number, string or container type, whose isinstance a check might take as
# a reason to compare the stand-in (its __eq__ would be the student's).
_CLASS_ROOTS = ("jax", "jaxlib")
_VALUE_TYPES = (int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset)


def _trusted_class(name: str):
    # Only a module this kernel has already loaded: the name is the student's to choose, and an
    # import would change this kernel for the notebooks it grades after this one.
    if name not in _CLASSES:
        found = None
        module, _, qualname = name.rpartition(".")
        if module.split(".")[0] in _CLASS_ROOTS:
            try:
                found = sys.modules.get(module)
                for part in qualname.split("."):
                    found = getattr(found, part)
            except Exception:
                found = None
        import numpy as np

        ok = isinstance(found, type) and not issubclass(found, _VALUE_TYPES + (np.generic, np.ndarray))
        _CLASSES[name] = found if ok else None
    return _CLASSES[name]


class _Mirror:
    """A copy of a student's list or dict that fetches itself again once student code has run."""

    def _sync(self):
        if _channel is not None and self._generation != _channel.generation:
            fresh = _request("refresh", self)
            self._replace(fresh)
            self._generation = _channel.generation


def _synced(base, name):
    method = getattr(base, name)

    def read(self, *args, **kwargs):
        self._sync()
        return method(self, *args, **kwargs)
    read.__name__ = name
    return read


class RemoteDict(_Mirror, dict):
    def __init__(self, value: dict, handle: int, generation: int):
        dict.__init__(self, value)
        self._handle, self._generation = handle, generation

    def _replace(self, fresh):
        dict.clear(self)
        dict.update(self, dict.items(fresh) if isinstance(fresh, dict) else {})

    for _name in ("__getitem__", "get", "__contains__", "__iter__", "keys", "values", "items", "__len__",
                  "__eq__", "__ne__", "__repr__", "copy"):
        locals()[_name] = _synced(dict, _name)
    del _name
    __hash__ = None


class RemoteList(_Mirror, list):
    def __init__(self, value: list, handle: int, generation: int):
        list.__init__(self, value)
        self._handle, self._generation = handle, generation

    def _replace(self, fresh):
        list.__init__(self, list.__iter__(fresh) if isinstance(fresh, list) else [])

    for _name in ("__getitem__", "__contains__", "__iter__", "__len__", "__eq__", "__ne__", "__repr__",
                  "index", "count", "copy"):
        locals()[_name] = _synced(list, _name)
    del _name
    __hash__ = None


def install(path: str) -> None:
    """Hook this (trusted) kernel to the student's kernel listening at `path`."""
    global _channel
    from IPython import get_ipython

    _channel = Channel(path)
    get_ipython().events.register("pre_run_cell", _channel.before_cell)
    # nbgrader scores a grade cell 0 for any stderr output: a library's warning here (JAX's
    # dtype notes, say) must not cost an honest student the cell. Errors still fail it.
    sys.stderr = sys.stdout


def start_notebook(path: str, imports: str) -> None:
    """Ready this kernel for a notebook's grade cells: the grader runs this before each notebook.

    A grading worker keeps its trusted kernel from one notebook to the next (grading/
    trusted_kernel.py), so first everything of the last notebook is forgotten: the names its grade
    cells bound or fetched (IPython's reset: user namespace, outputs, history), its last error, its
    channel to the last student's kernel, and what checks measured of the machine. Then this
    notebook's: the channel to the student's kernel listening at `path`, the lesson's `imports`.
    """
    global _channel
    from IPython import get_ipython

    from . import forget_measurements

    shell = get_ipython()
    if _channel is not None:
        shell.events.unregister("pre_run_cell", _channel.before_cell)
        _channel.close()
        _channel = None
    shell.reset(new_session=True)
    _CLASSES.clear()  # type names the last student's objects gave
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    forget_measurements()
    install(path)
    if imports:
        pin(imports)


def pin(imports: str) -> None:
    """Run the lesson's import statements here and never fetch the names they bind.

    The grader takes them from the instructor's source notebook. A student who rebinds `np` or
    `jnp` in their own kernel to an object of their making would otherwise have the grade cells'
    `np.testing.assert_allclose` answered by their own code.
    """
    from IPython import get_ipython

    namespace = get_ipython().user_ns
    before = dict(namespace)
    exec(compile(imports, "<lesson imports>", "exec"), namespace)  # noqa: S102 (the instructor's imports)
    bound = {name for name, value in namespace.items() if before.get(name, _UNBOUND) is not value}
    _channel.pinned |= bound - {"__builtins__"}


_UNBOUND = object()
