"""Guards an upgrade could disarm silently: the grader overrides private hooks of nbclient.

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
