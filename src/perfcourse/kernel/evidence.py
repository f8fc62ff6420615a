"""Evidence of tampering in a student's kernel: a PEP 578 audit hook that records, never blocks.

`install()` runs in the student's kernel before any student code (IPKernelApp.exec_lines). It
adds an audit hook (`sys.addaudithook`: there is no way to remove one) that writes one short
line to the file descriptor named by PERFCOURSE_EVIDENCE_FD each time the student's own code
uses a tampering primitive:

- assigning a function's `__code__`, `__defaults__` or `__kwdefaults__`;
- walking objects with `gc.get_objects`, `gc.get_referrers`, `gc.get_referents`;
- taking interpreter frames (`sys._getframe`, `sys._current_frames`, a traceback's `tb_frame`,
  a generator's `gi_frame`, ...);
- ctypes (`ctypes.dlopen`, `ctypes.dlsym`, `ctypes.addressof`, `ctypes.string_at`, from_address ...);
- `sys.settrace`, `sys.setprofile`, `sys.addaudithook`, and a trace or profile function in place
  when a cell starts (`threading.settrace` included), or a signal handler of the student's (Python
  hands it the frame it interrupts);
- unpickling a name from the grading package (`pickle.find_class`: a pickle's GLOBAL imports the
  module it names and walks a dotted path in it);
- building code objects or functions by hand, or compiling code under a file's name.

The grading sandbox's launcher copies those lines into a file outside the sandbox (see
grading/sandbox.py), so the kernel cannot rewrite what it has already reported; the grader
reads them back with `read_evidence(path)` and stores the summaries under
nb.metadata[EVIDENCE_KEY] of the graded notebook. They are evidence for a human to review, not a
verdict: no score depends on them.

Whose code: IPython, ipykernel, jax, numpy, matplotlib and the standard library use several of
these primitives in normal work (jax and IPython take frames all the time; importing asyncio
assigns __code__, namedtuple assigns __defaults__, cProfile sets a profile function), so a use
counts only when the code responsible is the student's: a frame running in the shell's user
namespace, compiled from a cell (IPython's '<ipython-input-N-...>', ipykernel's
'.../ipykernel_PID/HASH.py'), a module loaded from anywhere but the installed environment (the
interpreter's prefixes, the standard library, site-packages: a module handed in beside the
notebook, or written by a cell into the working folder, TMPDIR or HOME, is the student's), or code
run from a string, whatever frame compiled or ran it (exec, eval: the code objects, with the
functions defined in them, whatever label they were compiled under, so a helper compiled as
"helpers" and called later by a library is still the student's, and so is the string
`timeit.timeit("...")` compiles in timeit's frame), and code a student's frame ran. The code objects
are kept in a table of MAX_CODES; a full table is flagged, and from then on every frame of code
from a string counts as the student's (it fails closed). For most
primitives that is the immediate caller, seen through `inspect`, `ctypes`, `unittest.mock`, the
modules that take frames or set trace functions for their callers (`bdb`, `pdb`, `trace`, `profile`,
IPython's `IPython/utils/frame.py`) and code compiled from strings (so `exec("sys._getframe()")`
and `mock.patch.object(f, "__defaults__", ...)` are still the student's). For gc walks, new audit
hooks and unpickling the grading package, which no library does in normal work, it is the first
student frame anywhere on the stack, unless the grader's own code (this package) comes first.
Threads: where a thread calls what it was given (Thread.run, Timer.run, a
pool's work item), the code responsible is what it was given: a builtin (`Thread(target=
gc.get_objects)`) or code seen through is the student's, since no library starts a thread so, and
an event with no Python frame at all (`_thread.start_new_thread(gc.get_objects, ())`) is too.

Hooks that raise no event of their own: `threading.settrace` and `threading.setprofile` only set
a function every later thread starts under, and a trace function set between two cells stays in
place unseen. At each heartbeat (below) the hook looks for trace and profile functions in place
(this thread's, and those for new threads) and records each it finds ("hook:..." lines); and a
thread that starts under one set for new threads (threading's bootstrap installs it) is recorded
as it starts, whoever started the thread: no library sets one in a grading kernel.

Instruments: an instrument raises `library.CHANGED_EVENT` with the name of each library attribute
it relies on that student code replaced (kernel/library.py); the hook writes it as it comes.

The hook never raises into the code it watches, writes at most PER_KIND lines per kind, and
keeps its state where only a tampering primitive reaches it (its defaults, which cannot be
reassigned without being recorded).

Evidence that cannot be switched off quietly. The descriptor itself is the student's to close:
`os.dup2` of /dev/null over it (its number is in /proc/self/fd) silences every later record. So
the channel also says that it is alive. `beat_each_cell()`, one of the kernel's start-up lines,
registers an IPython pre_run_cell callback that raises the audit event HEARTBEAT_EVENT, and the
hook writes one HEARTBEAT line for it at the start of every cell the kernel runs (cells the
grader runs silently, and the start-up lines, excepted). The grader knows how many cells it ran there and gives that
number to `read_evidence(path, cells=N)`: fewer heartbeats flags "the evidence channel went
silent" (the callback removed, the descriptor closed or redirected, the hook's defaults
replaced: each shows). The launcher (grading/sandbox.py) flags the other half: an end of file on
the pipe while the kernel process still runs means the kernel closed its end ("the evidence
channel closed while the kernel ran", written by the launcher as CLOSED). A kernel that forges
these lines only flags itself, and heartbeats it adds (raising the event, running cells from a
cell) reach the file only through a live channel, which records what the hook sees anyway. Code
that keeps the real pipe open under another number (`os.dup`), puts a pipe of its own in its place
(`os.dup2`) and writes well-formed lines, heartbeats included, to the real one is seen from
outside: the launcher reads which descriptors of the sandbox's processes hold the pipe's write end
(SECOND, "the evidence channel was open under a second descriptor"), at each line that arrives and
every 0.2 s; a duplicate kept for less, within one cell, can pass unseen. The grader's scan of the
submitted code also flags the descriptors it touches ("code touches file descriptors":
grading/code_scan.py); code written against this module's internals is likewise flagged there,
where its name is spelled out. The records already written stay outside the sandbox.
"""
from __future__ import annotations

