"""`perfcourse`: the course's one command-line tool.

  perfcourse release [--check]     source/ -> release/ (nbgrader generate_assignment)
  perfcourse grade [...]           autograde new and resubmitted work in submitted/, print a grade table
                                   (--cluster tcp://HOST:PORT: on a Dask cluster's workers)
  perfcourse demo                  release, build the sample class, grade it, check the scores
  perfcourse report [...]          what the class got wrong: an HTML page, figures and a CSV in report/
  perfcourse publish DIR [--git]   what students get: release/ (the lessons course.toml's [schedule] has released),
                                   their guide, requirements (no solutions); --remove LESSON lets one leave it
  perfcourse site [--output DIR]    the course as a static website (Jupyter Book 2), built offline into _site/html/;
                                   --students: the lessons and the students' docs only
  perfcourse artifacts [...]       execute lessons with papermill and record artifacts/
  perfcourse figures [--check]     copy artifacts/figure.py into every source notebook's figure cell
  perfcourse solved [--kernel K]   run every release notebook, solved, as a student would (a TPU, a GPU)
  perfcourse kernel                install the jax-cpu kernelspec into this environment
  perfcourse --version
"""
from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from pathlib import Path

from . import startup  # noqa: F401,I001 (before anything that imports nbformat, and so jsonschema)
from . import __version__, kernels, release, samples
from .course import CourseError, find_root, lessons, read_notebook, source_notebook


def _checked(what: str, problems: list[str]) -> int:
    """Print each problem a --check found and a summary line; 1 if there were any."""
    for problem in problems:
        print(problem)
    print(f"{what}: {len(problems)} problem(s)" if problems else f"{what}: up to date")
    return 1 if problems else 0


def cmd_release(root: Path, args) -> int:
    if args.check:
        return _checked("release", release.stale(root, args.lesson))
    for path in release.generate(root, args.lesson):
        print(f"wrote {path.relative_to(root)}")
    return 0


def _grade_and_report(root: Path, lesson_ids: list[str], args, expected=None) -> list:
    from . import nbgrader_bridge as nbgrader
    from .grading import run, sandbox
    from .report import grade_table as report

    loaded = nbgrader.config(root)
    if args.cluster and args.workers:
        raise CourseError("--workers sets the local pool; with --cluster the Dask workers grade")
    scheduler = _scheduler(args)
    if not args.cluster:  # on a cluster, every worker is checked for the kernel and the sandbox instead
        kernels.require(loaded.Execute.kernel_name)  # the kernel grader_config.py grades on
    mode = "bwrap"
    if args.unsandboxed:
        mode = "none"
        print("WARNING: grading WITHOUT a sandbox: student code runs with your rights and can read "
              "source/, the gradebook and other students' work.", file=sys.stderr)
    elif args.cluster:
        pass
    elif not sandbox.bubblewrap():
        raise CourseError("bubblewrap (bwrap) is not installed, so student code cannot be sandboxed: "
                          "install it (apt-get install bubblewrap) or pass --unsandboxed")
    else:
        for missing in sandbox.bounds_available():  # graded anyway, but never silently unbounded
            print(f"WARNING: {missing}", file=sys.stderr)
    outcomes = run.grade_class(root, lesson_ids, workers=args.workers, sandbox=mode,
                               cell_timeout=args.cell_timeout, students=args.student,
                               force=args.force or expected is not None, cluster=scheduler)
    print(report.table(outcomes, expected))
    others = report.write_csv(root / "grades.csv", outcomes)
    failed = [o for o in outcomes if o.error]
    kept = sum(o.up_to_date for o in outcomes)
    print(f"\n{len(outcomes) - len(failed) - kept} of {len(outcomes)} notebooks graded now"
          + (f", {kept} up to date (unchanged since graded; --force regrades them)" if kept else "")
          + (f" on the Dask cluster at {args.cluster} ({_workers(outcomes)} took part)" if args.cluster else "")
          + "; scores in the gradebook and grades.csv"
          + (f" (its {others} other row(s), of notebooks outside this run, kept)" if others else ""))
    for o in failed:
        print(f"NOT GRADED {o.student}/{o.lesson}: {o.error}")
    return outcomes


