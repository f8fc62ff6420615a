"""Guards an upgrade could disarm silently: the grader overrides private hooks of nbclient and calls
one private method of nbgrader (the last test).

GuardedExecute (grading/execute.py) overrides nbclient's `_async_check_alive` (asked every second
while a cell runs: it stops a grade cell once the student's kernel no longer serves the checks)
and `_async_handle_timeout` (it kills a kernel that ignores the interrupt at the cell limit). They
are private: a release of nbclient may rename them or change what they take, and the overrides
would then never run, with no error. These tests fail first.
"""
import inspect

from nbclient import NotebookClient

from perfcourse.grading.execute import GuardedExecute

# name -> the parameters nbclient 0.11 passes (the overrides are written for exactly these)
PRIVATE_HOOKS = {
    "_async_check_alive": ["self"],
    "_async_handle_timeout": ["self", "timeout", "cell"],
}


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_nbclient_still_has_the_private_hooks_the_grader_overrides():
    for name, expected in PRIVATE_HOOKS.items():
        hook = getattr(NotebookClient, name, None)
        assert hook is not None, f"nbclient no longer has NotebookClient.{name}: GuardedExecute's override never runs"
        assert inspect.iscoroutinefunction(hook), f"nbclient's {name} is no longer a coroutine function"
        assert parameters(hook) == expected, \
            f"nbclient's {name}{inspect.signature(hook)} changed: GuardedExecute's override expects {expected}"


def test_the_overrides_match_the_hooks_and_are_the_ones_nbclient_calls():
    for name, expected in PRIVATE_HOOKS.items():
        override = GuardedExecute.__dict__.get(name)
        assert override is not None, f"GuardedExecute no longer overrides {name}"
        assert inspect.iscoroutinefunction(override)
        assert parameters(override) == expected
    # nbclient reaches the hooks by these names from its cell loop; if it stops, the override is dead code.
    source = inspect.getsource(NotebookClient)
    assert "self._async_check_alive()" in source, "nbclient no longer calls _async_check_alive from its cell loop"
    assert "self._async_handle_timeout(" in source, "nbclient no longer calls _async_handle_timeout on a timeout"


def test_nbgrader_still_has_the_private_method_restoring_metadata_calls():
    """grading/restore_metadata.py recognises a stripped test cell by its text as the release showed
    it, hidden tests removed by nbgrader's own (private) ClearHiddenTests._remove_hidden_test_region:
    renamed, the restoring step would fail every stripped notebook; changed, it would match nothing."""
    from nbgrader.preprocessors import ClearHiddenTests
    from nbformat.v4 import new_code_cell

    method = getattr(ClearHiddenTests, "_remove_hidden_test_region", None)
    assert method is not None, "nbgrader no longer has ClearHiddenTests._remove_hidden_test_region"
    assert parameters(method) == ["self", "cell"]
    clearer = ClearHiddenTests()
    cell = new_code_cell(f"shown = 1\n{clearer.begin_test_delimeter}\nhidden = 2\n{clearer.end_test_delimeter}\n")
    clearer._remove_hidden_test_region(cell)
    assert "shown = 1" in cell.source and "hidden" not in cell.source