import os
import sys

from .library import CHANGED_EVENT

EVIDENCE_KEY = "perfcourse_evidence"   # nb.metadata key of a graded notebook: list of flag strings
ENV_FD = "PERFCOURSE_EVIDENCE_FD"
PER_KIND = 100                         # lines written per kind; the summary then says "or more"
TRUNCATED = "#truncated"               # written by the sandbox launcher when the kernel wrote too much
CLOSED = "#closed"                     # written by the sandbox launcher: the pipe closed while the kernel ran
HEARTBEAT = "cell"                     # written by the hook at the start of each cell the kernel runs
HEARTBEAT_EVENT = "perfcourse.evidence.cell"  # the audit event the pre_run_cell callback raises
READ_LIMIT = 2 << 20
MAX_CODES = 20_000                     # code objects kept as the student's (compiled from strings in cells)
SECOND = "#second"                     # written by the sandbox launcher: the pipe open under a second descriptor
CHANGED = "changed:"                   # + a name: what an instrument relies on was replaced (kernel/library.py)

FRAME_ATTRIBUTES = {"tb_frame": "frame:tb_frame", "gi_frame": "frame:gi_frame",
                    "cr_frame": "frame:cr_frame", "ag_frame": "frame:ag_frame"}
ASSIGNED = {"__code__": "assign:__code__", "__defaults__": "assign:__defaults__",
            "__kwdefaults__": "assign:__kwdefaults__"}
