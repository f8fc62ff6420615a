"""The evidence audit hook, in real interpreters: quiet for normal JAX, NumPy, matplotlib and IPython
work, and a record for each tampering primitive the student's own code uses."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

from perfcourse.kernel import evidence
from perfcourse.kernel.evidence import LABELS, read_evidence

PRELUDE = """
import io, os, sys
from perfcourse.kernel import evidence
channel = int(os.environ[evidence.ENV_FD])
assert evidence.install()
assert evidence.ENV_FD not in os.environ
from IPython.core.interactiveshell import InteractiveShell

def run_cells(cells, **options):
    shell = InteractiveShell.instance(**options)
    for cell in cells:
        result = shell.run_cell(cell, store_history=True)
        if cell.startswith("#ok") and not result.success:
            raise SystemExit(f"cell failed: {cell!r}: {result.error_in_exec or result.error_before_exec}")
    return shell
"""


def run(tmp_path, program: str) -> tuple[list[str], str]:
    """Run `program` with the hook writing to a file; the flags read back, and its output."""
    path = tmp_path / "evidence.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(program)], pass_fds=(fd,),
                              env={**os.environ, evidence.ENV_FD: str(fd), "JAX_PLATFORMS": "cpu",
                                   "MPLBACKEND": "Agg"},
                              capture_output=True, text=True, timeout=180, cwd=tmp_path)
    finally:
        os.close(fd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return read_evidence(path), proc.stdout + proc.stderr


@pytest.mark.slow
def test_normal_jax_numpy_matplotlib_and_ipython_work_raises_no_flag(tmp_path):
    flags, output = run(tmp_path, '''
        import numpy as np
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x, w: jnp.tanh(x @ w))
        x = jnp.ones((64, 64))
        f(x, x).block_until_ready()
        jax.grad(lambda v: jnp.sum(f(v, v)))(x).block_until_ready()
        jax.make_jaxpr(f)(x, x)
        lowered = jax.jit(lambda v: v * 2).lower(x)
        lowered.as_text()
        compiled = lowered.compile()
        compiled.cost_analysis()
        compiled(x).block_until_ready()
        np.testing.assert_allclose(np.asarray(f(x, x)), np.tanh(np.ones((64, 64)) @ np.ones((64, 64))), rtol=1e-5)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], label="a"); ax.legend(); ax.set_title("t")
        fig.savefig(io.BytesIO(), format="png")
        run_cells([
            "#ok\\nimport jax, jax.numpy as jnp, numpy as np, time, statistics, io\\n"
            "@jax.jit\\ndef workload(x, w):\\n    return jnp.tanh(x @ w)\\n"
            "x = jnp.ones((32, 32)); workload(x, x).block_until_ready()",
            "#ok\\ndef time_completed(fn, *args, warm_calls=5):\\n"
            "    times = []\\n    for _ in range(warm_calls + 1):\\n        start = time.perf_counter()\\n"
            "        jax.block_until_ready(fn(*args))\\n        times.append(time.perf_counter() - start)\\n"
            "    return times[0], statistics.median(times[1:])\\ntime_completed(workload, x, x)",
            "#ok\\njax.make_jaxpr(workload)(x, x)",
            "#ok\\nexample = {}\\nexec(compile('WIDTH = 16', 'lesson-example', 'exec'), example)",
            "#ok\\nc = jax.jit(workload).lower(x, x).compile(); c.cost_analysis(); c.as_text()[:10]",
            "#ok\\njax.grad(lambda v: jnp.sum(workload(v, v)))(x)",
            "#ok\\nsaved = jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))\\njax.grad(lambda v: saved(v).sum())(x)",
            "#ok\\nfrom jax import lax\\nlax.scan(lambda c, v: (c + v, c), 0.0, jnp.arange(5.0))",
            "1/0",
            "#ok\\nfrom IPython.display import display, HTML\\ndisplay({'a': 1}); display(HTML('<b>x</b>'))\\n"
            "display(np.arange(3))",
            "#ok\\nimport matplotlib.pyplot as plt\\nplt.plot([1, 2]); plt.savefig(io.BytesIO(), format='png')",
            "#ok\\nfrom collections import namedtuple\\nP = namedtuple('P', 'a b')\\nimport logging\\n"
            "logging.getLogger('x').warning('hi')\\nimport traceback\\ntry:\\n    1/0\\nexcept Exception:\\n"
            "    traceback.print_exc()",
            "#ok\\nimport dataclasses, typing\\n@dataclasses.dataclass\\nclass C:\\n    a: int = 1\\n"
            "T = typing.TypeVar('T')\\nC()",
            "#ok\\ndef gen():\\n    yield 1\\nlist(gen())",
            "#ok\\nimport inspect\\ninspect.signature(workload); inspect.getsource(time_completed)",
            "#ok\\n%timeit -n 2 -r 2 workload(x, x).block_until_ready()",
            "#ok\\n{'shown': True}",
            # The standard library assigns __code__ and __defaults__ itself, on import and in namedtuple.
            "#ok\\nimport asyncio, unittest.mock\\nfrom collections import namedtuple\\n"
            "Q = namedtuple('Q', 'a b', defaults=(1,))",
            "#ok\\n%prun -q workload(x, x)",
        ])
        print("done")
    ''')
    assert "done" in output and "ZeroDivisionError" in output
    assert flags == []


TAMPERING = {
    "assign:__code__": "def f(a=1):\n    return a\ndef g(a=2):\n    return a\nf.__code__ = g.__code__",
    "assign:__defaults__": "f.__defaults__ = (5,)",
    "assign:__kwdefaults__": "def h(*, k=1):\n    return k\nh.__kwdefaults__ = {'k': 2}",
    "gc.get_objects": "import gc\n_ = len(gc.get_objects())",
    "gc.get_referrers": "_ = gc.get_referrers(f)",
    "gc.get_referents": "_ = gc.get_referents(f)",
    "frame:sys._getframe": "import sys\nsys._getframe()",
    "frame:sys._current_frames": "sys._current_frames()",
    "frame:tb_frame": "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    "frame:gi_frame": "def gg():\n    yield 1\ngg().gi_frame",
    "ctypes:ctypes.addressof": "import ctypes\nctypes.addressof(ctypes.c_int(1))",
    "ctypes:ctypes.string_at": "ctypes.string_at(id(1), 1)",
    "ctypes:ctypes.cdata": "ctypes.c_int.from_address(id(1))",
    "ctypes:ctypes.dlopen": "libc = ctypes.CDLL(None)",
    "ctypes:ctypes.dlsym": "libc.getpid",
    "sys.settrace": "sys.settrace(None)",
    "sys.setprofile": "sys.setprofile(None)",
    "sys.addaudithook": "sys.addaudithook(lambda *a: None)",
    "compile:file": "compile('1', '/usr/lib/python3/x.py', 'exec')",
    "code.__new__": "f.__code__.replace(co_name='x')",
    "function.__new__": "import types\ntypes.FunctionType(f.__code__, {})",
}


@pytest.mark.parametrize("compiler", ["IPython", "ipykernel"])
def test_each_tampering_primitive_in_a_cell_is_flagged(tmp_path, compiler):
    options = "compiler_class=XCachingCompiler" if compiler == "ipykernel" else ""
    flags, output = run(tmp_path, f'''
        from ipykernel.compiler import XCachingCompiler
        shell = run_cells({list(TAMPERING.values())!r}, {options})
        assert ("ipykernel_" in shell.compile.cache("x = 1")) == {compiler == "ipykernel"}
        print("done")
    ''')
    assert "done" in output
    assert flags == [f"{LABELS[kind]} (once)" for kind in TAMPERING]


def test_the_usual_ways_around_are_flagged_too(tmp_path):
    flags, _ = run(tmp_path, '''
        run_cells([
            "import sys, inspect\\ninspect.currentframe()",                   # through inspect
            "exec('import sys; sys._getframe()')",                            # through code compiled from a string
            "def g(a=2):\\n    return a\\nfrom unittest import mock\\n"
            "with mock.patch.object(g, '__defaults__', (9,)):\\n    pass",    # through a library
        ])
        # Code compiled under a cell's name runs as the student's, whatever its globals.
        exec(compile("import gc\\ngc.get_objects()", "/tmp/ipykernel_123/4567.py", "exec"), {})
    ''')
    assert flags == [f"{LABELS['frame:sys._getframe']} (2 times)",
                     f"{LABELS['assign:__defaults__']} (2 times)",  # patched, then restored
                     f"{LABELS['gc.get_objects']} (once)"]


def test_code_compiled_from_a_string_in_a_cell_is_the_students_under_any_label(tmp_path):
    flags, _ = run(tmp_path, '''
        run_cells([
            # Functions defined by code the cell ran from a string, called later by a library.
            "#ok\\nns = {}\\n"
            "exec(compile('import sys\\\\ndef peek():\\\\n    return sys._getframe()', 'helpers', 'exec'), ns)",
            "#ok\\nimport functools\\nfunctools.reduce(lambda a, b: ns['peek'](), [1, 2])",
            "#ok\\nwalk = eval(compile('lambda: __import__(\\\\'gc\\\\').get_objects()', 'x.txt', 'eval'))\\n"
            "list(map(lambda f: f(), [walk]))",
        ])
        # A module the cells wrote into the working folder and imported is the student's too.
        with open("helpers_on_disk.py", "w") as handle:
            handle.write("import sys\\ndef peek(_):\\n    return sys._getframe().f_lineno\\n")
        run_cells(["#ok\\nimport helpers_on_disk\\nsorted([1, 2], key=helpers_on_disk.peek)"])
        # Code from a string is the student's whatever frame compiles and runs it: a library's too.
        ns = {}
        exec(compile("import sys\\ndef peek():\\n    return sys._getframe()", "helpers", "exec"), ns)
        ns["peek"]()
    ''')
    assert flags == [f"{LABELS['frame:sys._getframe']} (4 times)", f"{LABELS['gc.get_objects']} (once)"]


def test_code_a_library_runs_from_the_students_string_is_the_students(tmp_path):
    flags, _ = run(tmp_path, '''
        run_cells(["#ok\\nimport timeit\\ntimeit.timeit('sys._getframe()', setup='import sys', number=2)",
                   "#ok\\nimport timeit\\ntimeit.timeit('gc.get_referrers(0)', setup='import gc', number=1)"])
    ''')
    assert flags == [f"{LABELS['frame:sys._getframe']} (2 times)", f"{LABELS['gc.get_referrers']} (once)"]


def test_a_module_is_the_students_unless_the_installed_environment_holds_it(tmp_path):
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"  # neither the working folder nor installed
    elsewhere.mkdir()
    (elsewhere / "helpers_elsewhere.py").write_text("import sys\ndef peek(_):\n    return sys._getframe().f_lineno\n")
    flags, _ = run(tmp_path, f'''
        sys.path.append({str(elsewhere)!r})
        run_cells(["#ok\\nimport helpers_elsewhere\\nsorted([1, 2], key=helpers_elsewhere.peek)"])
        # The installed environment's own modules take frames in normal work: not flagged.
        run_cells(["#ok\\nimport logging\\nlogging.getLogger('x').findCaller()"])
    ''')
    assert flags == [f"{LABELS['frame:sys._getframe']} (2 times)"]


def test_a_full_table_of_code_is_a_flag_and_later_code_from_strings_is_the_students(tmp_path):
    flags, _ = run(tmp_path, f'''
        run_cells(["#ok\\nfor n in range({evidence.MAX_CODES + 10}):\\n    exec(compile('x = 1', 'filler', 'exec'))"])
        # Past the table's limit: code a library compiles from a string and runs later is still the student's.
        ns = {{}}
        exec(compile("import sys\\ndef peek():\\n    return sys._getframe()", "late", "exec"), ns)
        ns["peek"]()
    ''')
    assert flags == [LABELS["codes:full"] + " (once)", f"{LABELS['frame:sys._getframe']} (once)"]


def test_events_on_threads_the_student_started_are_the_students(tmp_path):
    flags, _ = run(tmp_path, '''
        import threading
        run_cells([
            "#ok\\nimport gc, sys, threading, functools\\n"
            "t = threading.Thread(target=gc.get_objects); t.start(); t.join()",
            "#ok\\nt = threading.Thread(target=functools.partial(gc.get_referrers, t)); t.start(); t.join()",
            "#ok\\nfrom concurrent.futures import ThreadPoolExecutor\\n"
            "with ThreadPoolExecutor(1) as pool:\\n    pool.submit(sys._getframe).result()",
            # Waited for until it ends (as the others are joined), its target still the builtin.
            "#ok\\nimport _thread, time\\nrunning = _thread._count()\\n"
            "_thread.start_new_thread(gc.get_referents, (t,))\\n"
            "for _ in range(6000):\\n    if _thread._count() <= running:\\n        break\\n    time.sleep(0.01)",
            "#ok\\nimport inspect\\nt = threading.Timer(0, inspect.currentframe); t.start(); t.join()",
        ])
        # A thread a library starts on its own function, which walks objects, is the library's.
        import json
        import gc
        t = threading.Thread(target=json.loads, args=("1",)); t.start(); t.join()
        t = threading.Thread(target=gc.collect); t.start(); t.join()
    ''')
    assert flags == [f"{LABELS['gc.get_objects']} (once)", f"{LABELS['gc.get_referrers']} (once)",
                     f"{LABELS['frame:sys._getframe']} (2 times)", f"{LABELS['gc.get_referents']} (once)"]


def test_a_thread_target_that_passes_for_a_librarys_function_is_still_the_students(tmp_path):
    # What the hook reads is what the types define: a `func` that is no functools.partial's, a
    # `__code__` put on a callable object, a property on a Thread subclass (which, read by the hook,
    # would answer a library's function) each leave the builtin the thread runs the student's.
    flags, _ = run(tmp_path, '''
        run_cells([
            "#ok\\nimport gc, json, threading\\n"
            "class X:\\n    __call__ = gc.get_objects\\n    func = json.dumps\\n"
            "t = threading.Thread(target=X()); t.start(); t.join()",
            "#ok\\nclass Y:\\n    __call__ = gc.get_referrers\\n    __code__ = json.dumps.__code__\\n"
            "t = threading.Thread(target=Y(), args=(t,)); t.start(); t.join()",
            "#ok\\nclass T(threading.Thread):\\n    reads = 0\\n"
            "    @property\\n    def _target(self):\\n"
            "        T.reads += 1  # Thread.run reads it twice; a third read is the hook's\\n"
            "        return gc.get_referents if T.reads <= 2 else json.dumps\\n"
            "    @_target.setter\\n    def _target(self, value):\\n        pass\\n"
            "    @_target.deleter\\n    def _target(self):\\n        pass\\n"
            "t = T(args=(t,)); t.start(); t.join()\\nassert T.reads == 2, T.reads",
        ])
    ''')
    assert flags == [f"{LABELS['gc.get_objects']} (once)", f"{LABELS['gc.get_referrers']} (once)",
                     f"{LABELS['gc.get_referents']} (once)"]


def test_a_trace_or_profile_function_in_place_when_a_cell_starts_is_flagged(tmp_path):
    flags, _ = run(tmp_path, '''
        shell = InteractiveShell.instance()
        assert evidence.beat_each_cell()
        run_cells([
            "#ok\\nimport threading\\nthreading.settrace(lambda *a: None)",  # no audit event of its own
            "#ok\\nthreading.setprofile(print)",
            "#ok\\nthreading._trace_hook = threading._profile_hook = None",
            "#ok\\n%prun -q x = 1",  # a profiler on and off within a cell leaves nothing in place
        ])
        # A trace function set outside any cell (by a library, between heartbeats) is seen at the next cell.
        sys.settrace(lambda *a: None)
        run_cells(["#ok\\nx = 2"])
        sys.settrace(None)
        # One for new threads set and removed within a cell is seen by the threads started meanwhile.
        run_cells(["#ok\\nthreading.setprofile(lambda *a: None)\\n"
                   "t = threading.Thread(target=int); t.start(); t.join()\\nthreading.setprofile(None)"])
    ''')
    assert flags == [f"{LABELS['hook:threading.settrace']} (2 times)",
                     f"{LABELS['hook:threading.setprofile']} (2 times)",
                     f"{LABELS['hook:sys.settrace']} (once)"]


@pytest.mark.slow
def test_frames_and_the_course_reached_through_a_library_are_the_students(tmp_path):
    # The sixth red-team batch: a trace function set by the standard library's trace module for the
    # cell's own function, IPython's frame utilities, a pickle naming the course's package, and a
    # signal handler (handed the frame it interrupts) and a replaced builtins.__import__ left in place;
    # a library's own use of pickle, Python's own SIGINT handler and a profiler on and off within a
    # cell stay unflagged.
    flags, _ = run(tmp_path, """
        shell = InteractiveShell.instance()
        assert evidence.beat_each_cell()
        run_cells([
            '#ok\\nimport trace\\nclass Watch(trace.Trace):\\n'
            '    def globaltrace_countfuncs(self, frame, why, arg):\\n        pass\\n'
            'Watch(count=0, trace=0, countfuncs=1).runfunc(abs, -1)',
            '#ok\\nfrom IPython.utils.frame import extract_module_locals\\n'
            'def up():\\n    return extract_module_locals(1)\\n_ = up()',
            "#ok\\nimport pickle\\nm, n = 'perfcourse.kernel.evidence'.encode(), b'install'\\n"
            "_ = pickle.loads(bytes([128, 4, 140, len(m)]) + m + bytes([140, len(n)]) + n + bytes([147, 46]))",
            '#ok\\nimport signal\\nsignal.signal(signal.SIGUSR1, lambda number, frame: None)',
            '#ok\\nsignal.signal(signal.SIGUSR1, signal.SIG_DFL)\\n'
            'signal.signal(signal.SIGINT, signal.default_int_handler)',
            '#ok\\nimport json\\n_ = pickle.loads(pickle.dumps(json.dumps))\\n%prun -q x = 1',
            '#ok\\nimport builtins\\nreal = builtins.__import__\\n'
            'builtins.__import__ = lambda *args, **kwargs: real(*args, **kwargs)',
            '#ok\\nbuiltins.__import__ = real',
            '#ok\\nx = 2',
        ])
    """)
    assert flags == [f"{LABELS['sys.settrace']} (2 times)",  # set, then removed
                     f"{LABELS['frame:sys._getframe']} (once)",
                     f"{LABELS['pickle:course']} (once)",
                     f"{LABELS['hook:signal']} (once)",  # in place as the fifth cell started only
                     f"{LABELS['hook:__import__']} (once)"]


def test_an_instruments_changed_library_is_named_once_each(tmp_path):
    path = tmp_path / "evidence.txt"
    path.write_bytes(b"changed:jax.numpy.int32\nchanged:json.loads\nchanged:jax.numpy.int32\n"
                     + evidence.SECOND.encode() + b"\n")
    assert read_evidence(path) == [f"{evidence.CHANGED_FLAG}: jax.numpy.int32, json.loads", evidence.SECOND_FLAG]


def test_the_graders_own_code_and_code_outside_cells_are_not_flagged(tmp_path):
    flags, _ = run(tmp_path, '''
        import perfcourse, gc
        # A helper of the grader's package (a hidden test's check) that swaps a function's defaults.
        grader = os.path.join(os.path.dirname(perfcourse.__file__), "checks", "helper.py")
        namespace = {}
        exec(compile("def swap(f):\\n    f.__defaults__ = (0,)\\n", grader, "exec"), namespace)
        shell = run_cells([])
        shell.user_ns["swap"] = namespace["swap"]
        run_cells(["#ok\\ndef g(a=2):\\n    return a\\nswap(g)"])
        gc.get_objects(); sys._getframe()  # outside any cell: the kernel's own start-up, say
    ''')
    assert flags == []


def test_the_hook_never_raises_and_stops_writing_at_the_cap(tmp_path):
    flags, output = run(tmp_path, '''
        run_cells(["#ok\\nimport sys\\nfor _ in range(500):\\n    sys._getframe()"])
        os.close(channel)  # the channel gone: later uses are lost, never raised into the cell
        run_cells(["#ok\\nimport gc\\ngc.get_objects()"])
        print("still running")
    ''')
    assert "still running" in output
    assert flags == [f"{LABELS['frame:sys._getframe']} ({evidence.PER_KIND} or more times)"]


def test_each_cell_the_kernel_runs_writes_one_heartbeat(tmp_path):
    _, output = run(tmp_path, '''
        assert not evidence.beat_each_cell()  # no IPython shell yet: nothing to count
        shell = InteractiveShell.instance()
        assert evidence.beat_each_cell()
        run_cells(["#ok\\nx = 1", "#ok\\n%time y = 2", "1/0", "#ok\\n# a comment only",
                   "#ok\\nimport sys; sys._getframe()"])
        shell.run_cell("x = 3", silent=True)  # the grader's silent requests are no cells
        shell.run_cell("   ")                 # nor is a blank one (the grader never sends it)
        print("done")
    ''')
    path = tmp_path / "evidence.txt"
    assert "done" in output and evidence.heartbeats(path) == 5
    frames = f"{LABELS['frame:sys._getframe']} (once)"
    assert read_evidence(path, cells=5) == read_evidence(path) == [frames]
    assert read_evidence(path, cells=7) == [
        frames, f"{evidence.SILENT_FLAG}: no heartbeat for 2 of the 7 cells the student's kernel ran"]


@pytest.mark.parametrize("silence,recorded", [
    ("get_ipython().events.callbacks['pre_run_cell'].clear()", True),  # the hook still records
    ("import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), channel)", False),
    ("import os\nos.close(channel)", False),
])
def test_a_channel_silenced_from_a_cell_misses_the_later_heartbeats(tmp_path, silence, recorded):
    _, output = run(tmp_path, f'''
        shell = InteractiveShell.instance()
        shell.user_ns["channel"] = channel
        assert evidence.beat_each_cell()
        run_cells(["#ok\\nx = 1", {silence!r}, "#ok\\nimport gc; gc.get_objects()", "#ok\\ny = 2"])
        print("done")
    ''')
    path = tmp_path / "evidence.txt"
    assert "done" in output and evidence.heartbeats(path) == 2
    assert read_evidence(path, cells=4) == [f"{LABELS['gc.get_objects']} (once)"] * recorded + [
        f"{evidence.SILENT_FLAG}: no heartbeat for 2 of the 4 cells the student's kernel ran"]


def test_forged_and_truncated_evidence_is_named(tmp_path):
    path = tmp_path / "evidence.txt"
    path.write_bytes(b"gc.get_objects\nI am innocent\n\n" + evidence.TRUNCATED.encode() + b"\n")
    assert read_evidence(path) == read_evidence(path, cells=3) == [  # cut short: heartbeats not counted
        f"{LABELS['gc.get_objects']} (once)",
        "lines on the evidence channel that the audit hook does not write (once): the kernel's code wrote to it",
        "the kernel wrote more to the evidence channel than is kept: the rest was dropped",
    ]
    # The launcher's mark of a channel closed while the kernel ran (grading/sandbox.py).
    path.write_bytes(b"cell\ncell\n" + evidence.CLOSED.encode() + b"\n")
    assert read_evidence(path, cells=2) == [evidence.CLOSED_FLAG]
    assert read_evidence(tmp_path / "absent.txt") == read_evidence(tmp_path / "absent.txt", cells=0) == []


def test_no_evidence_file_after_cells_ran_is_flagged_not_clean(tmp_path):
    # The launcher makes the file before the kernel starts: gone after cells ran, it was removed.
    assert read_evidence(tmp_path / "absent.txt", cells=3) == [
        f"{evidence.SILENT_FLAG}: no evidence file for the 3 cells the student's kernel ran"]


def test_install_without_a_channel_warns_and_does_nothing():
    proc = subprocess.run([sys.executable, "-c", "from perfcourse.kernel import evidence; print(evidence.install())"],
                          env={k: v for k, v in os.environ.items() if k != evidence.ENV_FD},
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False"
    assert "perfcourse evidence: WARNING: PERFCOURSE_EVIDENCE_FD is not set" in proc.stderr


def test_the_grade_table_and_grades_csv_name_the_flags_without_changing_scores(tmp_path):
    import csv

    import nbformat

    from perfcourse.nbgrader_bridge import NotebookScore
    from perfcourse.grading import run
    from perfcourse.report import grade_table as report

    from perfcourse.course import CONFIG_FILES, copy_course

    copy_course(ROOT, tmp_path, CONFIG_FILES)  # nbgrader's layout and settings, nothing else
    folder = tmp_path / "autograded" / "alice" / "performance-01"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata[evidence.EVIDENCE_KEY] = [f"{LABELS['gc.get_objects']} (once)", "odd\x1b[31m text"]
    nbformat.write(nb, folder / "performance-01.ipynb")
    flags = run.flags(tmp_path, "alice", "performance-01")
    assert flags == [f"{LABELS['gc.get_objects']} (once)", "odd\\x1b[31m text"]  # printable, one line
    assert run.flags(tmp_path, "bob", "performance-01") == []

    score = NotebookScore("alice", "performance-01", 8.0, 8.0, {})
    exported = {"raw_score": "8.0", "late_submission_penalty": "0.0", "score": "8.0", "max_score": "8.0"}
    outcomes = [run.Outcome("alice", "performance-01", 1.0, score=score, flags=flags, export=exported),
                run.Outcome("bob", "performance-01", 1.0, score=score, export=exported)]
    table = report.table(outcomes).splitlines()
    assert table[0].split() == ["student", "lesson", "score", "penalty", "seconds", "notes", "flags"]
    assert table[2].split()[:6] == ["alice", "performance-01", "8/8", "-", "1.0", "-"]
    assert table[2].endswith("  " + "; ".join(flags)) and table[3].split()[-2:] == ["-", "-"]
    report.write_csv(tmp_path / "grades.csv", outcomes)
    with open(tmp_path / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["flags"] == "; ".join(flags) and rows[0]["score"] == "8.0"
    assert rows[1]["flags"] == ""


def test_code_that_names_the_grading_package_is_flagged_from_the_submission_itself():
    import nbformat

    from perfcourse.grading.code_scan import grader_named

    def cell(source, **nbgrader):
        made = nbformat.v4.new_code_cell(source)
        if nbgrader:
            made.metadata["nbgrader"] = {"grade_id": "c", "schema_version": 3, **nbgrader}
        return made

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        cell('IN_COLAB = "google.colab" in sys.modules\ndisplay({"application/vnd.perfcourse.artifact+json": {}})'),
        cell("from perfcourse.checks import timing\ntiming.check_synchronized(timer)", grade=True, points=3),
        cell("def timer(fn):\n    return 1.0", solution=True),
        cell("%time x = 1\nimport perfcourse.kernel.probes.stages as s\ns.read_matmul = None", solution=True),
        cell("probes = __import__('perfcourse.kernel.probes')"),
        cell("import sys\nsys.modules['perfcourse.kernel.probes.audit'].count_traces = None"),
        cell("this is not python ("),
        cell("m = __import__('perf' + 'course.kernel')"),
        cell("m = __import__(f'{\"perf\"}course')"),
        cell("m = __import__('.'.join(['perfcourse', 'kernel', 'probes']))"),
        cell("name = 'perf'\nm = __import__(name + 'course')"),  # computed at run time: not seen
    ]
    assert grader_named(nb) == ["code names the grading package 'perfcourse' (cell 4, 5, 6, 8, 9, 10)"]
    nb.cells = nb.cells[:3]
    assert grader_named(nb) == []  # the lesson's own cells and the grade cells name it without a flag
    # Code nested beyond the parser, or joined from more pieces than are folded, costs nothing more.
    nb.cells += [cell("x = " + "+".join(["'a'"] * 20000)),
                 cell("x = " + "+".join(["'a'"] * 100 + ["'perf'", "'course'"]))]
    assert grader_named(nb) == []


def test_jax_found_on_pythonpath_counts_as_installed(monkeypatch, tmp_path):
    """The lent TPU machine puts JAX on PYTHONPATH (/opt/...), outside every site-packages folder: JAX's
    own package folders, as the kernel found them at start-up, are the installed environment's (else its
    Pallas read as a student's copy there and every honest performance-12 notebook was flagged), while a
    JAX in the working folder is not."""
    import sys
    import types

    from perfcourse.kernel.evidence import installed_roots

    started = installed_roots()  # found once, as at the kernel's start-up
    elsewhere = types.ModuleType("jax")
    elsewhere.__file__ = "/opt/machine-jax/jax/__init__.py"
    monkeypatch.setitem(sys.modules, "jax", elsewhere)
    assert installed_roots() is started  # a jax.__file__ changed afterwards (by a cell) changes nothing
    monkeypatch.setattr(evidence, "_roots", None)
    assert "/opt/machine-jax/jax/" in installed_roots()
    monkeypatch.setattr(evidence, "_roots", None)
    monkeypatch.chdir(tmp_path)
    elsewhere.__file__ = str(tmp_path / "jax" / "__init__.py")
    assert not any(root.startswith(str(tmp_path)) for root in installed_roots())
