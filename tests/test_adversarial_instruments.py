"""The seventh hostile batch (adversarial/, against the instruments and checks of issue 50), each
mechanism proven without a kernel: the entries themselves are graded by the nightly tier."""
from __future__ import annotations

import dataclasses
import gzip
import json

import numpy as np
import pytest

from test_performance_06 import planned_run, three_report
from test_timing_checks import Q_HOLDS, Q_WORK, _queued_run

from perfcourse.checks import CheckFailed, fsdp, profiling, roofline, timing
from perfcourse.grading import code_scan


def test_a_queued_timer_that_waits_between_calls_but_the_last_two_times_latency():
    """adversarial/performance-01/queued-waits-between-calls.py: one call made while the previous
    result was pending is not a queue."""
    honest = _queued_run(Q_WORK, Q_HOLDS)
    between = dataclasses.replace(honest, ready=[True] * (len(honest.ready) - 1) + [False])
    verdict = timing.queued_problems(between)
    assert "that times latency" in verdict.problems[0] and not verdict.decided  # run again: fails every run
    stalled = dataclasses.replace(honest, ready=[*honest.ready[:2], True, *honest.ready[3:]])
    assert timing.queued_problems(stalled).problems == []  # one stall longer than a call's work: honest


def test_a_clock_started_after_the_first_queued_call_fails_on_work_slower_than_calibrated():
    """adversarial/performance-01/queued-clock-after-first-queued-call.py: on a loaded machine the work ran
    twice its calibrated length, so a clock that misses the first queued call's hold still met the bound
    that holds on any machine; the time from the first queued call to the return tells."""
    slow = dataclasses.replace(_queued_run([2 * w for w in Q_WORK], Q_HOLDS), work=list(Q_WORK))
    assert timing.queued_problems(slow) == timing.Verdict()  # the honest timer on that machine
    pause = slow.answered[1] - slow.asked[1]
    late = dataclasses.replace(slow, seconds=slow.seconds - pause / slow.asked_for)
    assert late.seconds * late.asked_for >= late.answered[-1] - late.asked[1]  # the old bound met
    verdict = timing.queued_problems(late)
    assert "clock started after the first queued call" in verdict.problems[0] and not verdict.decided


def test_a_device_time_from_the_wall_clock_misses_the_trace():
    """adversarial/performance-06/device-time-from-the-last-wait.py: the last traced call carries
    TRACED_LAST calls' work, so the wait after it (its work alone) misses the median execution."""
    plan = profiling.three_numbers_plan(np.random.default_rng(5), seconds_per_iteration=1e-6)
    calls, iterations = plan["calls"], plan["iterations"]
    assert plan["plan"][calls + 1:2 * calls] == [iterations] * (calls - 1)
    assert plan["plan"][2 * calls] == int(iterations * profiling.TRACED_LAST) and profiling.TRACED_LAST <= 0.3
    # adversarial/performance-06/device-time-latency-less-dispatch.py: the synchronous calls carry more work
    # than the traced ones, so a latency less a queued call's return (their work) is not the trace's either
    # (one of them, the fast call, runs a single loop trip: the fastest sample is no latency)
    sync = [w for k, w in enumerate(plan["plan"][1:calls + 1], start=1) if k != plan["fast_call"]]
    assert plan["plan"][plan["fast_call"]] == 1 and plan["fast_call"] != plan["slow_call"]
    assert len(set(sync)) == 1 and profiling.SYNC_WORK[0] <= sync[0] / iterations <= profiling.SYNC_WORK[1] + 1e-3
    mean = (calls - 1 + profiling.TRACED_LAST) / calls  # of the executions, in the work: taken too
    assert profiling.SYNC_WORK[0] > (1 + 2 * profiling.DEVICE_TOLERANCE) * max(1.0, mean)

    run = planned_run()
    hold, work = run["hold"], 0.04
    starts = [(k + 1) * (hold + 0.001) * 1e6 + 50.0 for k in range(run["calls"])]
    report = three_report(run, starts, work * 1e6, latency=hold + work,
                          throughput=hold + 0.001 + profiling.LAST_WORK * work / run["calls"], device=work)
    trace = json.loads(gzip.decompress(report["file"]))
    trace["traceEvents"][-1]["dur"] *= profiling.TRACED_LAST  # the last execution, as the plan makes it
    report["file"] = gzip.compress(json.dumps(trace).encode())
    assert profiling.three_numbers_problems(report, dict(run)) == ([], True)  # the trace's median
    waited = {**report, "numbers": {**report["numbers"], "device": profiling.TRACED_LAST * work + 0.001}}
    problems, decided = profiling.three_numbers_problems(waited, dict(run))
    assert decided and "device time is not" in problems[0]