CTYPES_EVENTS = ("ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.addressof",
                 "ctypes.string_at", "ctypes.wstring_at", "ctypes.cdata", "ctypes.cdata/buffer",
                 "ctypes.call_function", "ctypes.PyObj_FromPtr")

LABELS = {
    "assign:__code__": "assigned __code__",
    "assign:__defaults__": "assigned __defaults__",
    "assign:__kwdefaults__": "assigned __kwdefaults__",
    "gc.get_objects": "walked every object (gc.get_objects)",
    "gc.get_referrers": "searched for an object's referrers (gc.get_referrers)",
    "gc.get_referents": "followed an object's references (gc.get_referents)",
    "frame:sys._getframe": "took an interpreter frame (sys._getframe)",
    "frame:sys._current_frames": "took every thread's frame (sys._current_frames)",
    "frame:tb_frame": "took an interpreter frame (a traceback's tb_frame)",
    "frame:gi_frame": "took an interpreter frame (a generator's gi_frame)",
    "frame:cr_frame": "took an interpreter frame (a coroutine's cr_frame)",
    "frame:ag_frame": "took an interpreter frame (an async generator's ag_frame)",
    "sys.settrace": "installed a trace function (sys.settrace)",
    "sys.setprofile": "installed a profile function (sys.setprofile, or a profiler's enable())",
    "sys.addaudithook": "added an audit hook (sys.addaudithook)",
    "sys.monitoring": "registered a monitoring callback (sys.monitoring)",
    "hook:sys.settrace": "a trace function was in place when a cell started (sys.settrace)",
    "hook:sys.setprofile": "a profile function was in place when a cell started (sys.setprofile)",
    "hook:threading.settrace": "a trace function for new threads was in place (threading.settrace)",
    "hook:threading.setprofile": "a profile function for new threads was in place (threading.setprofile)",
    "compile:file": "compiled code under a file's path (compile)",
    "code.__new__": "built a code object (types.CodeType or code.replace)",
    "function.__new__": "built a function from a code object (types.FunctionType)",
    "pickle:course": "unpickled a name from the grading package (pickle.find_class)",
    "hook:__import__": ("builtins.__import__ was replaced when a cell started: every import statement runs "
                        "the student's code, handed the importing module's namespace"),
    "hook:signal": ("a signal handler of the student's was in place when a cell started (signal.signal: "
                    "it is handed the frame it interrupts)"),
    **{f"ctypes:{event}": f"used ctypes ({event})" for event in CTYPES_EVENTS},
    "codes:full": (f"ran code from strings past the {MAX_CODES} code objects the audit hook keeps: from then on "
                   "every frame of code from a string counts as the student's"),
}

_installed = False


def install() -> bool:
    """Add the audit hook, writing to the descriptor in PERFCOURSE_EVIDENCE_FD; False if there is none."""
    global _installed
    if _installed:
        return True
    value = os.environ.pop(ENV_FD, None)  # student code need not find the number in its environment
    fd = _channel(value)
    if fd is None:
        print(f"perfcourse evidence: WARNING: {ENV_FD} is "
              f"{'not set' if value is None else 'not an open pipe or file'}: tampering in this kernel "
              "is not recorded", file=sys.__stderr__ or sys.stderr, flush=True)
        return False
    os.set_inheritable(fd, False)  # programs the student starts do not get the channel
    sys.addaudithook(_make_hook(fd))
    _installed = True
    return True


def beat_each_cell() -> bool:
    """Have the hook write a heartbeat at the start of every cell the kernel runs (a start-up line).

    The kernel's start-up lines (IPKernelApp.exec_lines) are no cells: wherever this one comes
    among them, those run after it write none, since the grader compares the count with the cells
    it ran. False outside IPython, or where the hook is not installed."""
    if not _installed:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    app = getattr(sys.modules.get("ipykernel.kernelapp"), "IPKernelApp", None)
    start_up = frozenset(app.instance().exec_lines) if app is not None and app.initialized() else frozenset()

    def heartbeat(info=None, audit=sys.audit, event=HEARTBEAT_EVENT, start_up=start_up):
        if getattr(info, "raw_cell", None) not in start_up:
            audit(event)  # the hook writes the line, with the descriptor it holds

    shell.events.register("pre_run_cell", heartbeat)
    return True


