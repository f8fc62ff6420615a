"""The grading sandbox's launcher, with real bubblewrap and real cgroups: small programs as kernels."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT

from perfcourse.grading import cgroups, evidence_pipe, sandbox
from perfcourse.grading.fork_server import ForkServer
from perfcourse.kernel import evidence
from perfcourse.kernel.evidence import read_evidence

pytestmark = pytest.mark.skipif(sandbox.bubblewrap() is None, reason="bubblewrap is needed")
ROOTED = pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and the switch to nobody need root")
MiB = 1 << 20


class Kernel:
    """One launch of the sandbox around a Python program given as source."""

    def __init__(self, base: Path, program: str, mode="bwrap", limits=None, binds=(), evidence=False,
                 files=None, role=None, channel=None, fork=None):
        base.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.runtime = base / "runtime"
        self.runtime.mkdir(mode=0o700)
        self.source = base / "submission"
        self.source.mkdir()
        (self.source / "prog.py").write_text(textwrap.dedent(program))
        for name, text in (files or {}).items():
            (self.source / name).write_text(text)
        self.evidence = base / "evidence.txt" if evidence else None
        settings = {"mode": mode, "runtime": str(self.runtime), "scratch_source": str(self.source),
                    "binds": [str(b) for b in binds],
                    "limits": {"cpu_seconds": 60, "file_bytes": 64 * MiB, "open_files": 256, "pids": 128,
                               "memory_bytes": 512 * MiB, "disk_bytes": 16 * MiB, **(limits or {})}}
        if role:
            settings["role"] = role
        if channel:
            settings["channel"] = str(channel)
        if self.evidence:
            settings["evidence"] = str(self.evidence)
        if fork:
            settings["fork"] = fork
        self.env = {**os.environ, sandbox.ENV_SETTINGS: json.dumps(settings), "GRADER_SECRET": "s3cret"}
        self.command = [sys.executable, "-m", "perfcourse.grading.sandbox", sys.executable, "prog.py"]

    def run(self, timeout=60) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.command, env=self.env, cwd=self.base, capture_output=True, text=True,
                              timeout=timeout)
        self.log = (self.runtime / "kernel.log").read_text() if (self.runtime / "kernel.log").exists() else ""
        return proc

    def start(self) -> subprocess.Popen:
        return subprocess.Popen(self.command, env=self.env, cwd=self.base, stderr=subprocess.PIPE)

    def report(self) -> dict:
        """The program's last line of output, a JSON object."""
        return json.loads(self.log.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fork_server():
    """A warm process kernels are forked from, started as a grading worker starts one, with the
    environment the launcher computes here (grading/fork_server.py); it imports nothing heavy."""
    env = sandbox.kernel_environment(os.environ, sandbox.HOME, "student", sandbox.kernel_user())
    server = ForkServer(None, [sys.executable, "-m", "ipykernel_launcher"], env, modules=("json",))
    wait_for(server.socket.exists)
    yield str(server.socket)
    server.stop()


# Every test of a kernel runs twice: the kernel exec'd inside bubblewrap, and forked into it from a
# fork server. A forked kernel must meet every bound an exec'd one meets.
@pytest.fixture(params=["exec", "fork"])
def kernel(tmp_path, request):
    made = []
    fork = request.getfixturevalue("fork_server") if request.param == "fork" else None

    def make(program, **options):
        made.append(Kernel(tmp_path / f"k{len(made)}", program, fork=fork, **options))
        return made[-1]

    yield make
    for k in made:
        cgroups.cleanup(k.runtime)
        assert cgroups.of(k.runtime) == []
        log = (k.runtime / "kernel.log").read_text() if (k.runtime / "kernel.log").exists() else ""
        assert "kernel started by exec" not in log  # a fork that fell back would test the exec path twice


def test_the_kernel_sees_only_the_system_python_and_its_own_folders(kernel, tmp_path):
    course = tmp_path / "course"
    (course / "autograded" / "bob").mkdir(parents=True)
    (course / "autograded" / "bob" / "answer.txt").write_text("bob's work")
    k = kernel(f"""
        import json, os, socket
        found = {{}}
        found["ids"] = [os.getresuid(), os.getresgid(), os.getgroups()]
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        found["caps"] = int(status["CapEff"], 16), int(status["CapPrm"], 16), status["NoNewPrivs"].strip()
        found["course"] = os.path.exists({str(course)!r})
        found["around"] = [sorted(os.listdir({str(tmp_path)!r})), sorted(os.listdir({str(tmp_path / "k0")!r}))]
        found["source"] = os.path.exists({str(ROOT / "source")!r}) or os.path.exists({str(ROOT / "autograded")!r})
        found["top"] = sorted(os.listdir("/"))
        found["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        try:
            open("/etc/shadow").read()
            found["shadow"] = "read"
        except OSError as exc:
            found["shadow"] = exc.errno
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=2)
            found["network"] = "connected"
        except OSError:
            found["network"] = [name for _, name in socket.if_nameindex()]
        found["env"] = sorted(os.environ)
        print(json.dumps(found))
    """)
    assert k.run().returncode == 0, k.log
    found = k.report()
    assert found["ids"] == [[65534] * 3, [65534] * 3, []]
    assert found["caps"] == [0, 0, "1"]
    assert found["course"] is False and found["source"] is False
    assert found["around"] == [["k0"], ["runtime"]]  # only the runtime: not the submission, not the course
    # The system's folders, and the top folders of what is bound in: the checkout, the venv, the test's tmp.
    bound = {Path(p).resolve().parts[1] for p in (ROOT, sys.prefix, tmp_path)}
    assert set(found["top"]) <= {"bin", "dev", "etc", "home", "lib", "lib64", "proc", "root", "sbin", "tmp",
                                 "usr"} | bound
    assert len(found["processes"]) <= 3  # bubblewrap's init, the kernel, and this listing's own view
    assert found["shadow"] == 13 and found["network"] == ["lo"]
    assert "GRADER_SECRET" not in found["env"] and sandbox.ENV_SETTINGS not in found["env"]


@pytest.mark.slow
def test_a_student_kernel_gets_only_the_code_it_runs_of_the_course_package(kernel):
    """The checks' reference answers (and the grader) are not there for a submission to import."""
    program = """
        import importlib, json, os
        import perfcourse
        found = {}
        for name in ("perfcourse.kernel.agent", "perfcourse.kernel.probes.profiling", "perfcourse.channel.codec",
                     "perfcourse.checks.profiling", "perfcourse.checks.sharding", "perfcourse.grading.run",
                     "perfcourse.course"):
            try:
                importlib.import_module(name)
                found[name] = True
            except ImportError:
                found[name] = False
        found["listed"] = sorted(os.listdir(os.path.dirname(perfcourse.__file__)))
        print(json.dumps(found))
    """
    student, trusted = kernel(program), kernel(program, role="trusted")
    assert student.run().returncode == 0, student.log
    assert trusted.run().returncode == 0, trusted.log
    found = student.report()
    assert found.pop("listed") == sorted(sandbox.STUDENT_VISIBLE)
    assert found == {"perfcourse.kernel.agent": True, "perfcourse.kernel.probes.profiling": True,
                     "perfcourse.channel.codec": True, "perfcourse.checks.profiling": False,
                     "perfcourse.checks.sharding": False, "perfcourse.grading.run": False,
                     "perfcourse.course": False}
    assert all(value for key, value in trusted.report().items() if key != "listed")


def test_writes_land_only_in_scratch_home_and_runtime(kernel, tmp_path):
    channel = tmp_path / "channel"
    channel.mkdir(mode=0o755)  # a bind keeps the grader's ownership: the kernel reads, never writes
    places = ["/", "/usr", "/etc", "/root", "/tmp", str(ROOT / "src"), sys.prefix, str(Path(sys.executable).parent)]
    k = kernel(f"""
        import json, os
        results = {{}}
        for place in {places!r} + [os.getcwd(), os.environ["HOME"], {str(tmp_path / "k0" / "runtime")!r},
                                    {str(channel)!r}]:
            try:
                with open(os.path.join(place, "written.txt"), "w") as handle:
                    handle.write("mine")
                results[place] = "written"
            except OSError as exc:
                results[place] = exc.errno
        print(json.dumps(results))
    """, binds=[channel])
    assert k.run().returncode == 0, k.log
    results = k.report()
    for place in places:
        assert results[place] in (13, 30, 2), f"{place}: {results[place]}"  # EACCES, EROFS, ENOENT
    assert results.pop(str(channel)) == 13 and not (channel / "written.txt").exists()
    assert {results[p] for p in results if p not in places} == {"written"}
    written = tmp_path / "k0" / "runtime" / "written.txt"
    assert written.read_text() == "mine" and written.stat().st_uid == 65534  # and root reads it
    assert sorted(p.name for p in k.source.iterdir()) == ["prog.py"]  # the scratch copy died with it
    for place in places:
        assert not Path(place, "written.txt").exists()


@ROOTED
@ROOTED
@pytest.mark.e2e
def test_the_channel_socket_is_handed_over_and_the_runtime_sealed_once_the_kernel_is_up(kernel, tmp_path):
    folder = tmp_path / "channel"
    folder.mkdir(mode=0o755)
    k = kernel(f"""
        import json, os, socket, time
        RUNTIME = {str(tmp_path / "k0" / "runtime")!r}
        listener = socket.socket(fileno=int(os.environ["PERFCOURSE_CHANNEL_FD"]))
        found = {{"listening": listener.getsockname()}}
        time.sleep(2)  # meanwhile the grader seals the runtime folder
        for name in ("late.txt",):
            try:
                open(os.path.join(RUNTIME, name), "w").close()
                found[name] = "written"
            except OSError as exc:
                found[name] = exc.errno
        try:
            os.unlink(found["listening"])
            found["unlink"] = "done"
        except OSError as exc:
            found["unlink"] = exc.errno
        print(json.dumps(found))
    """, binds=[folder], channel=folder / "student.sock")
    process = k.start()
    wait_for(lambda: (folder / "student.sock").exists())
    sandbox.seal(k.runtime)
    assert process.wait(30) == 0
    k.log = (k.runtime / "kernel.log").read_text()
    found = k.report()
    assert found == {"listening": str(folder / "student.sock"), "late.txt": 13, "unlink": 13}
    assert (folder / "student.sock").stat().st_uid == 0


@pytest.mark.slow
def test_memory_bound_kills_a_big_allocation_but_not_many_threads(kernel):
    big = kernel("""
        data = bytearray(300 << 20)
        for i in range(0, len(data), 4096):
            data[i] = 1
        print("allocated")
    """, limits={"memory_bytes": 200 * MiB})
    proc = big.run()
    assert proc.returncode == 128 + signal.SIGKILL and "allocated" not in big.log
    threads = kernel("""
        import threading, time
        def work():
            block = bytearray(1 << 20)
            block[::4096] = b"x" * len(block[::4096])
            time.sleep(0.5)
        pool = [threading.Thread(target=work) for _ in range(64)]
        for t in pool: t.start()
        for t in pool: t.join()
        print('{"threads": 64}')
    """, limits={"memory_bytes": 200 * MiB, "pids": 128})
    assert threads.run().returncode == 0, threads.log
    assert threads.report() == {"threads": 64}


@ROOTED
def test_a_fork_bomb_stops_at_the_process_bound(kernel):
    k = kernel("""
        import json, os, time
        children = 0
        try:
            while children < 1000:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                children += 1
        except OSError as exc:
            print(json.dumps({"children": children, "errno": exc.errno}))
    """, limits={"pids": 24})
    started = time.monotonic()
    assert k.run().returncode == 0, k.log
    found = k.report()
    assert found["errno"] == 11 and 10 < found["children"] < 24
    assert time.monotonic() - started < 20  # the children died with the sandbox, not after their sleep


def test_writing_past_the_disk_bound_fails_and_nothing_lands_outside(kernel):
    k = kernel("""
        import json, os
        results = {}
        for place in (".", os.environ["HOME"], os.environ["TMPDIR"]):
            try:
                with open(os.path.join(place, "big.bin"), "wb") as handle:
                    for _ in range(32):
                        handle.write(b"x" * (1 << 20))
                results[place] = "written"
            except OSError as exc:
                results[place] = exc.errno
        print(json.dumps(results))
    """, limits={"disk_bytes": 16 * MiB})
    assert k.run().returncode == 0, k.log
    assert set(k.report().values()) == {28}  # ENOSPC
    assert sorted(p.name for p in k.runtime.iterdir()) == ["kernel.log"]
    assert sorted(p.name for p in k.source.iterdir()) == ["prog.py"]


def test_home_and_caches_are_not_the_scratch_folder(kernel):
    k = kernel("""
        import io, json, os, tempfile
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3])
        plt.savefig(io.BytesIO(), format="png")
        tempfile.NamedTemporaryFile(delete=False).write(b"t")
        import sys
        import helper  # the student's own module: compiled in memory, no __pycache__ beside it
        names = ("HOME", "TMPDIR", "MPLCONFIGDIR", "XDG_CACHE_HOME", "IPYTHONDIR")
        print(json.dumps({"cwd": os.getcwd(), "listing": sorted(os.listdir(".")),
                          "places": {n: os.environ[n] for n in names},
                          "pycache_prefix": sys.pycache_prefix, "json_cached": json.__cached__}))
    """, files={"helper.py": "VALUE = 1\n", "data.csv": "a\n"})
    assert k.run().returncode == 0, k.log
    found = k.report()
    assert found["cwd"] == sandbox.WORKDIR
    assert found["listing"] == ["data.csv", "helper.py", "prog.py"]
    for name, place in found["places"].items():
        assert not (place + "/").startswith(found["cwd"] + "/"), name
    # Libraries' byte-code is read from beside their sources: a cache prefix would compile jax,
    # numpy and IPython from source at every kernel start.
    assert found["pycache_prefix"] is None
    assert "/__pycache__/" in found["json_cached"]


@ROOTED
def test_cleanup_kills_what_is_left_and_removes_the_cgroups(kernel):
    k = kernel("""
        import os, time
        open(os.path.join(os.environ["HOME"], "x"), "w").close()
        print("started", flush=True)
        time.sleep(120)
    """)
    launcher = k.start()
    wait_for(lambda: "started" in (k.runtime / "kernel.log").read_text())
    groups = cgroups.of(k.runtime)
    assert {g.parent.name for g in groups} and all(g.name.startswith("perfcourse-") for g in groups)
    assert any((g / "cgroup.procs").read_text().split() for g in groups)
    cgroups.cleanup(k.runtime)
    assert launcher.wait(timeout=10) == -signal.SIGKILL  # bubblewrap itself was in the cgroup
    assert cgroups.of(k.runtime) == [] and not any(g.exists() for g in groups)


@ROOTED
def test_evidence_goes_through_the_pipe_to_a_file_the_kernel_cannot_reach(kernel, tmp_path):
    path = tmp_path / "k0" / "evidence.txt"
    k = kernel(f"""
        import json, os
        from perfcourse.kernel import evidence
        fd_seen = os.environ.get("PERFCOURSE_EVIDENCE_FD")
        evidence.install()
        cell = compile("import gc\\ngc.get_objects()\\n", "<ipython-input-1-0123abcd>", "exec")
        exec(cell, {{}})
        print(json.dumps({{"fd": fd_seen, "after": os.environ.get("PERFCOURSE_EVIDENCE_FD"),
                          "visible": os.path.exists({str(path)!r})}}))
    """, evidence=True)
    assert k.evidence == path
    assert k.run().returncode == 0, k.log
    assert k.report() == {"fd": k.report()["fd"], "after": None, "visible": False} and k.report()["fd"]
    assert read_evidence(path) == ["walked every object (gc.get_objects) (once)"]
    assert path.stat().st_uid == 0 and (path.stat().st_mode & 0o777) == 0o600


SILENCE = {
    # As a hostile student would: the pipe's number from /proc/self/fd, then /dev/null over it.
    "dup2": """
        for name in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{name}")
            except OSError:  # the listing's own descriptor, gone already
                continue
            if target.startswith("pipe:"):
                os.dup2(os.open("/dev/null", os.O_WRONLY), int(name))
    """,
    "close": "os.close(fd)",
}


@pytest.mark.slow
@ROOTED
@pytest.mark.parametrize("how,mode", [(how, "bwrap") for how in sorted(SILENCE)] + [("dup2", "none")])
def test_an_evidence_channel_closed_while_the_kernel_runs_is_flagged(kernel, how, mode):
    k = kernel(f"""
        import gc, os, time
        from perfcourse.kernel import evidence
        fd = int(os.environ["PERFCOURSE_EVIDENCE_FD"])
        evidence.install()
        cell = compile("import gc\\ngc.get_objects()\\n", "<ipython-input-1-0123abcd>", "exec")
        exec(cell, {{}})
        {textwrap.indent(textwrap.dedent(SILENCE[how]), " " * 8).strip()}
        exec(cell, {{}})  # recorded nowhere
        print("silenced", flush=True)
        time.sleep({evidence_pipe.CLOSE_GRACE + 1})
    """, evidence=True, mode=mode)
    started = time.monotonic()
    assert k.run().returncode == 0, k.log
    assert "silenced" in k.log and time.monotonic() - started < evidence_pipe.CLOSE_GRACE + 30
    assert read_evidence(k.evidence) == ["walked every object (gc.get_objects) (once)", evidence.CLOSED_FLAG]


@pytest.mark.slow
@ROOTED
def test_a_second_descriptor_on_the_evidence_pipe_is_seen_from_outside(kernel):
    """The kernel keeps the real pipe under another number, puts a pipe of its own in its place and
    writes heartbeats of its choosing to the real one: the launcher reads the sandbox's descriptors
    from outside and marks it, while children that inherit the pipe under its number are no mark."""
    k = kernel("""
        import os, subprocess, time
        from perfcourse.kernel import evidence
        fd = int(os.environ["PERFCOURSE_EVIDENCE_FD"])
        evidence.install()
        subprocess.run(["true"], check=True)  # a child holds the pipe under its number until it execs
        pid = os.fork()
        if pid == 0:
            time.sleep(0.6)
            os._exit(0)
        os.waitpid(pid, 0)
        real = os.dup(fd)
        mine, own = os.pipe()
        os.dup2(own, fd)
        exec(compile("import gc\\ngc.get_objects()\\n", "<ipython-input-1-0123abcd>", "exec"), {})  # lost
        os.write(real, b"cell\\n")
        time.sleep(1)
        print("swapped", flush=True)
    """, evidence=True)
    assert k.run().returncode == 0, k.log
    assert "swapped" in k.log
    assert read_evidence(k.evidence) == [evidence.SECOND_FLAG]


ENDS = {"return": "pass", "os._exit": "os._exit(3)", "killed": "os.kill(os.getpid(), signal.SIGKILL)"}


@ROOTED
@pytest.mark.parametrize("end", sorted(ENDS))
def test_a_kernel_that_ends_closes_its_channel_without_a_flag(kernel, end):
    k = kernel(f"""
        import os, signal
        from perfcourse.kernel import evidence
        evidence.install()
        exec(compile("import sys\\nsys._getframe()\\n", "<ipython-input-1-0123abcd>", "exec"), {{}})
        {ENDS[end]}
    """, evidence=True)
    started = time.monotonic()
    k.run()
    assert time.monotonic() - started < evidence_pipe.CLOSE_GRACE  # no wait when the kernel is gone
    assert read_evidence(k.evidence) == ["took an interpreter frame (sys._getframe) (once)"]


@ROOTED
def test_what_a_kernel_leaves_running_ends_with_it(kernel):
    """A child that outlives its kernel (in a session of its own, holding the evidence pipe) dies
    when the kernel ends, and the launcher returns at once with the kernel's status."""
    k = kernel("""
        import os, time
        from perfcourse.kernel import evidence
        evidence.install()
        if os.fork() == 0:
            os.setsid()
            while True:
                with open(os.path.join(os.environ["HOME"], "alive"), "a") as handle:
                    handle.write(".")
                time.sleep(0.1)
        time.sleep(0.5)
        print("leaving", flush=True)
        os._exit(4)
    """, evidence=True)
    started = time.monotonic()
    assert k.run(timeout=30).returncode == 4, k.log
    assert "leaving" in k.log and time.monotonic() - started < evidence_pipe.CLOSE_GRACE + 10
    assert evidence.CLOSED_FLAG not in read_evidence(k.evidence)
    groups = cgroups.of(k.runtime)
    wait_for(lambda: not any((g / "cgroup.procs").read_text().split() for g in groups))


@ROOTED
def test_a_kernel_that_makes_its_parent_its_tracer_ends_as_it_would(kernel):
    """PTRACE_TRACEME and a stop: the process above the kernel sees a stopped child, not an end.
    The launcher neither stops nor crashes; a forked kernel's watcher lets it go on untraced."""
    k = kernel("""
        import ctypes, os, signal, time
        traced = ctypes.CDLL(None, use_errno=True).ptrace(0, 0, None, None)  # PTRACE_TRACEME
        me = os.getpid()
        if os.fork() == 0:
            time.sleep(1)
            os.kill(me, signal.SIGCONT)
            os._exit(0)
        os.kill(me, signal.SIGSTOP)
        print("resumed", traced, flush=True)
    """, evidence=True)
    proc = k.run(timeout=30)
    assert "Traceback" not in k.log + proc.stderr
    # bubblewrap's init takes the stop for an end (255); a forked kernel's watcher detaches.
    forked = "fork" in json.loads(k.env[sandbox.ENV_SETTINGS])
    assert (proc.returncode, "resumed 0" in k.log) == ((0, True) if forked else (255, False)), k.log


@ROOTED
@pytest.mark.parametrize("evidence", [True, False], ids=["launcher-as-parent", "launcher-is-bubblewrap"])
def test_killing_the_launcher_ends_the_sandbox(kernel, evidence):
    k = kernel("""
        import time
        print("started", flush=True)
        time.sleep(120)
    """, evidence=evidence)
    launcher = k.start()
    wait_for(lambda: "started" in (k.runtime / "kernel.log").read_text())
    groups = cgroups.of(k.runtime)
    launcher.kill()
    launcher.wait(timeout=10)
    wait_for(lambda: not any((g / "cgroup.procs").read_text().split() for g in groups))


@ROOTED
@pytest.mark.e2e
def test_a_jupyter_kernel_answers_over_ipc_sockets_in_the_runtime(kernel):
    from jupyter_client import KernelManager

    k = kernel("")
    settings = json.loads(k.env[sandbox.ENV_SETTINGS])
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(k.runtime / "ipc"),
                       connection_file=str(k.runtime / "connection.json"))
    km.kernel_spec.argv = [sys.executable, "-m", "perfcourse.grading.sandbox", sys.executable, "-m",
                           "ipykernel_launcher", "-f", "{connection_file}"]
    km.kernel_spec.interrupt_mode = "message"
    km.start_kernel(env={**os.environ, sandbox.ENV_SETTINGS: json.dumps(settings)})
    try:
        client = km.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        printed = []

        def output(msg):
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])

        reply = client.execute_interactive("import os; print(os.getuid(), os.getcwd())", timeout=30,
                                           output_hook=output)
        assert reply["content"]["status"] == "ok"
        assert "".join(printed).split() == ["65534", sandbox.WORKDIR]
    finally:
        km.shutdown_kernel(now=True)


