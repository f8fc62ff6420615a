# The course's nbgrader configuration: the one place its grading settings live.
#
# nbgrader 0.9.6 ignores `--config=FILE` without saying so; nbgrader_config.py beside this file
# loads this one, so a plain `nbgrader <verb>` run from the course root uses it.
import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "jax-performance"

# nbgrader's exchange, where released lessons wait for students and submissions wait to be
# collected (JupyterLab's Assignments panel, `nbgrader release_assignment/fetch/submit/collect`).
# One machine, one user: exchange/ in the course (`make lab` makes it; Formgrader offers Release
# and Collect only once it exists; a student's Fetch lands in the course root). For many users,
# PERFCOURSE_EXCHANGE names a folder every user can write, the same for all of them: JupyterHub's
# configuration (deploy/jupyterhub/) sets it in every server (docs/instructors/configuration.md: "The exchange").
c.Exchange.root = os.environ.get("PERFCOURSE_EXCHANGE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "exchange")

# Every notebook is graded on the CPU kernel the course installs (JAX_PLATFORMS=cpu), whatever
# kernel the student's notebook names; grades must not depend on the grader's accelerator.
c.Execute.kernel_name = "jax-cpu"
# Both grading kernels compile cheaply: without LLVM's optimizations (XLA's CPU backend, level
# 0), emitting fusions straight to LLVM IR instead of through XLA's newer MLIR fusion emitters
# (more than half of a small program's compile CPU here), and generating each program's code as
# one LLVM module instead of splitting it for threads that a small program cannot use. A grading kernel
# compiles dozens of small programs and runs each a few times, so compiling is a large part of
# its work: level 0 alone graded the sample class with about 14 % less kernel CPU time, the other
# two flags take a further fifth off each graded notebook's CPU (benchmarks/grading.py), with the
# same scores. Grading judges structure and counts, and times work against a calibration made
# with the same flags, never against a machine's speed; lessons and artifacts run at XLA's
# defaults. XLA stops at an unknown flag: tests/test_config.py starts JAX with these.
c.GuardedExecute.xla_flags = ("--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false "
                              "--xla_cpu_parallel_codegen_split_count=1")
# Per cell, in seconds. The lessons' cells take well under a second on a laptop CPU.
c.Execute.timeout = 60
# Once the last cell has run, its outputs are in: the kernels are killed at once instead of being
# asked to shut down and waited for (nothing a student's code does at exit can matter then).
c.Execute.shutdown_kernel = "immediate"

# nbgrader reads each notebook it autogrades through this exporter (a plain `nbgrader autograde`, and
# Formgrader's Autograde button, which runs in the instructor's Jupyter server): the file is bounded
# and parsed in a bounded child process before nbformat reads it (grading/bounded_export.py).
c.Autograde.exporter_class = "perfcourse.grading.bounded_export.BoundedNotebookExporter"

# Kernels run sandboxed (bubblewrap: no network, read-only files, no view of the course) under a
# guard that vouches for every test cell; see src/perfcourse/grading/. `perfcourse grade
# --unsandboxed` sets GuardedExecute.sandbox = "none" where bubblewrap is missing.
c.Autograde.autograde_preprocessors = [
    "perfcourse.grading.execute.GuardedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    # Cells whose nbgrader metadata an editor or a tool stripped get it back from the lesson, by
    # cell id or a test cell's unchanged text, before nbgrader puts tests back (grading/restore_metadata.py).
    "perfcourse.grading.restore_metadata.RestoreStrippedMetadata",
    "perfcourse.grading.sanitize.RestoreCellRoles",
    "perfcourse.grading.sanitize.RestoreDeletedCells",  # OverwriteCells, restoring deleted cells robustly
    "nbgrader.preprocessors.CheckCellMetadata",
]
# The grading limits live here and nowhere else (GuardedExecute has no defaults; `perfcourse grade`
# derives its worker watchdog from notebook_timeout and interrupt_grace).
c.GuardedExecute.notebook_timeout = 600   # seconds for a whole notebook
c.GuardedExecute.interrupt_grace = 5      # seconds to stop after an interrupt before the kernel is killed
c.GuardedExecute.memory_bytes = 2 << 30   # resident memory of the student kernel and everything it starts
c.GuardedExecute.pids = 512              # processes and threads of the student kernel, all together
c.GuardedExecute.disk_bytes = 256 << 20  # its scratch folder (a tmpfs: counts against the memory bound)
c.GuardedExecute.cpu_seconds = 900       # CPU seconds of each kernel process
c.GuardedExecute.trusted_kernel_notebooks = 32  # a grading worker's trusted kernel grades this many
                                              # notebooks in turn (1: a fresh one for each)
c.GuardedExecute.file_bytes = 64 << 20   # the largest file a kernel may write
c.GuardedExecute.max_output_bytes = 1_000_000  # per cell
c.GuardedExecute.max_output_messages = 2_000   # per cell: prints and displays, each a message
c.LimitOutput.max_lines = 1000

# A grade cell a student deleted is put back from the gradebook (and then fails or passes on
# its own merits) instead of being skipped.
c.OverwriteCells.add_missing_cells = True  # (RestoreDeletedCells is an OverwriteCells)

# The student kernel's evidence (perfcourse.kernel.evidence.EVIDENCE_KEY), the time the grade
# cells took (perfcourse.grading.execute.TIMING_KEY) and the cells whose metadata was restored
# (perfcourse.grading.restore_metadata.RESTORED_KEY) stay in the graded notebook's metadata,
# where the grade report and the benchmark read them; all other notebook metadata is cleared.
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {
    ("language_info", "name"), ("perfcourse_evidence",), ("perfcourse_grading",), ("perfcourse_restored",)}

# Release: nbgrader's generate_assignment, with each unfilled solution cell's stub naming its
# task ("Task 2 (a synchronized timer) is not done yet ..."), so a fresh notebook's first failure
# says what to do (perfcourse/stubs.py).
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "perfcourse.stubs.TaskStubs",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Feedback shows the public tests only: the outputs of cells with hidden tests become one line
# (passed, or failed and the error's type), then the hidden tests' source is removed.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    # A first cell naming what the notebook lost against its release (stripped metadata, a
    # deleted solution or test cell: grading/losses.py), where it lost any.
    "perfcourse.grading.loss_notes.LossNotes",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "perfcourse.grading.feedback.HideHiddenTestOutputs",
    "nbgrader.preprocessors.ClearHiddenTests",
]
