"""gtm_core.validation: each check_* helper accepts its domain and refuses everything else
with an InvalidParameter naming the field and the value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from gtm_core import validation as V
from gtm_core.errors import GTMError, InvalidParameter

CASES = [
    # helper, accepted values, refused values, text of the domain
    (V.check_positive, [1e-300, 1, 2.5, Fraction(1, 3), np.float64(0.1)], [0, -1e-300, -0.0], "> 0"),
    (V.check_nonnegative, [0, -0.0, 3], [-1e-300, -2], ">= 0"),
    (V.check_open_unit, [1e-300, 0.5, 1 - 1e-16], [0, 1, 1.5, -0.5], "in (0, 1)"),
    (V.check_half_open_unit, [0, 0.5, 1 - 1e-16], [1, -1e-300], "in [0, 1)"),
    (V.check_gamma, [1 + 1e-15, 1.5, 2, 2.0], [1, 1.0, 2 + 1e-15, 0.5], "in (1, 2]"),
    (V.check_probability, [0, 1, 0.5], [-1e-300, 1 + 1e-15], "in [0, 1]"),
]


@pytest.mark.parametrize("helper,good,bad,domain", CASES, ids=[c[0].__name__ for c in CASES])
def test_domain(helper, good, bad, domain):
    for v in good:
        assert helper("field", v) == float(v)
        assert type(helper("field", v)) is float
    for v in bad:
        with pytest.raises(InvalidParameter) as info:
            helper("field", v)
        assert str(info.value) == f"field must be {domain}, got {v!r}"


@pytest.mark.parametrize("helper", [c[0] for c in CASES])
@pytest.mark.parametrize(
    "value,text",
    [
        (math.nan, "must be finite, got nan"),
        (math.inf, "must be finite, got inf"),
        (-math.inf, "must be finite, got -inf"),
        (10**400, "must be finite, got 1000"),
        (True, "must be a real number, got True"),
        ("0.5", "must be a real number, got '0.5'"),
        (None, "must be a real number, got None"),
        (1j, "must be a real number, got 1j"),
        ([0.5], "must be a real number, got [0.5]"),
    ],
)
def test_non_real_and_non_finite_values(helper, value, text):
    with pytest.raises(InvalidParameter) as info:
        helper("beta", value)
    assert str(info.value).startswith(f"beta {text}")
    assert isinstance(info.value, GTMError) and isinstance(info.value, ValueError)


def test_long_values_are_shortened_to_one_line():
    with pytest.raises(InvalidParameter) as info:
        V.check_positive("eps", "y" * 10_000)
    msg = str(info.value)
    assert len(msg) < 120 and "\n" not in msg and "(10002 chars)" in msg


@pytest.mark.parametrize("value", [1, 7, 10**30, np.int64(3)])
def test_positive_int_accepts(value):
    assert V.check_positive_int("horizon", value) == int(value)


@pytest.mark.parametrize("value", [0, -3, 1.0, True, "2", None])
def test_positive_int_refuses(value):
    with pytest.raises(InvalidParameter, match=f"horizon must be a positive integer, got {value!r}"):
        V.check_positive_int("horizon", value)


def test_nonnegative_int_and_direction():
    assert V.check_nonnegative_int("c", 0) == 0
    with pytest.raises(InvalidParameter, match="c must be a non-negative integer, got -1"):
        V.check_nonnegative_int("c", -1)
    assert V.check_direction("s", 1) == 1 and V.check_direction("s", -1) == -1
    for bad in (0, 2, True, 1.5, "1"):
        with pytest.raises(InvalidParameter, match="s must be 1 or -1"):
            V.check_direction("s", bad)


# --- check_stream: the one stream check of the float64 paths (simulator, reference, baselines) ---


def test_check_stream_accepts_and_converts():
    import numpy as np

    from gtm_core.validation import check_stream

    out = check_stream("p", [0, 0.5, 1])
    assert isinstance(out, np.ndarray) and out.dtype == float and out.tolist() == [0.0, 0.5, 1.0]
    assert check_stream("p", (0.1, 0.2), length=2).size == 2


@pytest.mark.parametrize("value,match", [
    ([], "non-empty 1-D"), ([[0.1]], "non-empty 1-D"), ("abc", "non-empty 1-D"), ([0.1, float("nan")], r"\[0, 1\]"),
    ([1.5], r"\[0, 1\]"), ([-0.1], r"\[0, 1\]"), ([object()], "non-empty 1-D"),
])
def test_check_stream_refuses(value, match):
    from gtm_core.validation import check_stream

    with pytest.raises(InvalidParameter, match=match):
        check_stream("p", value)


def test_check_stream_length_and_field_name():
    from gtm_core.validation import check_stream

    with pytest.raises(InvalidParameter, match=r"T=3 does not match len\(p\)=2"):
        check_stream("p", [0.1, 0.2], length=3)
    with pytest.raises(InvalidParameter, match="p_prime must contain"):
        check_stream("p_prime", [2.0])


# --- check_int: one integer check, its domain spelled in the message ---


@pytest.mark.parametrize("kwargs,domain", [
    ({}, "an integer"),
    ({"minimum": 0}, "a non-negative integer"),
    ({"minimum": 1}, "a positive integer"),
    ({"minimum": 100}, "an integer >= 100"),
    ({"maximum": 7}, "an integer <= 7"),
    ({"minimum": 1, "maximum": 8}, "an integer in [1, 8]"),
])
def test_check_int_domains(kwargs, domain):
    lo, hi = kwargs.get("minimum"), kwargs.get("maximum")
    for good in {lo, hi, np.int64(lo if lo is not None else 3)} - {None}:
        assert V.check_int("k", good, **kwargs) == int(good) and type(V.check_int("k", good, **kwargs)) is int
    bad = [True, np.bool_(True), 1.0, "3", None]
    bad += [lo - 1] if lo is not None else []
    bad += [hi + 1] if hi is not None else []
    for v in bad:
        with pytest.raises(InvalidParameter) as info:
            V.check_int("k", v, **kwargs)
        assert str(info.value) == f"k must be {domain}, got {v!r}"


def test_every_helper_raises_the_error_it_is_given():
    from gtm_core.errors import ConfigError, TargetError

    calls = [
        (V.check_int, ("n", -1), {"minimum": 0}), (V.check_positive_int, ("n", 0), {}),
        (V.check_nonnegative_int, ("n", -1), {}), (V.check_direction, ("s", 0), {}),
        (V.check_real, ("x", 2.0), {"high": 1}), (V.check_finite, ("x", math.inf), {}),
        (V.check_positive, ("x", 0), {}), (V.check_nonnegative, ("x", -1), {}),
        (V.check_open_unit, ("x", 1), {}), (V.check_half_open_unit, ("x", 1), {}),
        (V.check_gamma, ("x", 3), {}), (V.check_probability, ("x", 2), {}),
        (V.check_exact_real, ("x", "1"), {}), (V.check_formula_real, ("x", "abc"), {}),
        (V.check_seconds, ("x", 0), {}), (V.check_bool, ("x", 1), {}),
        (V.check_choice, ("x", "c", ("a", "b")), {}),
    ]
    for error in (ConfigError, TargetError):
        for helper, args, kwargs in calls:
            with pytest.raises(error, match=f"^{args[0]} "):
                helper(*args, **kwargs, error=error)


# --- check_real: intervals, infinities ---


@pytest.mark.parametrize("kwargs,good,bad,domain", [
    ({"low": 0, "low_open": True}, [1e-300, 5], [0, -1], "> 0"),
    ({"high": 1, "high_open": True}, [0.99, -5], [1, 2], "< 1"),
    ({"high": 2}, [2, -1], [2.5], "<= 2"),
    ({"low": 1}, [1, 10], [0.5], ">= 1"),
    ({"low": 0, "high": 0.5, "high_open": True}, [0, 0.25], [0.5, -0.1], "in [0, 0.5)"),
])
def test_check_real_intervals(kwargs, good, bad, domain):
    for v in good:
        assert V.check_real("x", v, **kwargs) == float(v)
    for v in bad:
        with pytest.raises(InvalidParameter) as info:
            V.check_real("x", v, **kwargs)
        assert str(info.value) == f"x must be {domain}, got {v!r}"


def test_check_real_infinite_ok_still_refuses_nan_and_bools():
    assert V.check_real("tau2", math.inf, infinite_ok=True) == math.inf
    assert V.check_real("tau2", -math.inf, infinite_ok=True) == -math.inf
    with pytest.raises(InvalidParameter, match="tau2 must be a number, got nan"):
        V.check_real("tau2", math.nan, infinite_ok=True)
    with pytest.raises(InvalidParameter, match="tau2 must be within the float range"):
        V.check_real("tau2", 10**400, infinite_ok=True)
    with pytest.raises(InvalidParameter, match="tau2 must be a real number, got False"):
        V.check_real("tau2", False, infinite_ok=True)


# --- exact numbers, formula arguments, flags, choices, predicates ---


def test_check_exact_real_keeps_exact_values():
    third = Fraction(1, 3)
    assert V.check_exact_real("x", third) is third
    assert V.check_exact_real("x", np.int64(7)) == 7 and type(V.check_exact_real("x", np.int64(7))) is int
    assert V.check_exact_real("x", 0.1) == 0.1
    for v, text in [(True, "non-numeric"), ("1", "non-numeric"), (1j, "non-numeric"), (math.nan, "non-finite"),
                    (-math.inf, "non-finite")]:
        with pytest.raises(InvalidParameter, match=f"^x is {text}"):
            V.check_exact_real("x", v)


def test_check_formula_real_accepts_both_precisions():
    import mpmath

    for v in (0.5, 3, np.float64(0.25), np.int32(2), mpmath.mpf("0.1"), "0.1", "1e-400", Fraction(1, 3)):
        V.check_formula_real("x", v)
    V.check_formula_real("tau2", math.inf, infinite_ok=True)
    V.check_formula_real("tau2", mpmath.inf, infinite_ok=True)
    for v in (True, None, "abc", math.nan, math.inf, -math.inf, 1j, mpmath.mpc(1, 1), mpmath.nan, [0.5]):
        with pytest.raises(InvalidParameter, match="x must be a finite real number, got"):
            V.check_formula_real("x", v)
    with pytest.raises(InvalidParameter):
        V.check_formula_real("tau2", -math.inf, infinite_ok=True)


def test_check_bool():
    assert V.check_bool("flag", True) is True and V.check_bool("flag", np.bool_(False)) is False
    for v in (0, 1, "true", None, 1.0):
        with pytest.raises(InvalidParameter, match=f"flag must be a bool, got {v!r}"):
            V.check_bool("flag", v)


def test_check_choice_matches_by_value_but_never_a_bool_for_a_number():
    assert V.check_choice("s", 1, (1, -1)) == 1 and V.check_choice("name", "b", ["a", "b"]) == "b"
    assert V.check_choice("mode", "x", {"x": 1, "y": 2}) == "x"  # a mapping's keys
    for v in (True, "1", 2, None, np.array([1, 2])):
        with pytest.raises(InvalidParameter, match=r"s must be one of 1, -1, got "):
            V.check_choice("s", v, (1, -1))
    with pytest.raises(InvalidParameter, match="^flag must be one of True, got 1$"):
        V.check_choice("flag", 1, (True,))


@pytest.mark.parametrize("value,integer,real", [
    (3, True, True), (np.int64(3), True, True), (True, False, False), (np.bool_(True), False, False),
    (2.5, False, True), (np.float32(1), False, True), (Fraction(1, 2), False, True), (math.inf, False, True),
    ("3", False, False), (None, False, False), (1j, False, False),
])
def test_predicates(value, integer, real):
    assert V.is_integer(value) is integer and V.is_real(value) is real