def test_bad_settings_are_refused_in_one_line_before_anything_is_made(tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    bad = {"mode": "bwrap", "runtime": str(runtime), "evidence": str(runtime / "evidence.txt")}
    proc = subprocess.run([sys.executable, "-m", "perfcourse.grading.sandbox", "true"], capture_output=True,
                          text=True, env={**os.environ, sandbox.ENV_SETTINGS: json.dumps(bad)})
    assert proc.returncode == 2
    assert proc.stderr == (f"perfcourse sandbox: bad settings: evidence: {runtime / 'evidence.txt'} is inside "
                           f"{runtime}, which the kernel can reach\n")
    assert list(runtime.iterdir()) == [] and cgroups.of(runtime) == []


def test_a_scratch_source_holding_a_link_is_refused(kernel):
    k = kernel("print('ran')")
    (k.source / "link").symlink_to("/etc/passwd")
    proc = k.run()
    assert proc.returncode == 2 and "ran" not in k.log and list(k.runtime.iterdir()) == []
    assert cgroups.of(k.runtime) == []
    assert proc.stderr.endswith("perfcourse sandbox: refused: link is a symbolic link: a submission may hold "
                                "only regular files and folders\n")


def test_unsandboxed_mode_still_uses_a_scratch_folder_under_the_runtime(kernel):
    k = kernel("""
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "home": os.environ["HOME"], "listing": sorted(os.listdir("."))}))
    """, mode="none")
    assert k.run().returncode == 0, k.log
    assert k.report() == {"cwd": str(k.runtime / "work"), "home": str(k.runtime / "home"), "listing": ["prog.py"]}


@ROOTED
def test_every_bound_holds_on_this_machine():
    assert sandbox.bounds_available() == []


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON.exists() or not shutil.which("setpriv"),
                    reason="needs root to become another user, and a Python that user can run")
