"""artifacts/: the seed schema field for field, reproducible hashes, and a check that finds staleness."""
import json
import statistics

import pytest

from conftest import ROOT, perfcourse, seed

from perfcourse import kernels
from perfcourse.artifacts import execute, record, render
from perfcourse.course import lessons, read_notebook

pytestmark = pytest.mark.e2e  # kernels, graded classes or executed notebooks (make test, not make check)


def committed(lesson, backend="cpu"):
    return json.loads((ROOT / "artifacts" / backend / f"{lesson}.json").read_text())


def test_committed_artifacts_are_up_to_date():
    proc = perfcourse("artifacts", "--check", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "artifacts: up to date" in proc.stdout


@pytest.mark.parametrize("lesson", lessons(ROOT))
def test_every_cpu_artifact_has_the_seed_layout(lesson):
    """Seed 001's fields in its order (seed 000's, without a diagram), and the seeds' environment."""
    ours = committed(lesson)
    theirs = seed("performance-01") if "diagram" in ours else seed("performance-05")
    assert list(ours) == list(theirs)
    assert ours["lessonId"] == lesson and ours["kind"] == "executed"
    assert ours["provenance"] == "recorded_cpu_computation"
    assert ours["environment"] == {**theirs["environment"], "deviceCount": ours["environment"]["deviceCount"]}
    if "diagram" in ours:
        assert list(ours["diagram"]) == list(theirs["diagram"])


def test_performance_01_has_the_seed_diagram_and_both_calls_on_one_log_axis():
    """The seed's diagram; its two panels (the first call alone, the warm calls alone, each on its
    own linear scale) became one log axis holding the first call and every warm call, so their
    ratio shows, and the warm calls alone beside their median; then latency against throughput."""
    ours, theirs = committed("performance-01"), seed("performance-01")
    assert ours["diagram"] == theirs["diagram"]
    both, warm, per_call = ours["data"]["panels"]
    assert per_call["kind"] == "bar" and per_call["labels"][0].startswith("latency")
    assert per_call["labels"][1].startswith("throughput")
    assert both["kind"] == "line" and both["yscale"] == "log"
    assert [s["label"] for s in both["series"]] == ["first call (trace, compile, run)", "warm calls (run)"]
    assert warm.get("yscale", "linear") == "linear" and warm["series"][1]["style"] == "line"


def test_performance_01_report_has_the_seed_fields_and_honest_numbers():
    ours, theirs = committed("performance-01"), seed("performance-01")
    report, seeded = json.loads(ours["stdout"]), json.loads(theirs["stdout"])
    # The seed's fields in its order, then the throughput (Task 3) beside the latency samples.
    assert list(report) == list(seeded) + ["queued_boundary", "queued_calls", "queued_seconds_per_call"]
    assert report["queued_calls"] == 200 and report["queued_seconds_per_call"] > 0
    for key in ("backend", "jax", "numpy", "input_shape", "weight_shape", "dtype", "boundary"):
        assert report[key] == seeded[key], key
    assert len(report["warm_samples_seconds"]) == 7
    assert report["warm_median_seconds"] == statistics.median(report["warm_samples_seconds"])
    assert report["first_call_seconds"] > report["warm_median_seconds"]  # it traced and compiled
    assert 0 < report["max_abs_error"] < 1e-5  # a few float32 ulps, as in the seed
    both, warm, per_call = ours["data"]["panels"]
    assert per_call["series"][0]["y"] == [report["warm_median_seconds"], report["queued_seconds_per_call"]]
    assert both["x"] == list(range(1, 9)) and both["series"][0]["y"] == [report["first_call_seconds"]] + [None] * 7
    assert both["series"][1]["y"] == [None] + report["warm_samples_seconds"]
    assert warm["series"][0]["y"] == report["warm_samples_seconds"]
    assert warm["series"][1]["y"] == [report["warm_median_seconds"]] * 7


def test_content_hash_ignores_outputs_and_ids_but_not_source():
    nb = read_notebook(ROOT / "source" / "performance-01" / "performance-01.ipynb")
    before = record.content_hash(nb)
    nb.cells[1].outputs = [{"output_type": "stream", "name": "stdout", "text": "noise"}]
    nb.cells[1].id = "another-id"
    nb.cells[1].execution_count = 3
    assert record.content_hash(nb) == before
    nb.cells[1].source += "\nprint('changed')"
    assert record.content_hash(nb) != before


def test_rendering_is_reproducible_and_keeps_alt_text():
    artifact = committed("performance-01")
    png, alt = render.draw(artifact)
    assert png == render.draw(artifact)[0] and png.startswith(b"\x89PNG")
    assert artifact["diagram"]["alt"] in alt and "First and warm calls" in alt and "Warm calls alone" in alt
    assert "latency against throughput" in alt
    assert (ROOT / "artifacts" / "cpu" / "performance-01.png").read_bytes() == png


def png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_regenerating_records_the_backend_that_ran(course):
    # What `perfcourse artifacts --lesson performance-01` does, in-process, to see the executed
    # notebook's figure too: the drawing cell's image, the figure the artifact image shows.
    run = execute.execute(course, "performance-01", kernels.DEFAULT, progress=False)
    record.write(course, record.build(run))
    [shown] = run.figures  # execute() refuses a lesson whose figure cells drew no image/png
    drawn = (course / "artifacts" / "cpu" / "performance-01.png").read_bytes()
    (shown_w, shown_h), (drawn_w, drawn_h) = png_size(shown), png_size(drawn)
    assert abs(shown_w - drawn_w) <= 0.1 * drawn_w and abs(shown_h - drawn_h) <= 0.1 * drawn_h
    fresh = json.loads((course / "artifacts" / "cpu" / "performance-01.json").read_text())
    assert (fresh["provenance"] == f"recorded_{fresh['environment']['backend']}_computation"
            == "recorded_cpu_computation")
    assert fresh["contentHash"] == committed("performance-01")["contentHash"]
    assert fresh["generatedAt"] != committed("performance-01")["generatedAt"]
    assert perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course).returncode == 0


