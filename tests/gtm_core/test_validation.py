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
