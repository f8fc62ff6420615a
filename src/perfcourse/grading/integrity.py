"""The guard every grading kernel runs before any student code.

Student code shares the kernel with the hidden tests, so it can rewrite later cells (IPython
input transformers), hide errors (custom exception handlers, a patched `showtraceback`), patch
what the tests call (`numpy.testing`, `np.allclose`, `jax.block_until_ready`, the course's own
`perfcourse.checks`, builtins), or swap modules in `sys.modules`.

`install()` (run through `IPKernelApp.exec_lines`, before the first cell) takes a snapshot of
all of that. After every cell the guard
  1. checks the cell ran as written: IPython's transform of the raw cell, redone with the
     pristine transformers, must equal what actually ran;
  2. compares the protected state with the snapshot, naming everything that changed;
  3. publishes a record {cell hash, tampered, raised}, signed with a per-kernel secret that
     only the grader knows (HMAC), as a display output of that cell;
  4. restores the snapshot, so tampering never outlives the cell that did it.
The grader (`grading.execute.GuardedExecute`) then fails every grade cell whose record is
missing, unsigned, names tampering, or says the cell raised while no error was shown.

What this does not promise: code written against this guard's own internals (reading its
secret out of the interpreter's memory, say) is beyond what any check inside the student's
interpreter can stop. The sandbox bounds what such code can reach: only its own scratch copy.
"""
from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import pkgutil
import sys

MIME = "application/vnd.perfcourse.integrity+json"
PROTECTED_MODULES = ("builtins", "numpy", "numpy.testing", "numpy.linalg", "jax", "jax.numpy",
                     "jax.lax", "jax.random", "time", "timeit", "math", "statistics", "functools")
SHELL_ATTRIBUTES = ("run_cell", "run_cell_async", "_run_cell", "transform_cell", "transform_ast",
                    "run_ast_nodes", "run_code", "showtraceback", "_showtraceback", "showsyntaxerror",
                    "showindentationerror", "custom_exceptions", "CustomTB", "InteractiveTB",
                    "SyntaxTB", "displayhook", "display_pub", "display_formatter", "events",
                    "input_transformer_manager", "prefilter_manager", "history_manager", "compile",
                    "set_custom_exc", "should_run_async")
SYS_ATTRIBUTES = ("modules", "exit", "stdout", "stderr", "displayhook", "excepthook", "meta_path",
                  "path_hooks")


