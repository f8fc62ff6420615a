"""The scan of submitted code (grading/code_scan.py): each mechanism a forger needs is flagged, in
every spelling the scan promises; the idioms of honest lesson code are not, and no lesson's own
cells and no sample submission raise any flag."""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import nbformat
import pytest

from conftest import ROOT

from perfcourse import samples
from perfcourse.course import lessons, read_notebook, source_notebook
from perfcourse.grading import code_scan
from perfcourse.grading.code_scan import (CLOSURES, COMPUTED_IMPORT, DESCRIPTORS, DLPACK, FRAMES, GC,
                                          IMPORT_MACHINERY, MODULES, PACKAGE, REPLACES, SUBCLASSES, UNRESOLVED,
                                          UNSCANNED, scan)


def notebook(*sources, grade=()):
    nb = nbformat.v4.new_notebook()
    for number, source in enumerate(sources, 1):
        cell = nbformat.v4.new_code_cell(source)
        if number in grade:
            cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"g{number}", "points": 1,
                                         "schema_version": 3, "solution": False, "locked": True}
        nb.cells.append(cell)
    return nb


def test_the_flags_read_as_other_tools_expect():
    # Other parts of the course (the adversarial catalogue's `# reason:` lines) quote these texts.
    assert (MODULES, COMPUTED_IMPORT, CLOSURES, GC, FRAMES, DESCRIPTORS) == (
        "code iterates sys.modules", "code imports a computed name", "code reads closures", "code uses gc",
        "code takes frames", "code touches file descriptors")
    assert PACKAGE == "code names the grading package 'perfcourse'"
    assert (IMPORT_MACHINERY, SUBCLASSES, REPLACES) == (
        "code changes how modules are imported", "code walks every class", "code replaces a module's attribute")


