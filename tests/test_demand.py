"""The grading pool's size follows the machine's idle CPU (grading/demand.py), read from /proc/stat.

Accounting files written here stand in for /proc/stat and /proc/meminfo (the same format), so
each decision is exact; tests/test_grading.py grades the demo class with the pool as it grows.
"""
from perfcourse.grading import demand


def write_stat(path, cpus, idle, busy):
    """A /proc/stat whose listed cpus each have `idle` and `busy` jiffies (and one cpu not ours)."""
    lines = [f"cpu  {busy * len(cpus)} 0 0 {idle * len(cpus)} 0 0 0 0 0 0"]
    lines += [f"cpu{n} {busy} 0 0 {idle} 0 0 0 0 0 0" for n in cpus]
    lines += [f"cpu{max(cpus) + 1} 0 0 0 999999 0 0 0 0 0 0", "intr 1 2 3", "ctxt 42"]
    path.write_text("\n".join(lines) + "\n")


def pool(tmp_path, monkeypatch, fixed=None, memory_kb=64 << 20):
    monkeypatch.setattr(demand, "cores", lambda: [0, 1])
    stat, meminfo = tmp_path / "stat", tmp_path / "meminfo"
    write_stat(stat, [0, 1], idle=1000, busy=1000)
    meminfo.write_text(f"MemTotal: {memory_kb * 2} kB\nMemAvailable: {memory_kb} kB\n")
    return demand.PoolSize(fixed, 2 << 30, stat=stat, meminfo=meminfo), stat


def test_cpu_times_sum_only_this_process_cpus_and_count_iowait_as_idle(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  9 9 9 9 9 9 9 9\ncpu0 10 1 2 100 5 0 1 0 0 0\ncpu1 20 0 0 50 0 0 0 0\ncpu2 7 7 7 7 7 7 7 7\n")
    assert demand.cpu_times([0, 1], stat) == (155, 189)
    assert demand.cpu_times([0], tmp_path / "missing") is None


def test_starts_at_two_per_core_and_grows_one_worker_per_idle_window_while_work_waits(tmp_path, monkeypatch):
    size, stat = pool(tmp_path, monkeypatch)
    assert size.initial == 2 * demand.START_PER_CORE == 4 and size.most == 2 * demand.CEILING_PER_CORE == 6
    write_stat(stat, [0, 1], idle=1000 + 50, busy=1000 + 50)  # half idle
    assert size.grow(workers=4, waiting=True)
    write_stat(stat, [0, 1], idle=1050 + 5, busy=1050 + 95)  # 5% idle: the cores are busy
    assert not size.grow(workers=5, waiting=True)
    write_stat(stat, [0, 1], idle=1060 + 90, busy=1140 + 10)  # idle, but nothing waits for a worker
    assert not size.grow(workers=5, waiting=False)
    write_stat(stat, [0, 1], idle=1150 + 90, busy=1150 + 10)
    assert not size.grow(workers=size.most, waiting=True)  # at the ceiling


def test_fixed_by_workers_option_never_grows(tmp_path, monkeypatch):
    size, stat = pool(tmp_path, monkeypatch, fixed=3)
    assert size.initial == size.most == 3
    write_stat(stat, [0, 1], idle=2000, busy=1000)
    assert not size.grow(workers=3, waiting=True)


def test_memory_bounds_the_start_and_the_ceiling_but_never_below_one_worker_per_core(tmp_path, monkeypatch):
    # 7 GiB available, 2 GiB per student kernel plus 1 GiB beside it: 2 workers fit, not 4 or 6.
    size, _ = pool(tmp_path, monkeypatch, memory_kb=7 << 20)
    assert size.initial == size.most == 2
    # 10 GiB: 3 fit, fewer than two per core on 2 cores.
    size, _ = pool(tmp_path, monkeypatch, memory_kb=10 << 20)
    assert size.initial == size.most == 3
    assert demand.ceiling(4, 2 << 30, 1 << 30) == 4
    assert demand.ceiling(2, 2 << 30, None) == 2 * demand.CEILING_PER_CORE