def _channel(value: str | None) -> int | None:
    import stat

    try:
        fd = int(value)
        mode = os.fstat(fd).st_mode
    except (TypeError, ValueError, OSError):
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISREG(mode) else None


def _make_hook(fd: int):
    import _thread
    import ctypes  # for where it lives: its own frames are seen through, to the code that called it
    import functools
    import inspect
    import re
    import threading
    import types

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    library = os.path.dirname(os.path.abspath(inspect.__file__))  # the standard library's folder
    # Also seen through: the modules whose purpose is to set a trace or profile function, or take a
    # frame, for the code that calls them (debuggers, tracers, the pure-Python profiler, IPython's
    # frame utilities); no library calls them in a grading kernel's normal work.
    through = (os.path.abspath(inspect.__file__), os.path.join(library, "unittest", "mock.py"),
               os.path.dirname(os.path.abspath(ctypes.__file__)) + os.sep,
               *(os.path.join(library, name) for name in ("bdb.py", "pdb.py", "trace.py", "profile.py")),
               *_ipython_frame_utilities())
    # Where a thread calls what it was started with (Thread.run, Timer.run, a pool's _WorkItem.run):
    # the code responsible is whatever the thread was given to run.
    machinery = (os.path.abspath(threading.__file__), os.path.join(library, "concurrent", "futures", "thread.py"))
    cell_name = re.compile(r"<ipython-input-\d+-[0-9a-f]+>\Z|[/\\]ipykernel_\d+[/\\]\d+\.py\Z")
    # The kernel's working folder holds the submission and what its cells write: a module there
    # (handed in, or written by a cell and imported) is the student's code.
    work = os.path.join(os.path.abspath(os.getcwd()), "")
    safe_name = re.compile(r"[^A-Za-z0-9_.]")
    installed = installed_roots()

    course = __name__.split(".")[0]

    def course_pickle(args):
        # A pickle's GLOBAL names a module and a dotted path in it that pickle imports and walks: the
        # grading package's code reached with no importer called and no attribute read by the student.
        module = args[0] if args else None
        return "pickle:course" if isinstance(module, str) and module.split(".")[0] == course else None

    def frame_attribute(args):
        return FRAME_ATTRIBUTES.get(args[1]) if len(args) > 1 and isinstance(args[1], str) else None

    def assigned(args):
        if len(args) > 1 and isinstance(args[1], str) and type(args[0]).__name__ == "function":
            return ASSIGNED.get(args[1])
        return None

    def compiled(args):
        # Code compiled under a path (or a cell's name) would pass for a library's, the grader's or
        # another cell's frames; a plain label ("lesson-example") passes for nothing.
        name = args[1] if len(args) > 1 else None
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        looks_like_a_file = isinstance(name, str) and (os.sep in name or name.endswith(".py")
                                                       or bool(cell_name.search(name)))
        return "compile:file" if looks_like_a_file and not name.startswith("<") else None

    caller, on_stack = 1, 2
    rules = {
        "object.__getattr__": (frame_attribute, caller),
        "object.__setattr__": (assigned, caller),
        "sys._getframe": ("frame:sys._getframe", caller),
        "sys._current_frames": ("frame:sys._current_frames", caller),
        "gc.get_objects": ("gc.get_objects", on_stack),
        "gc.get_referrers": ("gc.get_referrers", on_stack),
        "gc.get_referents": ("gc.get_referents", on_stack),
        "sys.settrace": ("sys.settrace", caller),
        "sys.setprofile": ("sys.setprofile", caller),
        "sys.addaudithook": ("sys.addaudithook", on_stack),
        "sys.monitoring.register_callback": ("sys.monitoring", caller),  # Python 3.12 on: settrace's successor
        "compile": (compiled, caller),
        "pickle.find_class": (course_pickle, on_stack),
        "code.__new__": ("code.__new__", caller),
        "function.__new__": ("function.__new__", caller),
        **{event: (f"ctypes:{event}", caller) for event in CTYPES_EVENTS},
    }
    # What each file name means: 1 a cell (or a module loaded from anywhere but the installed
    # environment: the working folder, TMPDIR, HOME), 2 seen through (inspect, ctypes,
    # unittest.mock, code compiled from a string), 3 the grader's own code, 4 a thread's machinery,
    # 0 the installed environment's (and frozen modules).
    # Cached: the same few files recur.
    OTHER, CELL, THROUGH, GRADER, MACHINERY = 0, 1, 2, 3, 4

    def classify(name, cache={}, normpath=os.path.normpath):
        found = cache.get(name)
        if found is None:
            if cell_name.search(name) or (name.startswith(work) and not name.startswith(package)):
                found = CELL
            elif name in machinery:
                found = MACHINERY
            elif name.startswith(through) or (name.startswith("<") and not name.startswith("<frozen ")):
                found = THROUGH
            elif name.startswith(package):
                found = GRADER
            elif name.startswith("<") or normpath(name).startswith(installed):
                found = OTHER
            else:  # fails closed: a module is the student's unless the installed environment holds it
                found = CELL
            if len(cache) > 4096:
                cache.clear()
            cache[name] = found
        return found

    def student_namespace(known=[]):
        if not known:
            module = sys.modules.get("IPython.core.interactiveshell")
            shell = getattr(getattr(module, "InteractiveShell", None), "_instance", None)
            if shell is None:
                return None
            known.append(shell.user_global_ns)
        return known[0]

    # Code run from a string (exec, eval), whatever frame compiled or ran it (a library's too:
    # `timeit.timeit("...")` compiles and runs the student's string in timeit's frame), and code a
    # student's frame ran, whatever label it was compiled under, with the functions defined in it:
    # by code object. At most MAX_CODES kept; past that, every frame of code from a string counts
    # as the student's (`full`), and that is flagged.
    codes, full = {}, []

    def keep_code(code, depth=0):
        """Keep `code` and the code defined in it; False when the table is full."""
        if type(code).__name__ != "code" or depth >= 32:
            return True
        if len(codes) >= MAX_CODES:
            full[:] = [True]
            return False
        codes[id(code)] = code
        return all([keep_code(const, depth + 1) for const in code.co_consts if type(const) is type(code)])

    def from_a_string(code):
        """Code compiled from a string rather than loaded from a file: a label, or a <name>."""
        name = getattr(code, "co_filename", "")
        if not isinstance(name, str):
            return False
        if name.startswith("<"):
            return not name.startswith("<frozen ")
        return os.sep not in name and not name.endswith(".py")

    def responsible(frame, policy):
        """1: the student's code, 0: not, None: undecided (look at the frame's caller)."""
        namespace = student_namespace()
        if namespace is not None and frame.f_globals is namespace:
            return 1
        code = frame.f_code
        if id(code) in codes:
            return 1
        if full and from_a_string(code):
            return 1
        what = classify(code.co_filename)
        if what == CELL:
            return 1
        if what == MACHINERY and code.co_name == "run":
            target = given(frame)
            if target is not None:
                return 1 if runs_student_code(target) else (0 if policy == caller else None)
            return None
        if what == GRADER or (what in (OTHER, MACHINERY) and policy == caller):
            return 0
        return None

    # given() and runs_student_code() look at objects the student may have built (a Thread subclass,
    # a callable with a `func`, a `__code__` of its own): read as their types define them, with
    # names bound here (student code can replace module attributes), so no property of theirs runs
    # inside the hook or answers it.
    def given(frame, static=inspect.getattr_static, partial=functools.partial):
        """What a thread's run() calls: a Thread's target, a Timer's function, a pool's work item."""
        self = frame.f_locals.get("self")
        for attribute in ("_target", "function", "fn"):
            target = static(self, attribute, None) if self is not None else None
            if target is not None:
                for _ in range(8):  # functools.partial around it: that type only, not a lookalike
                    if type(target) is not partial:
                        break
                    target = target.func
                return target
        return None

    def runs_student_code(target, static=inspect.getattr_static, method=types.MethodType,
                          descriptor=types.GetSetDescriptorType, code_type=types.CodeType):
        """A thread started on a builtin (gc.get_objects, sys._getframe) or on code seen through was
        started by the student: no library starts one so; one on a library's function is the library's."""
        if type(target) is method:
            target = target.__func__
        # The code only a function's (or a Cython function's) own descriptor gives: a `__code__` put
        # on any other object is no library's.
        code = static(target, "__code__", None)
        try:
            code = code.__get__(target) if type(code) is descriptor else None
        except Exception:
            code = None
        if type(code) is not code_type:
            return True
        return id(code) in codes or classify(code.co_filename) in (CELL, THROUGH)

    def blame(frame, policy):
        """Is the student's code responsible for the event raised from `frame`? An event with no
        Python frame at all was raised by a thread started on a builtin: the student's."""
        if frame is None:
            return True
        for _ in range(256):
            if frame is None:
                return False
            verdict = responsible(frame, policy)
            if verdict is not None:
                return verdict == 1
            frame = frame.f_back
        return False

    def student_handler(handler, static=inspect.getattr_static, method=types.MethodType,
                        function=types.FunctionType, partial=functools.partial):
        """Is a signal handler the student's code? Read as its type defines it, as given() reads."""
        if type(handler) is method:
            handler = handler.__func__
        for _ in range(8):
            if type(handler) is not partial:
                break
            handler = handler.func
        if type(handler) is not function:  # a callable object: its class's __call__
            handler = static(type(handler), "__call__", None)
        if type(handler) is not function:  # SIG_DFL, SIG_IGN, a builtin (Python's own SIGINT handler)
            return False
        code = handler.__code__
        return id(code) in codes or classify(code.co_filename) in (CELL, THROUGH)

    def hooks(trace=sys.gettrace, profile=sys.getprofile, threads=vars(threading), signals=_signals(),
              builtin=vars(sys.modules["builtins"]), importer=__import__):
        """The trace and profile functions in place now: this thread's, and those set for new threads;
        a signal handler of the student's (Python hands a handler the frame it interrupts); and
        builtins.__import__ replaced (an import statement hands it the importing module's globals)."""
        found = []
        if builtin.get("__import__") is not importer:
            found.append("hook:__import__")
        valid, handler_of = signals
        for number in valid:
            try:
                if student_handler(handler_of(number)):
                    found.append("hook:signal")
                    break
            except Exception:
                continue
        if trace() is not None:
            found.append("hook:sys.settrace")
        if profile() is not None:
            found.append("hook:sys.setprofile")
        if threads.get("_trace_hook") is not None:
            found.append("hook:threading.settrace")
        if threads.get("_profile_hook") is not None:
            found.append("hook:threading.setprofile")
        return found

    # Where a new thread installs the trace and profile functions set for new threads.
    starts = frozenset({getattr(getattr(threading.Thread, "_bootstrap_inner", None), "__code__", None)})

    def record(kind, counts, write, fd, limit):
        if counts.get(kind, 0) < limit:
            counts[kind] = counts.get(kind, 0) + 1
            write(fd, kind.encode() + b"\n")

    # Everything the hook uses is bound here, as defaults: replacing one means assigning the
    # hook's __defaults__, which the hook records before the assignment happens.
    def hook(event, args, rules=rules, blame=blame, counts={}, busy=set(), ident=_thread.get_ident,
             getframe=sys._getframe, write=os.write, fd=fd, limit=PER_KIND, beat=HEARTBEAT_EVENT,
             beat_line=HEARTBEAT.encode() + b"\n", changed=CHANGED_EVENT, hooks=hooks, record=record,
             keep_code=keep_code, safe_name=safe_name, starts=starts, threads=vars(threading),
             from_a_string=from_a_string):
        if event == beat:  # a cell starts: every one is written, whoever raised it
            try:
                write(fd, beat_line)
                for kind in hooks():
                    record(kind, counts, write, fd, limit)
            except Exception:
                pass
            return
        if event == changed:  # an instrument's library was replaced (kernel/library.py): written as it comes
            try:
                record(CHANGED + safe_name.sub("?", str(args[0]))[:120], counts, write, fd, limit)
            except Exception:
                pass
            return
        if event == "exec":  # code from a string is the student's; other code, when a student's frame ran it
            try:
                me = ident()
                if me not in busy:
                    busy.add(me)
                    try:
                        if (from_a_string(args[0]) or blame(getframe(1), caller)) and not keep_code(args[0]):
                            record("codes:full", counts, write, fd, 1)
                    finally:
                        busy.discard(me)
            except Exception:
                pass
            return
        rule = rules.get(event)
        if rule is None:
            return
        try:
            kind, policy = rule
            if callable(kind):
                kind = kind(args)
            if kind is None or counts.get(kind, 0) >= limit:
                return
            me = ident()
            if me in busy:  # an event raised by this hook's own frame walk
                return
            busy.add(me)
            try:
                try:
                    frame = getframe(1)
                except ValueError:  # no Python frame: a thread started on a builtin
                    frame = None
                if frame is not None and frame.f_code in starts:
                    # A thread starting under the function set for new threads, which no library sets
                    # in a grading kernel: seen even where it was set and removed within one cell.
                    if threads.get("_trace_hook" if event == "sys.settrace" else "_profile_hook") is not None:
                        record("hook:threading." + event[len("sys."):], counts, write, fd, limit)
                    return
                if not blame(frame, policy):
                    return
                record(kind, counts, write, fd, limit)
            finally:
                busy.discard(me)
        except Exception:  # never into the student's code: a lost record is better than a changed run
            pass

    return hook


