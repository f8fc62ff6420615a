"""Check one implementation of the performance-audit project, stage by stage.

    python3 projects/performance-audit/tests/check.py --implementation starter --stage 1
    python3 projects/performance-audit/tests/check.py --implementation starter --stage 3 --evidence-dir DIR

--implementation NAME  checks projects/performance-audit/NAME/model.py (starter, solution, or a
                       folder of your own beside them)
--stage N              1: the result against NumPy and the reading of timings; 2: the trace count
                       at shapes picked at random; 3: the evidence files; 4: stages 1 to 3 together
--evidence-dir DIR     where stages 3 and 4 write report.json and workload.jaxpr.txt; created if
                       missing. Relative to the current directory. Default: runs/performance-audit
                       under the repository root.

A passing stage prints a line beginning `PASS performance-audit stage N` and exits 0; a failing
one prints `FAIL performance-audit stage N: <what to change>` and exits 1. A wrong command line
(an unknown implementation or stage) is named in one line, exit status 2.

The checks themselves live in src/perfcourse/checks/audit.py, shared with the notebook version
of this project; this script finds them in the repository, so nothing but the packages of
requirements-cpu.txt needs to be installed.
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
ROOT = PROJECT_DIR.parents[1]
DEFAULT_EVIDENCE = ROOT / "runs" / "performance-audit"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
PREFIX = "performance-audit"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a wrong command line is one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"{PREFIX}: error: {message} (see --help)\n")


def parse(argv):
    parser = OneLineParser(prog="check.py", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--implementation", required=True, metavar="NAME",
                        help="the folder beside tests/ holding model.py: starter, solution, ...")
    parser.add_argument("--stage", required=True, type=int, choices=(1, 2, 3, 4),
                        help="1 result and timings read, 2 trace count, 3 evidence, 4 all together")
    parser.add_argument("--evidence-dir", type=Path, default=None, metavar="DIR",
                        help=f"where stages 3 and 4 write evidence (default: "
                             f"{DEFAULT_EVIDENCE.relative_to(ROOT).as_posix()} under the repository root)")
    return parser.parse_args(argv)


def implementations() -> list[str]:
    return sorted(p.parent.name for p in PROJECT_DIR.glob("*/model.py"))


def model_path(name: str) -> Path | None:
    path = PROJECT_DIR / name / "model.py"
    return path if NAME.match(name) and name != "tests" and path.is_file() else None


def load_checks():
    """src/perfcourse/checks/audit.py from this repository, installed package or not."""
    sys.path.insert(0, str(ROOT / "src"))
    from perfcourse.checks import audit
    return audit


def load_model(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"performance_audit_{re.sub(r'[^A-Za-z0-9_]', '_', name)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    args = parse(argv)
    fail = f"FAIL {PREFIX} stage {args.stage}:"
    path = model_path(args.implementation)
    if path is None:
        print(f"{PREFIX}: error: no implementation named {args.implementation!r}: expected "
              f"projects/{PREFIX}/{args.implementation}/model.py (found: {', '.join(implementations())})",
              file=sys.stderr)
        return 2
    try:
        audit = load_checks()
    except ImportError as exc:
        print(f"{fail} cannot load the checks ({exc}); install the environment first: "
              f"python -m pip install -r requirements-cpu.txt")
        return 1
    evidence = args.evidence_dir if args.evidence_dir is not None else DEFAULT_EVIDENCE
    if args.stage in (3, 4):
        try:
            audit.prepare_evidence_dir(evidence)
        except audit.AuditFailure as exc:
            print(f"{fail} {exc}")
            return 1
    where = f"{args.implementation}/model.py"
    try:
        module = load_model(path, args.implementation)
    except Exception as exc:  # a student's syntax error or failing import, as one line
        print(f"{fail} cannot import {where}: {type(exc).__name__}: {audit.one_line(exc)}")
        return 1
    try:
        impl = audit.Implementation.from_namespace(module, where)
    except audit.AuditFailure as exc:
        print(f"{fail} {exc}")
        return 1
    return 0 if audit.run_stage(args.stage, impl, evidence, emit=lambda line: print(line, flush=True)) else 1


if __name__ == "__main__":
    sys.exit(main())