MECHANISMS = {
    MODULES: [
        "import sys\nfor name, module in sys.modules.items():\n    pass",
        "for name in sys.modules:\n    pass",
        "found = [m for m in sys.modules.values() if hasattr(m, 'count_traces')]",
        "names = list(sys.modules)",
        "loaded = sys.modules\nloaded['numpy']",
        "name = 'numpy'\nsys.modules[name]",
        "sys.modules.get(name)",
        "getattr(sys, 'mod' + 'ules').keys()",
        "from sys import modules\nmodules['numpy']",
        "import sys as s\nsorted(s.modules)",
        "__import__('sys').modules.copy()",
        # Through names bound by assignment (issue 51: `m = sys` beat the scan), and getters of every kind.
        "m = sys\nm.modules.items()",
        "m = os.sys\nlist(m.modules)",
        "a, b = os, sys\nfor k in b.modules:\n    pass",
        "if (m := sys):\n    m.modules.values()",
        "def f(m=sys):\n    return m.modules.keys()",
        "for m in (sys,):\n    m.modules.copy()",
        "m = sys\nn = m\no = n\nlist(o.modules)",
        "globals()['m'] = sys\nm.modules.copy()",
        "import operator\noperator.attrgetter('modules')(sys).items()",
        "from operator import attrgetter\nattrgetter('sys.modules')(os).keys()",
        "object.__getattribute__(sys, 'modules').keys()",
        "sys.__getattribute__('modules').values()",
        "type(sys).__getattribute__(sys, 'modules').copy()",
        "import inspect\ninspect.getattr_static(sys, 'modules').keys()",
        "g = getattr\ng(sys, 'modules').keys()",
        "sys.__dict__.get('modules').keys()",
        "import importlib\nimportlib.import_module('sys').modules.keys()",
        "import inspect\ndef f(fn):\n    return inspect.getmodule(fn)",  # the module of a function a probe lends
        "from inspect import getmodule as g\ng(print)",
    ],
    UNRESOLVED: [
        "getattr(sys, name)",
        "import operator\noperator.attrgetter(name)(sys)",
        "object.__getattribute__(os, name)",
        "list(vars(sys).values())",
        "sys.__dict__.values()",
        "(lambda m: m.modules)(sys)",
        "def reach(m):\n    return m.modules\nreach(sys)",
        "holder = type('H', (), {})\nholder.m = sys",
        "[sys][0].modules",
        "box = {'m': sys}",
        # __builtins__ is the builtins module (a dict outside IPython): a computed lookup there reaches __import__.
        "vars(__builtins__)[name]",
        "__builtins__[name]",
        "getattr(__builtins__, name)",
    ],
    COMPUTED_IMPORT: [
        "import importlib\nname = 'numpy'\nimportlib.import_module(name)",
        "__import__(name)",
        "__import__('perf' + suffix)",
        "load = __import__\nload('os')",
        "from importlib import import_module as im\nim(name)",
        "import builtins\ngetattr(builtins, '__import__')(name)",
        "importlib.import_module(name=name)",
        "loader = importlib.import_module",
        "import importlib\nimportlib.import_module('.modules', package=name)",
        "__import__('x', globals(), locals(), [], 1)",
        "im = importlib.import_module\nim(name)",
        # Library calls that import what a string names (adversarial/performance-04/resolve-name-forger.py).
        "import pkgutil\npkgutil.resolve_name(name)",
        "from pkgutil import resolve_name\nresolve_name(name + ':run')",
        "import pydoc\npydoc.locate(name)",
        "from unittest import mock\nmock.patch(name, print).start()",
        "import pkgutil\nlist(map(pkgutil.resolve_name, [name]))",
        "from unittest import mock\nmock.patch.dict(name + '.__dict__', {'run': print}).start()",
        "from unittest.mock import patch\npatch.multiple(name, run=print).start()",
        "import pydoc\ndef f(fn):\n    return pydoc.safeimport(fn.__module__)",  # a lent function's module
        "from logging.config import _resolve\n_resolve(name)",
        "from importlib.metadata import EntryPoint\nEntryPoint('x', value, 'g').load()",
    ],
    IMPORT_MACHINERY: [
        "sys.meta_path.insert(0, fn)",
        "sys.path_hooks.append(fn)",
        "from sys import meta_path",
        "import json\ntype(json.__loader__)",
        "import json\njson.__spec__.loader",
        "loader.exec_module(cell)",
        "import importlib.machinery\nimportlib.machinery.PathFinder.find_spec(name)",
        "from importlib.abc import MetaPathFinder",
        "import importlib.util\nimportlib.util.module_from_spec(name)",
    ],
    REPLACES: [
        # What a probe imports when it runs (adversarial/performance-12/library-swapped-under-the-probe.py).
        "import jax.experimental\njax.experimental.pallas = fn",
        "import jax\njax.jit = fn",
        "import numpy as np\nm = np\nm.asarray = fn",
        "setattr(__builtins__, name, fn)",
        "import builtins\nbuiltins.__import__ = fn",
        "del os.environ",
    ],
    SUBCLASSES: [
        "object.__subclasses__()",
        "type.__subclasses__(object)",
        "getattr(object, '__subclasses__')()",
    ],
    CLOSURES: [
        "def outer():\n    x = 1\n    return lambda: x\nouter().__closure__",
        "cell.cell_contents",
        "getattr(fn, '__closure__', None)",
        "import inspect\ninspect.getclosurevars(fn)",
        "import types\ntypes.CellType(1)",
        "fn.__globals__['run'] = mine",
    ],
    GC: [
        "import gc",
        "import gc as collector\ncollector.collect()",
        "from gc import get_referrers",
        "__import__('gc').get_objects()",
        "import sys\nsys.modules['gc'].get_referrers(fn)",
        "import importlib\nimportlib.import_module('gc')",
        "collector = __import__('gc')\ncollector.get_referrers(fn)",
    ],
    FRAMES: [
        "import sys\nsys._getframe()",
        "import inspect\ninspect.currentframe()",
        "inspect.stack()",
        "frame.f_back",
        "frame.f_globals['x']",
        "frame.f_locals",
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
        "from sys import _getframe",
        "from inspect import *\ncurrentframe()",
        "%time sys._getframe()",
        "%timeit -n 1 -r 1 inspect.stack()",
        "%%time\nsys._getframe(1)",
        "getattr(sys, '_getframe')(0)",
        # A signal handler is handed the frame it interrupts; IPython's frame utilities and the modules
        # whose hooks are handed frames take them in a library's frame.
        "import signal\nsignal.signal(signal.SIGALRM, fn)",
        "from signal import signal\nsignal(14, fn)",
        "from IPython.utils.frame import extract_module_locals\nextract_module_locals(2)",
        "from IPython.utils import frame as frames\nframes.extract_vars('x', depth=1)",
        "import trace\ntrace.Trace().runfunc(fn)",
        "import bdb",
        "from pdb import Pdb",
        "import importlib\nimportlib.import_module('profile')",
    ],
    DESCRIPTORS: [
        "import os\nos.dup2(os.open('/dev/null', os.O_WRONLY), 3)",
        "os.dup(3)",
        "os.close(5)",
        "os.listdir('/proc/self/fd')",
        "path = f'/proc/{os.getpid()}/fd'",
        "path = '/proc/' + 'self' + '/fd'",
        "path = os.path.join('/proc', 'self', 'fd')",
        "from os import dup2",
        "import os as o\no.closerange(3, 9)",
        "!ls /proc/self/fd",
        "import posix\nposix.dup2(1, 2)",
        "os.readlink('/dev/fd/3')",
    ],
    DLPACK: [  # adversarial/performance-10/host-update-through-dlpack.py
        "import numpy as np\ndef step(p):\n    return np.from_dlpack(p)",
        "from jax.dlpack import from_dlpack\nfrom_dlpack(x)",
        "capsule = x.__dlpack__()",
    ],
}