def signature(secret: bytes, cell_hash: str, tampered: list, raised: bool) -> str:
    message = json.dumps([cell_hash, sorted(tampered), bool(raised)]).encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def cell_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class Snapshot:
    """The protected state of one kernel, with what differs from it and how to put it back."""

    def __init__(self, shell):
        self.shell = shell
        self.modules = self._protected_modules()
        self.module_dicts = {name: dict(vars(module)) for name, module in self.modules.items()}
        self.sys_attributes = {name: getattr(sys, name) for name in SYS_ATTRIBUTES}
        self.sys_modules = dict(sys.modules)
        self.shell_instance = {n: shell.__dict__[n] for n in SHELL_ATTRIBUTES if n in shell.__dict__}
        self.shell_values = {n: getattr(shell, n) for n in SHELL_ATTRIBUTES if hasattr(shell, n)}
        self.class_dicts = {cls: {n: cls.__dict__[n] for n in SHELL_ATTRIBUTES if n in cls.__dict__}
                            for cls in type(shell).__mro__}
        manager = shell.input_transformer_manager
        self.lists = {
            "input_transformers_cleanup": (manager.cleanup_transforms, list(manager.cleanup_transforms)),
            "input_line_transforms": (manager.line_transforms, list(manager.line_transforms)),
            "input_token_transformers": (manager.token_transformers, list(manager.token_transformers)),
            "input_transformers_post": (shell.input_transformers_post, list(shell.input_transformers_post)),
            "ast_transformers": (shell.ast_transformers, list(shell.ast_transformers)),
            "prefilter_checkers": (shell.prefilter_manager._checkers, list(shell.prefilter_manager._checkers)),
            "prefilter_transformers": (shell.prefilter_manager._transformers,
                                       list(shell.prefilter_manager._transformers)),
            "sys.meta_path": (sys.meta_path, list(sys.meta_path)),
        }
        self.callbacks = {event: list(funcs) for event, funcs in shell.events.callbacks.items()}

    @staticmethod
    def _protected_modules() -> dict:
        names = list(PROTECTED_MODULES)
        checks = importlib.import_module("perfcourse.checks")
        names += ["perfcourse", "perfcourse.checks"] + [
            f"perfcourse.checks.{m.name}" for m in pkgutil.iter_modules(checks.__path__)]
        return {name: importlib.import_module(name) for name in names}

    def differences(self) -> list[str]:
        """Everything protected that differs from the snapshot, by name."""
        found = []
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}]")
            current = vars(module)
            for key, value in self.module_dicts[name].items():
                if name == "builtins" and key.startswith("_") and key not in ("__import__", "__build_class__"):
                    continue
                if current.get(key, _MISSING) is not value:
                    found.append(f"{name}.{key}")
        for key, value in self.sys_attributes.items():
            if getattr(sys, key, _MISSING) is not value:
                found.append(f"sys.{key}")
        shell = self.shell
        for key in SHELL_ATTRIBUTES:
            if shell.__dict__.get(key, _MISSING) is not self.shell_instance.get(key, _MISSING):
                found.append(f"shell.{key}")
            elif key in self.shell_values and getattr(shell, key, _MISSING) is not self.shell_values[key]:
                if not callable(self.shell_values[key]) or key in ("events", "display_pub", "displayhook"):
                    found.append(f"shell.{key}")
        for cls, entries in self.class_dicts.items():
            for key, value in entries.items():
                if cls.__dict__.get(key, _MISSING) is not value:
                    found.append(f"{cls.__name__}.{key}")
        for label, (live, saved) in self.lists.items():
            if list(live) != saved:
                found.append(label)
        for event, saved in self.callbacks.items():
            if shell.events.callbacks.get(event) != saved:
                found.append(f"events[{event!r}]")
        return found

    def restore(self) -> None:
        for name, module in self.modules.items():
            sys.modules[name] = module
            current = vars(module)
            for key, value in self.module_dicts[name].items():
                if current.get(key, _MISSING) is not value:
                    current[key] = value
        for key, value in self.sys_attributes.items():
            setattr(sys, key, value)
        shell = self.shell
        for key in SHELL_ATTRIBUTES:
            if key in shell.__dict__ and key not in self.shell_instance:
                del shell.__dict__[key]
            elif key in self.shell_instance:
                shell.__dict__[key] = self.shell_instance[key]
        for key in ("custom_exceptions", "CustomTB", "display_pub", "displayhook", "display_formatter",
                    "input_transformer_manager", "prefilter_manager", "events", "history_manager"):
            if key in self.shell_values and getattr(shell, key, _MISSING) is not self.shell_values[key]:
                try:
                    setattr(shell, key, self.shell_values[key])
                except Exception:  # a read-only property: restored through the instance dict above
                    pass
        for cls, entries in self.class_dicts.items():
            for key, value in entries.items():
                if cls.__dict__.get(key, _MISSING) is not value:
                    setattr(cls, key, value)
        for live, saved in self.lists.values():
            live[:] = saved
        for event, saved in self.callbacks.items():
            shell.events.callbacks[event] = list(saved)



class Guard:
    def __init__(self, shell, secret: bytes):
        self.shell = shell
        self._secret = secret
        self.publish = shell.display_pub.publish
        self.snapshot: Snapshot | None = None

    def before_cell(self, info) -> None:
        # The first cell after start-up: nothing of the student's has run yet, and IPython's
        # builtin trap is not active here, as it is not after a cell either.
        if self.snapshot is None:
            self.snapshot = Snapshot(self.shell)
        else:
            self.snapshot.restore()

    def after_cell(self, result) -> None:
        if self.snapshot is None:
            return
        tampered = self.snapshot.differences()
        self.snapshot.restore()
        info = getattr(result, "info", None)
        raw = (getattr(info, "raw_cell", None) or "") if info is not None else ""
        transformed = getattr(info, "transformed_cell", None)
        if transformed is not None:
            try:
                expected = self.shell.transform_cell(raw)
            except Exception:
                expected = None
            if expected is not None and transformed != expected:
                tampered.append("the cell was rewritten before it ran (input transformer)")
        raised = result is None or result.error_before_exec is not None or result.error_in_exec is not None
        digest = cell_hash(raw)
        record = {"cell": digest, "tampered": tampered, "raised": raised,
                  "signature": signature(self._secret, digest, tampered, raised)}
        self.publish(data={MIME: record, "text/plain": ""}, metadata={})


_MISSING = object()


def install(secret_path: str) -> None:
    """Read the grader's secret (the grader deletes the file once the kernel is up) and hook the shell."""
    from IPython import get_ipython

    with open(secret_path, "rb") as handle:
        secret = handle.read()
    shell = get_ipython()
    guard = Guard(shell, secret)
    shell.events.register("pre_run_cell", guard.before_cell)
    shell.events.register("post_run_cell", guard.after_cell)