def _ipython_frame_utilities() -> tuple[str, ...]:
    """IPython's frame utilities' file (extract_module_locals and its kind), found without importing IPython."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("IPython")
    except (ImportError, ValueError):
        return ()
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    return tuple(os.path.join(os.path.abspath(folder), "utils", "frame.py") for folder in folders[:1])


def _signals():
    """(the signal numbers, signal.getsignal), bound when the hook is made."""
    import signal

    return tuple(signal.valid_signals()), signal.getsignal


_roots: tuple[str, ...] | None = None  # as found at the first call, the kernel's start-up (the hook's install)


def installed_roots() -> tuple[str, ...]:
    """The folders of the installed environment, each ending in a separator: the interpreter's
    prefixes, the standard library's and site-packages' paths, never the user's site-packages
    (in HOME, which the student's kernel may write); and JAX's own package folders wherever the
    interpreter finds them (a machine may put JAX on PYTHONPATH: the lent TPU machine's is in /opt,
    and its Pallas would otherwise read as a student's copy), unless the working folder holds them.
    Found once, at the first call: the evidence hook's install, before any student code, so a probe
    imported later (after the student's cells) reads what start-up found, not a `jax.__file__` changed."""
    global _roots
    if _roots is None:
        _roots = _find_installed_roots()
    return _roots


def _package_folder(name: str) -> str:
    """Where the package `name` is (imported, or as the import system would find it), without importing it."""
    origin = getattr(sys.modules.get(name), "__file__", None)
    if origin is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
    return os.path.dirname(origin) if isinstance(origin, str) else ""


def _find_installed_roots() -> tuple[str, ...]:
    import site
    import sysconfig

    work = os.path.join(os.path.abspath(os.getcwd()), "")
    packages = (_package_folder(name) for name in ("jax", "jaxlib"))
    folders = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
               *(sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")),
               *site.getsitepackages(),
               *(package for package in packages if package and not os.path.join(package, "").startswith(work))}
    roots = set()
    for folder in folders:
        if folder and os.path.isabs(folder) and os.path.normpath(folder) != os.sep:
            roots.update(os.path.join(os.path.normpath(path), "") for path in (folder, os.path.realpath(folder)))
    return tuple(sorted(roots))


CLOSED_FLAG = "the evidence channel closed while the kernel ran: nothing it did after that is recorded"
SILENT_FLAG = "the evidence channel went silent"
SECOND_FLAG = ("the evidence channel was open under a second descriptor in the kernel (os.dup): "
               "what reached it may be the kernel's own writing")
CHANGED_FLAG = "what the course's instrument relies on was replaced in the student's kernel"


def read_evidence(path, cells: int | None = None) -> list[str]:
    """The distinct flags in an evidence file, summarized: 'assigned __code__ (3 times)'.

    `cells`: how many cells the grader ran in the student's kernel (each one writes a heartbeat);
    fewer heartbeats than that is flagged (SILENT_FLAG). None: heartbeats are not checked.
    The sandbox's launcher creates the file before the kernel starts (grading/sandbox.py), so
    none at all after cells ran there means it was removed: flagged too, never read as clean."""
    data = _read(path)
    if data is None:
        return [f"{SILENT_FLAG}: no evidence file for the {cells} cells the student's kernel ran"] if cells else []
    counts, unknown, truncated, closed, second, beats, changed = {}, 0, False, False, False, 0, {}
    for raw in data.split(b"\n"):
        line = raw.decode("ascii", "replace").strip()
        if not line:
            continue
        if line == HEARTBEAT:
            beats += 1
        elif line == TRUNCATED:
            truncated = True
        elif line == CLOSED:
            closed = True
        elif line == SECOND:
            second = True
        elif line in LABELS:
            counts[line] = counts.get(line, 0) + 1
        elif line.startswith(CHANGED) and len(line) > len(CHANGED):
            changed[line[len(CHANGED):]] = True
        else:
            unknown += 1
    flags = [f"{LABELS[kind]} ({_times(n)})" for kind, n in counts.items()]
    if changed:
        flags.append(f"{CHANGED_FLAG}: {', '.join(sorted(changed)[:12])}" + (" ..." if len(changed) > 12 else ""))
    if second:
        flags.append(SECOND_FLAG)
    if unknown:
        flags.append(f"lines on the evidence channel that the audit hook does not write ({_times(unknown)}): "
                     "the kernel's code wrote to it")
    if truncated:
        flags.append("the kernel wrote more to the evidence channel than is kept: the rest was dropped")
    if closed:
        flags.append(CLOSED_FLAG)
    if cells is not None and beats < cells and not truncated:  # cut short: the count says nothing
        flags.append(f"{SILENT_FLAG}: no heartbeat for {cells - beats} of the {cells} cells "
                     "the student's kernel ran")
    return flags


def heartbeats(path) -> int:
    """How many heartbeats an evidence file holds so far (the grader waits for the launcher's copy)."""
    data = _read(path)
    return 0 if data is None else sum(1 for raw in data.split(b"\n") if raw.strip() == HEARTBEAT.encode())


def _read(path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(READ_LIMIT)
    except FileNotFoundError:
        return None


def _times(n: int) -> str:
    if n >= PER_KIND:
        return f"{n} or more times"
    return "once" if n == 1 else f"{n} times"