def test_a_device_time_from_each_traced_calls_wait_finds_the_work_done(monkeypatch):
    """adversarial/performance-06/device-time-from-each-wait.py: each traced call is held here again once its
    program is dispatched, longer than its work, so the wait left once the call comes back is near nothing;
    the latency's and the throughput's calls are not held again (their spans are judged as before)."""
    plan = profiling.three_numbers_plan(np.random.default_rng(5), seconds_per_iteration=1e-6)
    calls, work, after = plan["calls"], plan["work"], plan["after"]
    assert len(after) == len(plan["plan"]) == 3 * calls + 1
    traced = after[calls + 1:2 * calls + 1]
    assert not any(after[:calls + 1]) and not any(after[2 * calls + 1:])
    assert all(profiling.AFTER_DISPATCH[0] * work <= a <= profiling.AFTER_DISPATCH[1] * work for a in traced)
    assert profiling.AFTER_DISPATCH[0] >= 1.0  # a traced call's work, planned, is over before it comes back
    # judged: the waits (near nothing) miss the trace, as does a traced call's span less its first hold
    run = planned_run()
    hold, work = run["hold"], 0.04
    starts = [(k + 1) * (hold + 0.001) * 1e6 + 50.0 for k in range(run["calls"])]
    honest = dict(latency=hold + work, throughput=hold + 0.001 + profiling.LAST_WORK * work / run["calls"], device=work)
    assert profiling.three_numbers_problems(three_report(run, starts, work * 1e6, **honest), dict(run)) == ([], True)
    # ... when every traced call was held after its dispatch: calls made around the probe's word decide a failure
    after = {"after": [0.0, 0.05, 0.05], "held_after": [1, 2]}
    assert profiling.three_numbers_problems(three_report(run, starts, work * 1e6, **honest), {**run, **after}) == (
        [], True)
    assert profiling.three_numbers_problems(three_report(run, starts, work * 1e6, **honest),
                                            {**run, **after, "held_after": [1]}) == (
        ["the calls did not run as the instrument dispatches them: call fn itself"], True)
    for device in (0.001, profiling.AFTER_DISPATCH[0] * work):
        problems, decided = profiling.three_numbers_problems(
            three_report(run, starts, work * 1e6, **{**honest, "device": device}), dict(run))
        assert decided and "device time is not" in problems[0]
    # held here, after the probe's word, for the call that last asked; the others return at once
    held = profiling.Calls([1, 1, 1], [0.0, 0.0, 0.0], [0.0, 0.03, 0.0])
    slept = []
    monkeypatch.setattr(profiling.time, "sleep", slept.append)  # what is held, not how long a loaded machine took
    for _ in range(3):
        held.next_call()
        held.dispatched()
    assert [pause for pause in slept if pause] == [0.03] and held._held_after == {1}


def test_a_fraction_capped_at_one_fails_the_classification():
    """adversarial/performance-07/clamped-fraction.py: a point above its (measured) roof is placed too."""
    def capped(point, peak, bandwidth):
        got = roofline.expected_classification(point, peak, bandwidth)
        return {**got, "fraction": min(1.0, got["fraction"])}

    with pytest.raises(CheckFailed, match="fraction"):
        roofline.check_classify(capped, rng=np.random.default_rng(0))
    roofline.check_classify(roofline.expected_classification, rng=np.random.default_rng(0))