@pytest.mark.parametrize("fork", [False, True], ids=["exec", "fork"])
def test_a_grader_that_is_not_root_runs_kernels_as_itself_and_says_what_is_unbounded(fork):
    """The launcher run by an ordinary user (nobody, with the system's Python): bubblewrap in a
    user namespace, no nested namespaces, and one loud line for each bound it cannot set; a
    kernel forked from that user's fork server joins the sandbox's user namespace and keeps no
    capability in it."""
    base = Path(tempfile.mkdtemp(prefix="perfcourse-grader-"))  # pytest's own folders are closed to others
    try:
        _run_as_an_ordinary_grader(base, fork)
    finally:
        shutil.rmtree(base)


AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _run_as_an_ordinary_grader(base: Path, fork: bool):
    (base / "runtime").mkdir(parents=True)
    (base / "submission").mkdir()
    (base / "submission" / "prog.py").write_text(textwrap.dedent("""
        import json, os, subprocess
        nested = subprocess.run(["unshare", "--user", "true"], capture_output=True).returncode
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(json.dumps({"uid": os.getuid(), "cwd": os.getcwd(), "nested": nested,
                          "caps": int(status["CapEff"], 16) | int(status["CapPrm"], 16) | int(status["CapBnd"], 16),
                          "name": open("/proc/self/comm").read().strip()}))
    """))
    settings = {"mode": "bwrap", "runtime": str(base / "runtime"), "scratch_source": str(base / "submission"),
                "limits": {"memory_bytes": 200 * MiB, "pids": 64, "disk_bytes": 8 * MiB}}
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")}
    server = None
    if fork:
        (base / "fork").mkdir(mode=0o700)
        settings["fork"] = str(base / "fork" / "fork.sock")
    subprocess.run(["chown", "-R", "65534:65534", str(base)], check=True)
    if fork:
        # The fork server with the environment that user's launcher gives its kernels (computed by
        # that Python: it adds LC_CTYPE where the locale is C); run from src/, as the kernels' PYTHONPATH is not theirs.
        kernel_env = json.loads(subprocess.run(
            [*AS_NOBODY, str(SYSTEM_PYTHON), "-c", "import json, os; from perfcourse.grading import sandbox; "
             "print(json.dumps(sandbox.kernel_environment(os.environ, sandbox.HOME, 'student', None)))"],
            env=env, capture_output=True, text=True, timeout=60, check=True).stdout)
        server = subprocess.Popen([*AS_NOBODY, str(SYSTEM_PYTHON), "-m", "perfcourse.kernel.forkserver",
                                   settings["fork"], str(os.getpid()), "json"], env=kernel_env, cwd=ROOT / "src")
    try:
        if fork:
            wait_for(lambda: os.path.exists(settings["fork"]))
        proc = subprocess.run([*AS_NOBODY, str(SYSTEM_PYTHON), "-m", "perfcourse.grading.sandbox", str(SYSTEM_PYTHON),
                               "prog.py"], env={**env, sandbox.ENV_SETTINGS: json.dumps(settings)}, cwd=base,
                              capture_output=True, text=True, timeout=60)
    finally:
        if server is not None:
            server.kill()
            server.wait()
    log = (base / "runtime" / "kernel.log").read_text()
    assert proc.returncode == 0, proc.stderr + log
    assert json.loads(log.splitlines()[-1]) == {"uid": 65534, "cwd": sandbox.WORKDIR, "nested": 1, "caps": 0,
                                                "name": "student-kernel" if fork else "python3"}
    as_nobody = AS_NOBODY
    warnings = proc.stderr.splitlines()
    assert [w.split(":")[:3] for w in warnings] == [["perfcourse sandbox", " WARNING", " no memory bound"],
                                                    ["perfcourse sandbox", " WARNING", " no process bound"]]
    probe = subprocess.run([*as_nobody, str(SYSTEM_PYTHON), "-c",
                            "from perfcourse.grading import sandbox; print(*sandbox.bounds_available(), sep='\\n')"],
                           env=env, capture_output=True, text=True, timeout=60)
    found = probe.stdout.splitlines()
    assert [line.split(":")[0] for line in found] == [
        "kernels run as the grader's own user (the grader is not root", "no memory bound", "no process bound"]


