"""Arithmetic backends so every paper formula is written once.

Each formula in :mod:`gtm_core.formulas` takes a keyword ``dps``:

* ``dps=None`` (default): float64, via :mod:`math`.
* ``dps=N``: mpmath at ``N`` decimal digits; inputs are converted with
  ``mpmath.mpf``: floats exactly (their binary value), strings such as ``"0.05"``
  as the decimal number, correctly rounded to the working precision.

The backend object exposes the handful of elementary functions the paper uses.

Shared numerical helpers, written once for the whole tree: outward rounding of an ``arb`` ball
to a float (:func:`upper_float`, :func:`lower_float`) and the one-dimensional searches of the
planners (:func:`golden_section_minimum`, :func:`integer_ternary_minimum`).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable

import mpmath
import numpy as np
from flint import arb

from .validation import check_int


class _FloatBackend:
    name = "float64"
    inf = math.inf

    @staticmethod
    def num(x: Any) -> float:
        return float(x)

    log = staticmethod(math.log)
    log1p = staticmethod(math.log1p)
    exp = staticmethod(math.exp)
    expm1 = staticmethod(math.expm1)
    sqrt = staticmethod(math.sqrt)
    floor = staticmethod(math.floor)
    ceil = staticmethod(math.ceil)

    @staticmethod
    def power(x: float, y: float) -> float:
        return math.pow(x, y)

    @staticmethod
    def context():
        return contextlib.nullcontext()


class _MpBackend:
    name = "mpmath"
    inf = mpmath.inf

    def __init__(self, dps: int):
        self.dps = int(dps)

    @staticmethod
    def num(x: Any):
        if isinstance(x, mpmath.mpf):
            return +x  # re-round to the working precision
        if isinstance(x, float):
            # floats are taken as the exact binary value they hold
            return mpmath.mpf(x)
        return mpmath.mpf(x)

    log = staticmethod(mpmath.log)
    log1p = staticmethod(mpmath.log1p)
    exp = staticmethod(mpmath.exp)
    expm1 = staticmethod(mpmath.expm1)
    sqrt = staticmethod(mpmath.sqrt)

    @staticmethod
    def floor(x) -> int:
        return int(mpmath.floor(x))

    @staticmethod
    def ceil(x) -> int:
        return int(mpmath.ceil(x))

    @staticmethod
    def power(x, y):
        return mpmath.power(x, y)

    def context(self):
        return mpmath.workdps(self.dps)


FLOAT = _FloatBackend()


def backend(dps: int | None):
    """Return the float64 backend (``dps=None``) or an mpmath backend at ``dps`` digits."""
    if dps is None:
        return FLOAT
    return _MpBackend(check_int("dps", dps, minimum=5))


# ---------------------------------------------------------------------------
# The Laplace distribution
# ---------------------------------------------------------------------------


def laplace_cdf(x, *, scale=None, rate=None):
    """Pr[Lap(0, b) <= x] = e^{x/b}/2 (x < 0), 1 - e^{-x/b}/2 (x >= 0): the one Laplace CDF.

    Give the scale b (``scale=b``) or the rate 1/b (``rate=eps``, e.g. Corollary 30's
    Pr[f + Lap(1/eps1) >= tau_L] = laplace_cdf(f - tau_L, rate=eps1)); the argument is formed
    as x / b or eps x exactly as written. A numpy array (also 0-d) or a list is evaluated
    elementwise with numpy and returns an array; a scalar is evaluated with :mod:`math` and
    returns a float (numpy's and libm's exp may differ in the last bit, so callers keep the
    evaluation they had).
    """
    if (scale is None) == (rate is None):
        raise TypeError("laplace_cdf: give exactly one of scale= and rate=")
    if isinstance(x, (np.ndarray, list, tuple)):
        x = np.asarray(x, dtype=float)
        z = x / scale if rate is None else rate * x
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))
    z = x / scale if rate is None else rate * x
    return 0.5 * math.exp(z) if z <= 0 else 1 - 0.5 * math.exp(-z)


def laplace_density(x, *, scale):
    """The Lap(0, b) density e^{-|x|/b} / (2b) (numpy, elementwise)."""
    x = np.asarray(x, dtype=float)
    return np.exp(-np.abs(x) / scale) / (2 * scale)


# ---------------------------------------------------------------------------
# Outward rounding of a ball to a float
# ---------------------------------------------------------------------------


def upper_float(x: arb) -> float:
    """A float >= every point of the ball ``x`` (``inf`` for a non-finite ball).

    ``float(x.upper())`` rounds to nearest and may fall below the ball's upper end; it is moved up
    one ulp at a time until the float, read back exactly, is at or above it."""
    if not x.is_finite():
        return math.inf
    hi = x.upper()
    v = float(hi)
    while not arb(v) >= hi:
        v = math.nextafter(v, math.inf)
    return v


def lower_float(x: arb) -> float:
    """A float <= every point of the ball ``x`` (``-inf`` for a non-finite ball)."""
    if not x.is_finite():
        return -math.inf
    lo = x.lower()
    v = float(lo)
    while not arb(v) <= lo:
        v = math.nextafter(v, -math.inf)
    return v


# ---------------------------------------------------------------------------
# One-dimensional searches
# ---------------------------------------------------------------------------

GOLDEN_RATIO_CONJUGATE = (math.sqrt(5) - 1) / 2


def golden_section_minimum(objective: Callable[[float], float], left: float, right: float,
                           iterations: int = 10) -> tuple[float, float]:
    """(x, objective(x)) of the better of the two interior probes after ``iterations`` golden-section
    steps on [left, right] (a local minimum for a unimodal objective; no guarantee otherwise).

    Each step keeps the side of the smaller probe (ties keep the left one) and places one new probe,
    so the objective is evaluated ``iterations + 2`` times."""
    g = GOLDEN_RATIO_CONJUGATE
    x1, x2 = right - g * (right - left), left + g * (right - left)
    f1, f2 = objective(x1), objective(x2)
    for _ in range(iterations):
        if f1 <= f2:
            right, x2, f2 = x2, x1, f1
            x1 = right - g * (right - left)
            f1 = objective(x1)
        else:
            left, x1, f1 = x1, x2, f2
            x2 = left + g * (right - left)
            f2 = objective(x2)
    return (x1, f1) if f1 <= f2 else (x2, f2)


def integer_ternary_minimum(objective: Callable[[int], float], low: int, high: int) -> int:
    """An integer in [low, high] minimising ``objective``: ternary search down to at most four
    candidates, then the smallest of them (the first on ties). Exact for a unimodal objective;
    each integer is evaluated at most once."""
    values: dict[int, float] = {}

    def value(k: int) -> float:
        if k not in values:
            values[k] = objective(k)
        return values[k]

    a, b = low, high
    while b - a > 3:
        m1, m2 = a + (b - a) // 3, b - (b - a) // 3
        if value(m1) <= value(m2):
            b = m2
        else:
            a = m1
    return min(range(a, b + 1), key=value)