def _scheduler(args):
    """--cluster and the options that go with it, as grading/cluster.py's Scheduler (None: local)."""
    tls = [args.tls_ca_file, args.tls_cert, args.tls_key]
    if not args.cluster:
        if any(tls) or args.scheduler_timeout:
            raise CourseError("--tls-ca-file, --tls-cert, --tls-key and --scheduler-timeout go with --cluster")
        return None
    from .grading.cluster import GONE_SECONDS, Scheduler

    if any(tls) and not all(tls):
        raise CourseError("--tls-ca-file, --tls-cert and --tls-key go together (PEM files: the CA, "
                          "this machine's certificate and its key)")
    return Scheduler(args.cluster, tuple(tls) if all(tls) else None, args.scheduler_timeout or GONE_SECONDS)


def _workers(outcomes) -> str:
    count = len({o.worker for o in outcomes if o.worker})
    return f"{count} worker" + ("" if count == 1 else "s")


def cmd_grade(root: Path, args) -> int:
    outcomes = _grade_and_report(root, args.lesson or lessons(root), args)
    return 1 if any(o.error for o in outcomes) else 0


def cmd_demo(root: Path, args) -> int:
    lesson_ids = args.lesson or lessons(root)
    release.generate(root, lesson_ids)
    class_samples = [s for s in samples.discover(root, lesson_ids) if not (args.quick and s.nightly)]
    # A few hostile submissions (`# tier: demo`) beside them: the report's flags, notes and refusals.
    hostile = [s for s in samples.discover(root, lesson_ids, folder="adversarial", prefix="hostile")
               if s.demo and not (args.quick and s.nightly)]
    samples.write_submissions(root, class_samples + hostile)
    # The score each must get; None: refused, never graded.
    expected = {(s.student, s.lesson): None if s.expected is None else sum(s.expected.values())
                for s in class_samples + hostile}
    outcomes = _grade_and_report(root, lesson_ids, args, expected)
    mismatched = [o for o in outcomes if (o.student, o.lesson) in expected
                  and (o.score.score if o.score else None) != expected[(o.student, o.lesson)]]
    # A hostile entry is refused or flagged for its own reasons (`# reason:`), not for any failure.
    said = {(o.student, o.lesson): "\n".join([o.error or "", *o.notes, *o.flags]) for o in outcomes}
    unexplained = [s for s in hostile if any(r not in said.get((s.student, s.lesson), "") for r in s.reasons)]
    if mismatched or unexplained:
        print("demo: scores differ from the samples' expectations: "
              + ", ".join([f"{o.student}/{o.lesson}" for o in mismatched]
                          + [f"{s.student}/{s.lesson} (not for its reason)" for s in unexplained]))
        return 1
    refused = sum(s.expected is None for s in hostile)
    print(f"demo: all {len(class_samples)} sample submissions scored as expected"
          + (f", and the {len(hostile)} hostile ones from adversarial/ too ({refused} refused, as they should be: "
             "NOT GRADED above); their flags and notes are for review in 'perfcourse report'" if hostile else ""))
    return 0


def cmd_report(root: Path, args) -> int:
    from .report import page  # matplotlib loads only when needed

    return page.main(root, args.lesson, args.output)


def cmd_publish(root: Path, args) -> int:
    from . import publish

    return publish.main(root, args.folder, args.git, args.remove)


def cmd_site(root: Path, args) -> int:
    from .site import build

    return build.main(root, args.output, args.verbose, args.students)