# --- kernels forked from a fork server (grading/fork_server.py, kernel/forkserver.py) -------------
SELF_VIEW = """
    import json, os, resource, signal, sys
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[name] = os.readlink(f"/proc/self/fd/{name}").split(":")[0]
        except OSError:  # the listing's own descriptor
            pass
    print(json.dumps({
        "name": open("/proc/self/comm").read().strip(),
        "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0) == os.getpid(),
        "ids": [os.getresuid(), os.getresgid(), os.getgroups()],
        "caps": {key: status[key].strip() for key in ("CapEff", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs")},
        "bounding": int(status["CapBnd"], 16),
        "cgroup": open("/proc/self/cgroup").read(),
        "rlimits": [resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE")],
        "cwd": os.getcwd(), "argv": sys.argv, "path": sys.path, "main": sys.modules["__main__"].__file__,
        "env": dict(os.environ), "umask": os.umask(0o22),
        "signals": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGCHLD, signal.SIGTERM)],
        "fds": fds, "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "flags": repr(sys.flags), "orig_argv": sys.orig_argv,
        "modules": sorted(m for m in sys.modules if m.startswith("perfcourse")),
    }))
"""


def test_a_forked_kernel_starts_as_an_exec_d_one_would(fork_server, tmp_path):
    """Everything a kernel can see of itself is what an exec'd kernel sees, but its pid and name
    (and a bounding set emptied too), and nothing of the fork server is in reach."""
    channel = tmp_path / "channel"
    channel.mkdir(mode=0o755)
    settings = dict(binds=[channel], evidence=True, files={"helper.py": "X = 1\n"})
    exec_d = Kernel(tmp_path / "exec", SELF_VIEW, channel=channel / "a.sock", **settings)
    forked = Kernel(tmp_path / "fork", SELF_VIEW, channel=channel / "b.sock", fork=fork_server, **settings)
    try:
        assert exec_d.run().returncode == 0, exec_d.log
        assert forked.run().returncode == 0, forked.log
    finally:
        for k in (exec_d, forked):
            cgroups.cleanup(k.runtime)
    seen, theirs = forked.report(), exec_d.report()
    assert (seen.pop("name"), theirs.pop("name")) == ("student-kernel", "python")
    assert (seen.pop("pid"), theirs.pop("pid")) == (3, 2)  # after bubblewrap's init and the placeholder
    assert seen.pop("processes") == [1, 2, 3] and theirs.pop("processes") == [1, 2]
    assert seen.pop("bounding") == 0 and (theirs.pop("bounding") == 0 or os.geteuid() == 0)
    assert seen["ids"] == ([[65534] * 3, [65534] * 3, []] if os.geteuid() == 0 else seen["ids"])
    assert seen["caps"] == {"CapEff": "0" * 16, "CapPrm": "0" * 16, "CapInh": "0" * 16, "CapAmb": "0" * 16,
                            "NoNewPrivs": "1"}
    theirs["caps"]["CapInh"] = seen["caps"]["CapInh"]  # bubblewrap leaves the added ones inheritable, unusable
    # Its parent is the fork server's watcher, outside the sandbox's PID namespace (so 0); an
    # exec'd kernel's is bubblewrap's init. It leads a session of its own (bubblewrap's is the
    # exec'd kernel's parent's): a signal to its process group reaches only itself.
    assert (seen.pop("ppid"), theirs.pop("ppid")) == (0, 1)
    assert (seen.pop("sid"), theirs.pop("sid")) == (True, False)
    assert seen["modules"] == []  # the fork server's own module was __main__, and is no more
    assert json.loads(json.dumps(seen).replace(str(forked.base), "BASE")) == \
        json.loads(json.dumps(theirs).replace(str(exec_d.base), "BASE"))