def _step_text(all_reduced: str) -> str:
    """A scanned FSDP step's StableHLO as fsdp.written_collectives reads it (8 devices, width 192)."""
    return "\n".join([
        "%0:3 = stablehlo.while(%iterArg = %a) : tensor<6x24x192xf32>",
        '%1 = "stablehlo.all_gather"(%b) {all_gather_dim = 0 : i64} : (tensor<24x192xf32>) -> tensor<192x192xf32>',
        '%2 = "stablehlo.reduce_scatter"(%c) ({',
        "^bb0(%x: tensor<f32>, %y: tensor<f32>):",
        "}) {scatter_dimension = 0 : i64} : (tensor<192x192xf32>) -> tensor<24x192xf32>",
        '%3 = "stablehlo.all_reduce"(%d) ({',
        "^bb0(%x: tensor<f32>, %y: tensor<f32>):",
        f"}}) : ({all_reduced}) -> {all_reduced}",
    ])


def test_a_gradient_all_reduced_in_pieces_smaller_than_a_row_fails():
    """adversarial/performance-11/chunked-all-reduce.py: only the loss, a scalar, is all-reduced."""
    net = {"stacked": np.zeros((6, 192, 192), np.float32), "x": np.zeros((16, 192), np.float32)}
    assert fsdp.collective_problems(_step_text("tensor<f32>"), 8, net) == []
    assert "all-reduces an array of 96" in fsdp.collective_problems(_step_text("tensor<96xf32>"), 8, net)[0]
    # adversarial/performance-11/all-reduce-in-a-nested-program.py: a function of the module called from the body
    nested = _step_text("tensor<f32>") + "\n" + "\n".join([
        "func.func private @jit__lambda(%arg0: tensor<192x192xf32>) -> tensor<192x192xf32> {",
        '  %0 = "stablehlo.all_reduce"(%arg0) ({', "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):",
        "  }) : (tensor<192x192xf32>) -> tensor<192x192xf32>", "}"])
    assert "all-reduces an array of 36864" in fsdp.collective_problems(nested, 8, net)[0]


def _module(inside_scan: str = "", after_scan: str = "", functions: str = "") -> str:
    """A scanned FSDP step's module as jax.export prints it (shard_map's body in ENTRY's manual computation,
    the scanned layer a function the loop's body calls), with text put in the loop's body, after it and
    as functions of the module."""
    return "\n".join([
        "module @jit_step attributes {mhlo.num_partitions = 8 : i32} {",
        '  func.func public @main(%arg0: tensor<6x192x192xf32> '
        '{sdy.sharding = #sdy.sharding<@mesh, [{}, {"fsdp"}, {}]>} loc("stacked")) -> (tensor<f32>) {',
        "    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}, {\"fsdp\"}, {}]>] "
        "(%arg3: tensor<6x24x192xf32>) {",
        "      %2:2 = stablehlo.while(%iterArg = %arg3, %iterArg_5 = %c) : tensor<6x24x192xf32>, tensor<i32>",
        "      cond {",
        "        %15 = stablehlo.compare LT, %iterArg_5, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        "        stablehlo.return %15 : tensor<i1>",
        "      } do {",
        "        %17 = func.call @closed_call(%iterArg) : (tensor<6x24x192xf32>) -> tensor<192x192xf32> loc(#loc78)",
        inside_scan,
        "        stablehlo.return %iterArg, %20 : tensor<6x24x192xf32>, tensor<i32>",
        "      } loc(#loc70)",
        after_scan,
        '      %14 = "stablehlo.all_reduce"(%8) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>}> '
        "({",
        '      ^bb0(%arg6: tensor<f32> loc("psum_invariant:"(#loc14)), %arg7: tensor<f32>):',
        "        %15 = stablehlo.add %arg6, %arg7 : tensor<f32>",
        "        stablehlo.return %15 : tensor<f32>",
        "      }) : (tensor<f32>) -> tensor<f32> loc(#loc41)",
        "      sdy.return %14 : tensor<f32>",
        "    } : (tensor<6x192x192xf32>) -> (tensor<f32>)",
        "    return %0#0 : tensor<f32>",
        "  }",
        "  func.func private @closed_call(%arg1: tensor<24x192xf32>) -> tensor<192x192xf32> {",
        '    %0 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64}> : '
        "(tensor<24x192xf32>) -> tensor<192x192xf32>",
        '    %1 = "stablehlo.reduce_scatter"(%0) <{scatter_dimension = 0 : i64}> ({',
        "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):",
        "    }) : (tensor<192x192xf32>) -> tensor<24x192xf32>",
        "    return %0 : tensor<192x192xf32>",
        "  }",
        functions,
        "}",
    ])