def cmd_artifacts(root: Path, args) -> int:
    from .artifacts import execute, record  # papermill and matplotlib load only when needed

    if args.check:
        for note in record.earlier_versions(root, args.lesson):
            print(note)
        return _checked("artifacts", record.check(root, args.lesson))
    if args.render:
        for path in record.rerender(root, args.lesson):
            print(f"redrew {path.relative_to(root)}")
        return 0
    selected = args.lesson or lessons(root)
    kernels.require(args.kernel)  # bad input is refused before any lesson runs
    for lesson in selected:
        read_notebook(source_notebook(root, lesson))
    failed = []
    for lesson in selected:  # one lesson's failure is reported and the others still recorded
        print(f"executing {lesson} on kernel {args.kernel}", file=sys.stderr, flush=True)
        try:
            run = execute.execute(root, lesson, args.kernel, progress=sys.stderr.isatty())
        except CourseError as exc:
            print(f"perfcourse: error: {exc}", file=sys.stderr, flush=True)
            failed.append(lesson)
            continue
        written = record.write(root, record.build(run))
        print(f"wrote {', '.join(str(p.relative_to(root)) for p in written.values())}", flush=True)
    if failed:
        print(f"perfcourse: error: {len(failed)} of {len(selected)} lessons not recorded: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def cmd_figures(root: Path, args) -> int:
    from .artifacts import notebook_figure

    if args.check:
        return _checked("figures", notebook_figure.stale(root))
    written = notebook_figure.sync(root)
    for path in written:
        print(f"wrote {path.relative_to(root)}")
    if written:
        print("then run 'perfcourse release' and 'perfcourse artifacts --render'")
    return 0


def cmd_solved(root: Path, args) -> int:
    from . import solved  # nbclient loads only when needed

    kernels.require(args.kernel)
    chosen = args.lesson or lessons(root)
    for lesson in chosen:
        solved.solution_sample(root, lesson)  # bad input is refused before any lesson runs
    failed = []
    for lesson in chosen:
        print(f"running {lesson}, solved, on kernel {args.kernel}", file=sys.stderr, flush=True)
        failures = solved.execute(root, lesson, args.kernel, keep=args.keep)
        for f in failures:
            print(f"{lesson}: cell {f.cell} raised {f.ename}: {f.evalue.splitlines()[0] if f.evalue else ''}")
        print(f"{lesson}: {'passed' if not failures else f'{len(failures)} cell(s) failed'}", flush=True)
        if failures:
            failed.append(lesson)
    print(f"{len(chosen) - len(failed)} of {len(chosen)} solved release notebooks passed on kernel {args.kernel}")
    return 1 if failed else 0


def cmd_kernel(root: Path, args) -> int:
    print(f"installed {kernels.install(args.name, user=args.user)}")
    return 0


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def scheduler_address(text: str) -> str:
    if not re.fullmatch(r"(tcp|tls|ucx|inproc)://[^\s/]+", text):
        raise argparse.ArgumentTypeError(f"not a Dask scheduler address (tcp://HOST:PORT): {text!r}")
    return text


def student_id(text: str) -> str:
    if not text or text in (".", "..") or "/" in text or not text.isprintable():
        raise argparse.ArgumentTypeError(f"not a student id (a folder name in submitted/): {text!r}")
    return text


def parser() -> argparse.ArgumentParser:
    from .grading.cluster import GONE_SECONDS  # (Dask itself loads only when a run uses --cluster)

    top = argparse.ArgumentParser(prog="perfcourse", description=__doc__.split("\n\n")[0])
    top.add_argument("--version", action="version", version=f"perfcourse {__version__}")
    verbs = top.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("release", help="generate release/ from source/ with nbgrader")
    p.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    p.add_argument("--check", action="store_true", help="exit 1 if release/ is stale against source/")
    p.set_defaults(run=cmd_release)

    for verb, about, run in (("grade", "autograde new and resubmitted work in submitted/", cmd_grade),
                             ("demo", "grade the sample class in samples/ and check its scores", cmd_demo)):
        p = verbs.add_parser(verb, help=about)
        p.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
        p.add_argument("--workers", type=positive,
                       help="parallel workers (default: two per core to start, as memory allows, "
                            "more while the cores idle)")
        p.add_argument("--cell-timeout", type=positive, help="seconds per cell (default: grader_config.py)")
        p.add_argument("--unsandboxed", action="store_true",
                       help="grade without bubblewrap (student code runs with your rights)")
        p.add_argument("--cluster", metavar="tcp://HOST:PORT", type=scheduler_address,
                       help="grade on the workers of this Dask scheduler (one task per student)")
        p.add_argument("--tls-ca-file", metavar="PEM", help="with a tls:// --cluster: the CA's certificate(s)")
        p.add_argument("--tls-cert", metavar="PEM", help="with a tls:// --cluster: this machine's certificate")
        p.add_argument("--tls-key", metavar="PEM", help="with a tls:// --cluster: that certificate's private key")
        p.add_argument("--scheduler-timeout", metavar="SECONDS", type=positive,
                       help="with --cluster: end the run once the scheduler is unreachable or silent this long "
                            f"(default {GONE_SECONDS})")
        if verb == "demo":
            p.add_argument("--quick", action="store_true",
                           help="leave out the samples marked '# tier: nightly' (make test's end-to-end tier)")
        if verb == "grade":
            p.add_argument("--student", action="append", type=student_id,
                           help="only this student (repeatable)")
            p.add_argument("--force", action="store_true",
                           help="grade again what is up to date (unchanged since it was graded)")
        p.set_defaults(run=run, student=None, force=False, quick=False)

    p = verbs.add_parser("report", help="what the class got wrong: an HTML page from the gradebook and "
                                        "the autograded notebooks")
    p.add_argument("--lesson", action="append", help="only this lesson (repeatable; default: every one graded)")
    p.add_argument("--output", metavar="DIR", type=Path,
                   help="the report's folder (default: report/ in the course; replaced whole)")
    p.set_defaults(run=cmd_report)

    p = verbs.add_parser("publish", help="what students get: release/, their guide and the lessons' requirements, "
                                       "nothing of source/, samples/ or the checks")
    p.add_argument("folder", metavar="DIR", type=Path,
                   help="the publication's folder: new, empty, or an earlier publication (only its files are replaced)")
    p.add_argument("--git", action="store_true",
                   help="make DIR a git repository (or add a commit to it), to push where course.toml's "
                        "[publication] repository says")
    p.add_argument("--remove", metavar="LESSON", action="append",
                   help="let this lesson, held by the earlier publication in DIR, leave it (repeatable); "
                        "without it a lesson is never removed from the students' repository")
    p.set_defaults(run=cmd_publish)

    p = verbs.add_parser("site", help="the course as a static website: lessons, reference recordings and docs/ "
                                      "(Jupyter Book 2, built offline)")
    p.add_argument("--output", metavar="DIR", type=Path,
                   help="the build folder: the book's sources in DIR/book, the site in DIR/html (default: _site/)")
    p.add_argument("--verbose", action="store_true", help="log every step of the build (the engine's --debug)")
    p.add_argument("--students", action="store_true",
                   help="the build students are shown: the lessons and docs/students/ only (how hidden checks judge, "
                        "the hostile catalogue and the instructors' pages stay on the default build)")
    p.set_defaults(run=cmd_site)

    p = verbs.add_parser("artifacts", help="execute lessons and record their artifacts")
    p.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    p.add_argument("--kernel", default=kernels.DEFAULT,
                   help=f"Jupyter kernel to execute on (default {kernels.DEFAULT})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 naming each missing or stale artifact")
    mode.add_argument("--render", action="store_true", help="redraw images from the recorded JSON only")
    p.set_defaults(run=cmd_artifacts)

    p = verbs.add_parser("figures", help="copy the drawing code (artifacts/figure.py) into every lesson notebook")
    p.add_argument("--check", action="store_true", help="exit 1 naming each notebook whose copy differs")
    p.set_defaults(run=cmd_figures)

    p = verbs.add_parser("solved", help="run every release notebook, solved, as a student would")
    p.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    p.add_argument("--kernel", default=kernels.DEFAULT,
                   help=f"Jupyter kernel to execute on (default {kernels.DEFAULT})")
    p.add_argument("--keep", metavar="DIR", type=Path, help="write each executed notebook to DIR/<lesson>.ipynb")
    p.set_defaults(run=cmd_solved)

    p = verbs.add_parser("kernel", help="install a course kernelspec into this environment")
    p.add_argument("name", nargs="?", default=kernels.DEFAULT, choices=sorted(kernels.KERNELS))
    p.add_argument("--user", action="store_true", help="into the user's Jupyter folder (~/.local/share/jupyter)")
    p.set_defaults(run=cmd_kernel)
    return top


def _terminated(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (a job's time limit, `kill`) ends a command as Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    in_main = threading.current_thread() is threading.main_thread()  # where Python delivers signals
    previous = signal.signal(signal.SIGTERM, _terminated) if in_main else None
    try:
        root = find_root()
        for lesson in getattr(args, "lesson", None) or []:
            if lesson not in lessons(root):
                raise CourseError(f"unknown lesson {lesson!r}: source/ has {', '.join(lessons(root))}")
        return args.run(root, args)
    except CourseError as exc:
        print(f"perfcourse: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perfcourse: interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
