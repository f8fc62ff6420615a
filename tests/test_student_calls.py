"""The one rule by which checks call student code and read the numbers it returns
(src/perfcourse/checks/student_calls.py)."""

import fractions
import math

import jax.numpy as jnp
import numpy as np
import pytest

from perfcourse.checks import CheckFailed, InstrumentMissing, audit, fsdp, memory, pallas, remote, roofline, trusted
from perfcourse.checks.student_calls import MESSAGE_CHARS, call_student, counts, number, numbers, said


def raising(exc):
    def fn(*args, **kwargs):
        raise exc
    return fn


@pytest.mark.parametrize("verdict", [CheckFailed("a check's verdict"), audit.AuditFailure("stage 1"),
                                     trusted.UntrustedResult("not an array"), InstrumentMissing("no such event")])
def test_a_verdict_or_a_missing_instrument_passes_unchanged(verdict):
    with pytest.raises(type(verdict)) as caught:
        call_student("fn(x)", raising(verdict))
    assert caught.value is verdict


def test_what_the_function_returns_comes_back_and_its_arguments_reach_it():
    def fn(a, b, *, what, fn):  # names call_student takes positionally still reach the student's function
        return a, b, what, fn
    assert call_student("fn", fn, 1, 2, what=3, fn=4) == (1, 2, 3, 4)


@pytest.mark.parametrize("exc,sentence", [
    (ZeroDivisionError("division by zero"), "fn(x) raised ZeroDivisionError: division by zero"),
    (KeyError("flops"), "fn(x) raised KeyError: 'flops'"),
    (NotImplementedError(), "fn(x) raised NotImplementedError"),
    (ValueError("first line\n\n   second line  \n"), "fn(x) raised ValueError: first line second line"),
])
def test_any_other_exception_becomes_one_check_failed_naming_what(exc, sentence):
    with pytest.raises(CheckFailed) as caught:
        call_student("fn(x)", raising(exc))
    assert type(caught.value) is CheckFailed and str(caught.value) == sentence
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_an_exception_whose_text_fails_is_named_by_its_type():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no text")
    with pytest.raises(CheckFailed, match="^fn raised Unprintable$"):
        call_student("fn", raising(Unprintable()))


def test_the_message_is_cut_at_one_length_and_the_advice_follows_it():
    long = "x" * (MESSAGE_CHARS * 3)
    with pytest.raises(CheckFailed) as caught:
        call_student("fn(x)", raising(RuntimeError(long)), advice="return a dict")
    head, _, advice = str(caught.value).rpartition("; ")
    assert advice == "return a dict"
    assert head == "fn(x) raised " + said(RuntimeError(long))
    assert said(RuntimeError(long)) == "RuntimeError: " + "x" * (MESSAGE_CHARS - 3) + "..."
    assert said(RuntimeError("x" * MESSAGE_CHARS)) == "RuntimeError: " + "x" * MESSAGE_CHARS


@pytest.mark.parametrize("check,args,sentence", [
    (roofline.check_matmul_intensity, (), "matmul_intensity raised ZeroDivisionError: no"),
    (pallas.check_tiled_traffic, (), "tiled_traffic raised ZeroDivisionError: no"),
    (fsdp.check_fsdp_budget, (), "fsdp_budget raised ZeroDivisionError: no"),
    (memory.check_fit_transfer, (), "fit_transfer on a fresh sweep raised ZeroDivisionError: no"),
])
def test_checks_word_a_students_error_by_the_rule(check, args, sentence):
    with pytest.raises(CheckFailed) as caught:
        check(raising(ZeroDivisionError("no")), *args)
    assert str(caught.value) == sentence


@pytest.mark.parametrize("value,want", [
    (3, 3.0), (-2.5, -2.5), (np.int64(7), 7.0), (np.uint8(255), 255.0), (np.float32(0.5), 0.5),
    (np.array(4), 4.0), (np.array(1.5, np.float32), 1.5), (jnp.float32(2.0), 2.0), (fractions.Fraction(1, 4), 0.25),
])
def test_numbers_accepted(value, want):
    got = number(value)
    assert type(got) is float and got == want


@pytest.mark.parametrize("value", [
    True, False, np.bool_(True), np.array(True), None, "1.5", b"1", 1 + 0j, [1.0], np.array([1.0]), np.zeros((1, 1)),
    jnp.array([1.0]), math.nan, math.inf, -math.inf, np.float64("nan"), np.array(np.inf), 10 ** 400, object(),
])
def test_numbers_refused(value):
    assert number(value) is None
    with pytest.raises(CheckFailed, match="^the seconds should be a finite number, got "):
        number(value, what="the seconds")


def test_nan_and_infinities_only_where_the_caller_allows_them():
    assert math.isnan(number(math.nan, finite=False)) and number(-math.inf, finite=False) == -math.inf
    assert number(True, finite=False) is None and number("inf", finite=False) is None
    assert numbers([1, math.inf]) is None and numbers([1, math.inf], finite=False) == [1.0, math.inf]


def test_a_list_of_numbers():
    assert numbers([1, np.int32(2), np.array(3.5)]) == [1.0, 2.0, 3.5]
    assert numbers((0.5,)) == [0.5] and numbers(np.arange(3)) == [0.0, 1.0, 2.0] and numbers([]) == []
    for refused in ([1, True], [1, None], np.zeros((2, 2)), {1: 2}, "12", 3, [1, "2"]):
        assert numbers(refused) is None
    with pytest.raises(CheckFailed, match="^the gaps should be a list of finite numbers$"):
        numbers([1, math.nan], what="the gaps")


def test_a_list_of_whole_numbers():
    assert counts([1, np.int32(2)]) == [1, 2] and counts(np.arange(3)) == [0, 1, 2] and counts(()) == []
    for refused in ([1, True], [1, 2.0], np.arange(3.0), [np.array(1)], np.zeros((2, 2), int), "12", 3):
        assert counts(refused) is None
    with pytest.raises(CheckFailed, match="^the compiles should be a list of whole numbers$"):
        counts([1.5], what="the compiles")


def test_an_object_of_the_students_kernel_is_refused_without_asking_it(monkeypatch):
    def request(*args):
        raise AssertionError("the student's kernel was asked")
    monkeypatch.setattr(remote, "_request", request)
    stand_in = remote.Remote(1, {"type": "builtins.float"})
    assert number(stand_in) is None and numbers(stand_in) is None and counts(stand_in) is None
    with pytest.raises(CheckFailed, match="got an object of your kernel"):
        number(stand_in, what="the result")
