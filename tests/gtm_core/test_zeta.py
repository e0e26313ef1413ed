"""Definition 7's zeta: proved enclosure, mpmath and float paths, and the truncation trap."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from flint import arb, ctx

from gtm_core.zeta import euler_maclaurin_enclosure, zeta, zeta_enclosure


@pytest.fixture(autouse=True)
def _high_precision_balls():
    """Ball arithmetic inside these tests at 600 bits (restored afterwards)."""
    old = ctx.prec
    ctx.prec = 600
    yield
    ctx.prec = old


def _arb(x, digits: int = 80):
    """An mpmath number as an arb ball (its decimal string with `digits` significant digits)."""
    with mpmath.workdps(digits + 5):
        return arb(mpmath.nstr(mpmath.mpf(x), digits, strip_zeros=False))


def test_enclosure_is_narrow():
    e = zeta_enclosure(40)
    assert 2 * e.rad() < arb("1e-30")
    assert 2 * e.rad() < arb("1e-40")


def test_zeta_is_in_open_interval_one_five_quarters_rigorously():
    e = zeta_enclosure(40)
    # arb comparisons are True only when they hold for every point of the ball
    assert e > 1
    assert e < arb(5) / 4
    # and Definition 7's consequence 1/omega_t in (t ln^3(t+2), 2 t ln^3(t+2)) needs zeta < 2
    assert e < 2


def test_enclosure_matches_known_leading_digits():
    # The issue statement quotes the true value as beginning 1.2330926408131823377...
    e = zeta_enclosure(40)
    assert e.overlaps(arb("1.2330926408131823377") + arb(mid=0, rad=arb("1e-19")))
    assert not e.overlaps(arb("1.2330926408131823378") + arb(mid=0, rad=arb("1e-20")))


@pytest.mark.parametrize("dps", [30, 40, 60])
def test_mpmath_path_lies_in_the_enclosure(dps):
    e = zeta_enclosure(dps)
    # an mpmath value 30 digits more precise than the ball is narrow must lie inside it
    assert e.contains(_arb(zeta(dps=dps + 30), dps + 30))
    # at the requested precision the mpmath value is correct to ~dps digits
    v_dps = zeta(dps=dps)
    err = (e - _arb(v_dps, dps + 5)).abs_upper()
    assert err < arb(10) ** (-(dps - 1))


def test_float_path_is_the_nearest_double():
    e = zeta_enclosure(40)
    z = zeta()
    assert isinstance(z, float)
    with mpmath.workdps(50):
        nearest = float(mpmath.mpf(e.mid().str(45, radius=False)))  # correctly rounded
    assert z == nearest
    assert zeta() is zeta()  # cached, not recomputed


def test_enclosures_at_different_precisions_are_nested_consistently():
    assert zeta_enclosure(15).overlaps(zeta_enclosure(40))
    assert zeta_enclosure(100).overlaps(zeta_enclosure(40))
    assert 2 * zeta_enclosure(100).rad() < arb("1e-100")


@pytest.mark.parametrize("N,m,Y", [(1, 1, 10), (5, 1, 20), (20, 3, 40), (50, 2, 30)])
def test_loose_knobs_give_wide_but_honest_enclosures(N, m, Y):
    """Small N, few Bernoulli terms, short integration range: the remainder and tail
    bounds must still enclose the true value (they are bounds, not estimates)."""
    wide = euler_maclaurin_enclosure(N=N, m=m, Y=Y, prec=200)
    assert wide.contains(zeta_enclosure(40))
    assert wide.rad() > zeta_enclosure(40).rad()


def test_truncated_sum_is_wrong_in_the_third_digit():
    """The trap of Definition 7: 10^6 terms still miss by ~2.6e-3 (tail ~ 1/(2 ln^2 J))."""
    j = np.arange(1, 10**6 + 1, dtype=float)
    truncated = float(np.sum(1 / (j * np.log(j + 2) ** 3)))
    e = zeta_enclosure(40)
    assert not e.overlaps(arb(truncated))
    gap = float(e.mid()) - truncated
    assert 2.0e-3 < gap < 3.0e-3
    assert gap == pytest.approx(1 / (2 * math.log(1e6) ** 2), rel=0.05)


def test_mpmath_nsum_default_is_wrong_in_the_third_digit():
    with mpmath.workdps(15):
        naive = mpmath.nsum(lambda k: 1 / (k * mpmath.log(k + 2) ** 3), [1, mpmath.inf])
    e = zeta_enclosure(40)
    assert not e.overlaps(_arb(naive, 20))
    assert abs(float(e.mid()) - float(naive)) > 1e-3