_SCALAR_SUM = ('"stablehlo.all_reduce"(%e) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>}> ({\n'
               "^bb0(%a: tensor<f32>, %b: tensor<f32>):\n  %s = stablehlo.add %a, %b : tensor<f32>\n"
               "  stablehlo.return %s : tensor<f32>\n}) : (tensor<f32>) -> tensor<f32>")


def test_a_gradient_all_reduced_one_element_at_a_time_fails():
    """adversarial/performance-11/all-reduce-element-by-element.py: every all-reduce a scalar, as the loss's,
    but tens of thousands a layer: an all-reduce run inside a loop fails, and so do more per step than the
    loss and a few scalars beside it."""
    assert fsdp.all_reduce_runs(_module()) == {"in_loop": 0, "runs": 1}  # the loss's psum, after the scan
    element_loop = "\n".join(["%g:2 = stablehlo.while(%i = %c, %d = %z) : tensor<i32>, tensor<36864xf32>",
                               "cond {", "  stablehlo.return %t : tensor<i1>", "} do {", "  %e = " + _SCALAR_SUM,
                               "  stablehlo.return %i, %d : tensor<i32>, tensor<36864xf32>", "}"])
    assert fsdp.all_reduce_runs(_module(inside_scan=element_loop))["in_loop"] == 1
    net = {"stacked": np.zeros((6, 192, 192), np.float32), "x": np.zeros((16, 192), np.float32)}
    assert "inside a loop" in fsdp.collective_problems(_module(inside_scan=element_loop), 8, net)[0]
    # the loop in a function of its own, called from the scanned body through another function
    helper = "\n".join(["  func.func private @sum_each(%g: tensor<36864xf32>) -> tensor<36864xf32> {", element_loop,
                         "    return %g : tensor<36864xf32>", "  }",
                         "  func.func private @outer(%g: tensor<36864xf32>) -> tensor<36864xf32> {",
                         "    %r = call @sum_each(%g) : (tensor<36864xf32>) -> tensor<36864xf32>", "  }"])
    called = "%h = func.call @outer(%17) : (tensor<36864xf32>) -> tensor<36864xf32>"
    assert fsdp.all_reduce_runs(_module(inside_scan=called, functions=helper)) == {"in_loop": 1, "runs": 1}
    # a scalar all-reduce in a function the scanned body calls runs once a layer: in the loop too
    once = "  func.func private @one(%g: tensor<f32>) -> tensor<f32> {\n    %e = " + _SCALAR_SUM + "\n  }"
    assert fsdp.all_reduce_runs(_module(inside_scan="%h = func.call @one(%x)", functions=once))["in_loop"] == 1
    # written out, no loop: every one of them runs per step; a function called twice, twice
    unrolled = "\n".join("%e" + str(i) + " = " + _SCALAR_SUM for i in range(fsdp.LOSS_ALL_REDUCES))
    assert fsdp.all_reduce_runs(_module(after_scan=unrolled))["runs"] == fsdp.LOSS_ALL_REDUCES + 1
    assert "all-reduces per step" in fsdp.collective_problems(_module(after_scan=unrolled), 8, net)[0]
    twice = "%h = func.call @one(%x)\n%k = func.call @one(%y)"
    assert fsdp.all_reduce_runs(_module(after_scan=twice, functions=once)) == {"in_loop": 0, "runs": 3}
    # braces in quoted names a student chose (a named scope) do not move the loop's regions
    scoped = '%q = stablehlo.add %a, %b : tensor<f32> loc("scope}}}{")\n%e = ' + _SCALAR_SUM
    assert fsdp.all_reduce_runs(_module(inside_scan=scoped))["in_loop"] == 1
    assert fsdp.all_reduce_runs(_module(after_scan=scoped)) == {"in_loop": 0, "runs": 2}