@pytest.mark.parametrize("flag,source", [(flag, source) for flag, sources in MECHANISMS.items() for source in sources],
                         ids=lambda value: value if value in MECHANISMS else None)
def test_each_mechanism_is_flagged(flag, source):
    # A lesson's first cell, then the student's cell (cell 2).
    nb = notebook('import sys, os\nIN_COLAB = "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ',
                  "fn = frame = cell = name = suffix = None", source)
    assert f"{flag} (cell 3)" in scan(nb)


HONEST = [
    'import sys, os\nIN_COLAB = "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ',
    "import sys\nnp_module = sys.modules['numpy']\nsys.modules.get('jax')\n'jax' not in sys.modules",
    "import importlib\nimportlib.import_module('json')\n__import__('math')\nfrom importlib import import_module\n"
    "import_module('numpy.linalg')",
    "with open('notes.txt', 'w') as handle:\n    handle.write('x')\nhandle.close()",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nplt.close(fig)",
    "import inspect\ninspect.signature(print)\ninspect.getsource(inspect.signature)",
    "import traceback\ntry:\n    1/0\nexcept Exception:\n    traceback.print_exc()",
    "import jax, jax.numpy as jnp, numpy as np, functools, time\n"
    "stack = []\nstack.append(np.stack([np.ones(2)]))\njnp.stack([jnp.ones(2)])\n"
    "with jax.profiler.trace('/tmp/trace'):\n    pass\n"
    "def outer():\n    x = 1\n    def inner():\n        return x\n    return inner\nouter()()",
    "gc = 0.5\nfd = 3\nframes = [1, 2]\nframes.append(gc * fd)",
    "import os\nos.environ.get('HOME')\nos.path.join('a', 'b')\nos.getpid()\nopen('/proc/cpuinfo').read()\n"
    "os.makedirs('/tmp/x', exist_ok=True)",
    "%timeit -n 2 -r 2 sum(range(3))\n%matplotlib inline\n!pip list\nlen?",
    "%%time\nx = sum(range(10))",
    "import sys\nsys.getsizeof(1)\nsys.stdout.flush()\nprint(sys.version)",
    "import numpy as np\nxp = np\nxp.ones(3)\nimport jax\ngetattr(jax, 'shard_map', None)\nhasattr(jax, 'shard_map')\n"
    "print(jax)\nisinstance(jax, type(np))",
    "import jax\ntry:\n    shard_map = jax.shard_map\nexcept AttributeError:\n"
    "    from jax.experimental.shard_map import shard_map",
    "import time\nclock = time.perf_counter\nclock()\nfrom time import perf_counter\n"
    "def timer(fn, clock=perf_counter):\n    return clock()\ntimer(print, clock=perf_counter)",
    "import importlib, json\nimportlib.reload(json)\nimportlib.import_module('.decoder', package='json')",
    "import signal\nsignal.SIGINT\nimport pkgutil\npkgutil.resolve_name('json.decoder')\n"
    "fig.patch.set_alpha(0)\nlayout.locate(name)\nimport jax\njax.profiler.trace('/tmp/t')",
    "import os, jax\nos.environ['XLA_FLAGS'] = '--x'\njax.config.update('jax_enable_x64', True)\n"
    "class Box:\n    pass\nbox = Box()\nbox.value = 3\nsetattr(box, 'other', 4)\n"
    "real, sys.stdout = sys.stdout, io.StringIO()\nsys.stdout = real\n"
    "from unittest import mock\nwith mock.patch.object(box, 'value', 5):\n    pass",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_idioms_raise_no_flag(source):
    assert scan(notebook(source)) == []


def test_grade_cells_and_cells_that_are_not_python_are_not_read():
    nb = notebook("import gc\nsys._getframe()", "this is not python (", "x = 1", grade=(1,))
    assert scan(nb) == []


def test_each_flag_names_every_cell_it_was_found_in():
    nb = notebook("import gc", "x = 1", "gc.get_objects()\nos.dup2(1, 2)", "import gc\nos.close(3)")
    assert scan(nb) == [f"{GC} (cell 1, 3, 4)", f"{DESCRIPTORS} (cell 3, 4)"]


def test_a_cell_the_parser_gives_up_on_is_flagged_never_clean():
    # 20,000 additions exhaust the parser's recursion (a kernel whose limit a cell raised reads
    # them); 5,000 parentheses are past Python's fixed nesting limit: no kernel runs that cell.
    nb = notebook("x = " + "+".join(["'a'"] * 20000), "x = " + "(" * 5000 + "1" + ")" * 5000, "import gc")
    assert scan(nb) == [f"{UNSCANNED} (cell 1)", f"{GC} (cell 3)"]


@pytest.mark.slow
def test_a_long_attribute_chain_does_not_blind_the_scan():
    chain = ".".join(["a"] * 1500)
    nb = notebook(f"%env X={chain}\nimport gc\ngc.get_objects()", "\n".join(f"y{i} = {chain}" for i in range(40)),
                  "os.sys.modules.values()")
    # 60,000 links read to the end; what they cost is benchmarks/hostile_cells.py's to measure.
    assert scan(nb) == [f"{MODULES} (cell 3)", f"{GC} (cell 1)"]


def test_a_reading_stopped_by_the_guard_flags_that_cell_alone(monkeypatch):
    # Empty caches: every cell is parsed and walked under the guard, whatever other tests read.
    monkeypatch.setattr(code_scan, "_trees", {})
    monkeypatch.setattr(code_scan, "_flags", {})
    calls = []

    @contextlib.contextmanager
    def guard():
        calls.append(1)
        if len(calls) == 2:  # the second cell's parse
            raise code_scan.Unscannable("time")
        yield

    assert code_scan.scan_cells([(1, "import gc  # guarded"), (2, "x = 2 ** 7  # guarded"),
                                      (3, "y = 1  # guarded")], guard) == [
        f"{UNSCANNED} (cell 2)", f"{GC} (cell 1)"]


def test_the_kept_trees_are_bounded_by_their_sources_characters(monkeypatch):
    monkeypatch.setattr(code_scan, "_trees", {})
    monkeypatch.setattr(code_scan, "_flags", {})
    monkeypatch.setattr(code_scan, "CACHED_SOURCE_CHARS", 100)
    cells = [(number, f"x{number} = {number}  # {'.' * 30}") for number in range(1, 11)]
    assert code_scan.scan_cells(cells) == []
    assert code_scan.scan_cells(cells + [(11, "import gc")]) == [f"{GC} (cell 11)"]
    assert 0 < sum(map(len, code_scan._trees)) <= 100
    assert len(code_scan._flags) == 21  # small entries (the import of gc rebinds: 10 + 11), kept by number alone


def honest_samples():
    found = []
    for sample in samples.discover(ROOT):
        if sample.expected is not None or not any(verb == "file" for verb, _, _ in sample.steps):
            found.append(sample)
    return found


@pytest.mark.slow
def test_no_lesson_and_no_sample_submission_raises_a_flag():
    """Every samples/<lesson>/<case>.py built from the release notebook, and every lesson's source
    notebook: the scan finds nothing in the code of students who do the work."""
    flagged = {}
    for sample in honest_samples():
        flags = scan(samples.build(ROOT, sample))
        if flags:
            flagged[f"{sample.lesson}/{sample.case}"] = flags
    for lesson in lessons(ROOT):
        flags = scan(read_notebook(source_notebook(ROOT, lesson)))
        if flags:
            flagged[f"source/{lesson}"] = flags
    assert flagged == {}
    assert len(honest_samples()) > 50


def test_grader_named_is_the_package_flag_alone():
    nb = notebook("import perfcourse\nimport gc")
    assert code_scan.grader_named(nb) == [f"{PACKAGE} (cell 1)"]
    assert scan(nb) == [f"{PACKAGE} (cell 1)", f"{GC} (cell 1)"]


# --- the scan in its own process (bounded_scan.py) ---------------------------------------------------
@pytest.mark.slow
def test_the_bounded_scan_reads_as_the_scan_does_and_outlives_a_cell_it_cannot_read():
    from perfcourse.grading import bounded_scan

    nb = notebook("import gc", "x = " + "+".join(["'a'"] * 20000), "os.sys.modules.items()")
    assert bounded_scan.scan(code_scan.code_cells(nb)) == scan(nb) == [
        f"{UNSCANNED} (cell 2)", f"{MODULES} (cell 3)", f"{GC} (cell 1)"]
    child = bounded_scan._child
    assert bounded_scan.scan([(1, "import gc")]) == [f"{GC} (cell 1)"]
    assert bounded_scan._child is child  # one process serves a worker's notebooks


@pytest.mark.slow
def test_a_scan_past_its_time_or_a_dead_scanner_flags_the_notebook_and_the_next_is_read(monkeypatch):
    from perfcourse.grading import bounded_scan

    assert bounded_scan.scan([(1, "x = 1")]) == []
    bounded_scan._child.kill()
    bounded_scan._child.wait()
    assert bounded_scan.scan([(1, "import gc")]) == [f"{GC} (cell 1)"]  # a new process, started on demand
    monkeypatch.setattr(bounded_scan, "NOTEBOOK_SECONDS", 0.0)
    assert bounded_scan.scan([(1, "import gc")]) == [
        f"{UNSCANNED} (the whole notebook: the scan ran past 0 s)"]
    assert bounded_scan._child is None  # killed, never reused with a reply pending
    monkeypatch.undo()
    assert bounded_scan.scan([(2, "import gc")]) == [f"{GC} (cell 2)"]


def test_the_scanners_cell_timer_stops_a_cell_that_runs_long(monkeypatch):
    from perfcourse.grading import bounded_scan

    monkeypatch.setattr(bounded_scan, "CELL_SECONDS", 0.05)
    with pytest.raises(code_scan.Unscannable):
        with bounded_scan._cell_timer():
            time.sleep(1)
    with bounded_scan._cell_timer():  # a quick cell is untouched, and the timer is off after it
        pass
    time.sleep(0.1)


@pytest.mark.slow
def test_a_scanner_that_ends_before_it_replies_flags_the_notebook(monkeypatch):
    from perfcourse.grading import bounded_scan

    # A process that reads the request and exits without a word, as one killed mid-scan would.
    quitter = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    monkeypatch.setattr(bounded_scan, "_running_child", lambda: quitter)
    assert bounded_scan.scan([(1, "import gc")]) == [
        f"{UNSCANNED} (the whole notebook: the scan's process ended)"]
    quitter.wait(5)
    monkeypatch.undo()
    assert bounded_scan.scan([(1, "import gc")]) == [f"{GC} (cell 1)"]