def test_check_names_stale_missing_and_corrupt_artifacts(course):
    source = course / "source" / "performance-01" / "performance-01.ipynb"
    nb = json.loads(source.read_text())
    nb["cells"][0]["source"] = ["# performance-01, rewritten\n"]
    source.write_text(json.dumps(nb))
    (course / "artifacts" / "tpu").mkdir(exist_ok=True)  # the committed TPU recordings, where present
    (course / "artifacts" / "tpu" / "performance-01.json").write_text("{ not json")
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 1
    assert "artifacts/cpu/performance-01.json: stale, the lesson's source changed" in proc.stdout
    assert "artifacts/tpu/performance-01.json: corrupt JSON" in proc.stdout
    # --lesson narrows the check to that lesson's artifacts: another lesson's are up to date.
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-03", cwd=course)
    assert proc.returncode == 0 and "artifacts: up to date" in proc.stdout, proc.stdout
    (course / "artifacts" / "cpu" / "performance-01.json").unlink()
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course)
    assert "artifacts/cpu/performance-01.json: missing" in proc.stdout
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-99", cwd=course)
    assert proc.returncode != 0 and "unknown lesson 'performance-99'" in proc.stderr + proc.stdout


def test_an_accelerators_recording_of_an_earlier_version_is_noted_not_failed(course):
    # CI has no TPU: a TPU's recording stays until recorded there again, and says what it is.
    source = course / "source" / "performance-01" / "performance-01.ipynb"
    tpu = course / "artifacts" / "tpu" / "performance-01.json"
    tpu.parent.mkdir(exist_ok=True)
    artifact = committed("performance-01")  # the CPU's, moved to another backend's folder
    artifact["environment"]["backend"], artifact["provenance"] = "tpu", "recorded_tpu_computation"
    artifact["contentHash"] = "0" * 64  # recorded from an earlier source
    tpu.write_text(json.dumps(artifact))
    assert perfcourse("artifacts", "--render", "--lesson", "performance-01", cwd=course).returncode == 0
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 0, proc.stdout
    assert "note: artifacts/tpu/performance-01.json records an earlier version of the lesson" in proc.stdout
    assert "artifacts: up to date" in proc.stdout
    nb = json.loads(source.read_text())
    nb["cells"][0]["source"] = ["# performance-01, rewritten\n"]
    source.write_text(json.dumps(nb))
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 1 and "artifacts/cpu/performance-01.json: stale" in proc.stdout  # the CPU's must follow


def test_check_names_an_image_that_does_not_match_its_json(course):
    (course / "artifacts" / "cpu" / "performance-01.png").write_bytes(b"not the drawing")
    proc = perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 1 and "artifacts/cpu/performance-01.png: missing or not drawn" in proc.stdout
    (course / "artifacts" / "cpu" / "performance-03.png").write_bytes(b"not the drawing either")
    proc = perfcourse("artifacts", "--render", "--lesson", "performance-01", cwd=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    backends = [b for b in ("cpu", "tpu", "gpu") if (course / "artifacts" / b / "performance-01.json").exists()]
    assert "cpu" in backends  # every backend's recording of the lesson is redrawn, the committed TPU one too
    assert {line.split()[-1] for line in proc.stdout.splitlines()} == {
        f"artifacts/{b}/performance-01.{kind}" for b in backends for kind in ("json", "png", "alt.txt")}, proc.stdout
    assert perfcourse("artifacts", "--check", "--lesson", "performance-01", cwd=course).returncode == 0
    assert perfcourse("artifacts", "--check", "--lesson", "performance-03", cwd=course).returncode == 1  # not redrawn


@pytest.mark.parametrize("field,value,message", [
    ("provenance", "recorded_tpu_computation", "does not name backend"),
    ("extra", 1, "fields differ from the schema"),
])
def test_validation_rejects_departures_from_the_schema(field, value, message):
    artifact = {**committed("performance-01"), field: value}
    with pytest.raises(Exception, match=message):
        record.validate(artifact, "artifact")