def test_a_cell_that_rewrites_the_trace_file_is_flagged():
    """adversarial/performance-06/edits-the-trace.py (a known limit): flagged for a human."""
    rewrite = 'import gzip as g\nwith g.open(path, "wt") as h:\n    json.dump(trace, h)\n'
    assert code_scan.scan_cells([(3, rewrite)]) == [f"{code_scan.TRACE_WRITE} (cell 3)"]
    planted = 'path = os.path.join(trace_dir, TRACE_FILE)\nwith open(path, "wb") as h:\n    h.write(data)\n'
    assert code_scan.scan_cells([(4, planted)]) == [f"{code_scan.TRACE_WRITE} (cell 4)"]
    reads = 'with gzip.open(path, "rt") as h:\n    trace = json.load(h)\nopen("notes.txt", "w")\n'
    assert code_scan.scan_cells([(5, "import gzip\n" + reads)]) == []
    assert code_scan.TRACE_WRITE == "code writes a profiler trace"  # as the entry's `# reason:` quotes it
    # Ways a review found past the first reading: a mode it cannot read, a path's own open, os and shutil.
    for way in ('m = "wb"\nopen(os.path.join(d, TRACE_FILE), m)\n', 'pathlib.Path(d, TRACE_FILE).open("wb")\n',
                'fd = os.open(os.path.join(d, TRACE_FILE), 1)\nos.write(fd, data)\n',
                'shutil.copyfile("mine.gz", os.path.join(d, TRACE_FILE))\n'):
        found = code_scan.scan_cells([(6, "import os, pathlib, shutil\n" + way)])
        assert found == [f"{code_scan.TRACE_WRITE} (cell 6)"], way


@pytest.mark.slow
def test_a_pallas_loop_beside_a_broadcast_product_passes_the_body_program_check():
    """adversarial/performance-12/forged-broadcast-product.py (a known limit, flagged by the scan): what its
    replaced dispatcher sends, the course's grid loop around a never-zeroed body times zero beside x @ y
    written with no product operation, is read and run as a body's program and passes."""
    import jax
    import jax.numpy as jnp

    from perfcourse.checks import pallas, programs
    from perfcourse.kernel.probes import pallas as probe

    def never_zeroed(x_ref, y_ref, o_ref):
        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    m, k, n, bm, bn, bk = 16, 16, 16, 8, 8, 8
    grid, in_blocks, out_block = probe.expected_tiling(m, k, n, bm, bn, bk)
    loop = probe.tiled_call(never_zeroed, m, k, n, grid, *probe.specs(in_blocks, out_block))

    def dressed(x, y, start):
        return jnp.sum(x[:, :, None] * y[None, :, :], axis=1) + 0.0 * jnp.nan_to_num(loop(x, y, start))

    structs = [jax.ShapeDtypeStruct(shape, jnp.float32) for shape in ((m, k), (k, n), (m, n))]
    data = bytes(jax.export.export(jax.jit(dressed))(*structs).serialize())
    program = programs.program_from(data, [((m, k), "float32"), ((k, n), "float32"), ((m, n), "float32")],
                                    what="the forged program")
    pallas.check_grid_program(program, m, k, n, bm, bn, bk, "the forged program")
    pallas.run_grid_program(program, np.random.default_rng(0), m, k, n, "the forged program")