def test_a_kernel_is_exec_d_when_the_fork_server_refuses_or_is_not_there(fork_server, tmp_path):
    program = "import os; print(open('/proc/self/comm').read().strip(), os.environ.get('JAX_ENABLE_X64'))"
    other = Kernel(tmp_path / "other", program, fork=fork_server)
    other.env["JAX_ENABLE_X64"] = "1"  # read by JAX at import: the fork server imported with another value
    missing = Kernel(tmp_path / "missing", program, fork=str(tmp_path / "nowhere" / "fork.sock"))
    try:
        for k in (other, missing):
            started = time.monotonic()
            assert k.run().returncode == 0, k.log
            assert time.monotonic() - started < 20
    finally:
        for k in (other, missing):
            cgroups.cleanup(k.runtime)
    assert other.log.splitlines() == [
        "perfcourse sandbox: kernel started by exec: the fork server refused (another environment (JAX_ENABLE_X64))",
        "python 1"]
    assert missing.log.splitlines()[0].startswith("perfcourse sandbox: kernel started by exec: no fork server")
    assert missing.log.splitlines()[1:] == ["python None"]


@ROOTED
def test_only_the_grader_reaches_the_fork_server(fork_server):
    as_nobody = subprocess.run(
        [sys.executable, "-c", "import os, socket, sys; os.setgid(65534); os.setuid(65534); "
         "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1])", fork_server],
        capture_output=True, text=True, timeout=30)
    assert as_nobody.returncode != 0 and "PermissionError" in as_nobody.stderr
    assert Path(fork_server).stat().st_mode & 0o777 == 0o600
    assert Path(fork_server).parent.stat().st_mode & 0o777 == 0o700


def test_a_worker_keeps_one_fork_server_per_role_and_stops_them(monkeypatch):
    """Students' and trusted kernels never share a server (all it forks share its address layout,
    canary and hash key); one started for other settings replaces the last; none outside kept()."""
    from perfcourse.grading import fork_server

    monkeypatch.setattr(fork_server, "WARM_MODULES", ("json",))
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    env = sandbox.kernel_environment(os.environ, sandbox.HOME, "student", sandbox.kernel_user())
    assert fork_server.for_kernel("student", argv, env) is None  # a plain nbgrader autograde
    with fork_server.kept():
        student = fork_server.for_kernel("student", argv, env)
        trusted = fork_server.for_kernel("trusted", argv, {**env, "PERFCOURSE_ROLE": "trusted"})
        assert student != trusted and fork_server.for_kernel("student", argv, env) == student
        servers = dict(fork_server._servers)
        other = fork_server.for_kernel("student", argv, {**env, "JAX_ENABLE_X64": "1"})
        assert other != student and servers["student"].process.wait(10) == -signal.SIGKILL
        assert not Path(student).parent.exists()
        running = list(fork_server._servers.values())
    assert all(server.process.poll() is not None and not server.folder.exists() for server in running)


def test_a_fork_server_whose_worker_is_killed_ends_and_removes_its_folder(tmp_path):
    """A worker killed outright (SIGKILL: no `finally` runs) leaves no fork server and no folder."""
    worker = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, sys, time
        from perfcourse.grading import sandbox
        from perfcourse.grading.fork_server import ForkServer
        env = sandbox.kernel_environment(os.environ, sandbox.HOME, "student", sandbox.kernel_user())
        server = ForkServer(None, [sys.executable, "-m", "ipykernel_launcher"], env, modules=("json",))
        print(server.process.pid, server.folder, flush=True)
        time.sleep(120)
    """)], stdout=subprocess.PIPE, text=True)
    pid, folder = worker.stdout.readline().split()
    wait_for(lambda: (Path(folder) / "fork.sock").exists())
    worker.kill()
    worker.wait()

    def ended() -> bool:  # gone, or a zombie its new parent has not reaped
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    wait_for(lambda: ended() and not Path(folder).exists())
