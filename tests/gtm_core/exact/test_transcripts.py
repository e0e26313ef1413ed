"""The transcript distribution (gtm_core/exact/transcripts.py) and its quadrature (quadrature.py)."""

from __future__ import annotations

import math

import mpmath
import pytest
from flint import arb

from gtm_core import GTMConfig, make_plan
from gtm_core import exact as E
from gtm_core.exact import quadrature as exact_quadrature
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

from tests.gtm_core.exact.golden_helpers import ManualPlan, ManualStep


# --- the distribution -----------------------------------------------------------------


def test_distribution_sums_to_one_within_its_error_bound(plan):
    d = E.transcript_distribution(plan, [0.3, 0.01, 0.6, 0.5, 0.2], dps=20)
    tot = d.total()
    assert tot.ball.contains(1)
    assert tot.error < mpmath.mpf(10) ** -18
    assert d.min_significant_digits() >= 20
    # cont_t = cont_{t+1} + halt_{t+1}
    with mpmath.workdps(40):
        for t in range(1, 5):
            lhs, rhs = d.cont[t - 1], d.cont[t].value + d.halt[t].value
            assert abs(lhs.value - rhs) <= lhs.error + d.cont[t].error + d.halt[t].error


def test_flipped_distribution_sums_to_one(flipped_plan):
    d = E.transcript_distribution(flipped_plan, [0.9, 0.99, 0.5], dps=20)
    assert d.total().ball.contains(1)
    # the flipped variant halts for large p
    assert d.halt[1].value > 0.5 * d.cont[0].value


def test_certified_mode_encloses_the_estimated_values(plan):
    p = [0.3, 0.01, 0.6]
    fast = E.transcript_distribution(plan, p, dps=20)
    cert = E.transcript_distribution(plan, p, dps=20, certified=True)
    assert cert.certified
    for a, b in zip(fast.halt + fast.cont, cert.halt + cert.cont):
        assert b.ball.overlaps(a.ball)
        assert b.error <= mpmath.mpf(10) ** -18 * b.value  # reported width: >= 18 digits
    tot = cert.total()
    assert tot.ball.contains(1)


@pytest.mark.parametrize(
    "config, p",
    [
        ("examples/default.toml", [0.3, 0.01, 0.6, 0.5, 0.2, 0.3, 1e-6, 0.45]),
        ("examples/flipped.toml", [0.93, 0.99, 0.5, 0.9, 0.97, 0.93]),
        ("examples/theorem23.toml", [0.2, 0.4, 0.05, 0.3, 0.25]),
    ],
)
def test_estimated_error_bars_contain_a_rigorous_reference(config, p):
    """The fast mode's coefficient-decay error estimate is honest: every value lies within
    its reported error of a certified enclosure computed at 10 more digits, and the
    reported error still gives >= 20 digits."""
    pl = make_plan(GTMConfig.load(config))
    fast = E.transcript_distribution(pl, p, dps=20)
    ref = E.transcript_distribution(pl, p, dps=30, certified=True)
    assert ref.min_significant_digits() >= 28
    with mpmath.workdps(50):
        for a, b in zip(fast.halt + fast.cont, ref.halt + ref.cont):
            assert abs(a.value - b.value) <= a.error + b.error
            assert a.error <= mpmath.mpf(10) ** -20 * a.value


def test_noise_free_step_is_a_poisson_cdf():
    """eps_t = 0: no noise, h = F(c; rho p) exactly, independent of eta_1."""
    pl = ManualPlan(tau1=2.0, mu1=3.0, steps_=(ManualStep(1, 1, 4, 10.0, 0.0, float("inf")),))
    d = E.transcript_distribution(pl, ["0.25"], dps=30)
    with mpmath.workdps(40):
        F = mpmath.gammainc(5, mpmath.mpf(10) * mpmath.mpf("0.25"), mpmath.inf, regularized=True)
        assert abs(d.cont[0].value - F) < mpmath.mpf(10) ** -28
        assert abs(d.halt[0].value - (1 - F)) < mpmath.mpf(10) ** -28


def test_infinite_tau2_with_positive_eps_is_unsupported():
    pl = ManualPlan(tau1=2.0, mu1=3.0, steps_=(ManualStep(1, 1, 4, 10.0, 0.1, float("inf")),))
    with pytest.raises(UnsupportedConfiguration, match="tau2=inf"):
        E.transcript_distribution(pl, [0.25], dps=10)


@pytest.mark.parametrize(
    "p,match",
    [([], "must not be empty"), ([1.5], r"p\[1\] must be in \[0, 1\]"), ([-0.1], r"p\[1\]"), (["x"], "expected a number")],
)
def test_bad_streams_are_rejected(plan, p, match):
    with pytest.raises(InvalidParameter, match=match):
        E.transcript_distribution(plan, p, dps=10)


def test_bad_dps_is_rejected(plan):
    with pytest.raises(InvalidParameter, match="dps"):
        E.transcript_distribution(plan, [0.1], dps=2)


# --- the certified mode's ellipse bounds hold at complex points ---------------------------


def _complex_h(ev, x):
    """h and 1 - h from the closed form at complex x (mpmath), principal branches (Re a > 0)."""
    mp = mpmath.mp
    s, c = ev.s, ev.c
    sigma = mpmath.mpf(ev.sigma.mid().str(40, radius=False))
    lnA = mpmath.mpf(ev.lnA.mid().str(40, radius=False))
    eps = mpmath.mpf(ev.eps.mid().str(40, radius=False))
    fac = mpmath.factorial(c)
    if s == 1:
        la = lnA - eps * x
        a = mp.exp(la)
        tail = mp.exp(sigma * la) * mpmath.gammainc(c + 1 - sigma, a) / fac
        Q = mpmath.gammainc(c + 1, a) / fac
        return Q - tail, 1 - Q + tail
    lb = lnA + eps * x
    b = mp.exp(lb)
    tail = mp.exp(-sigma * lb) * mpmath.gammainc(c + 1 + sigma, 0, b) / fac
    Q = mpmath.gammainc(c + 1, b) / fac
    return 1 - Q - tail, Q + tail


@pytest.mark.parametrize("path", ["examples/default.toml", "examples/flipped.toml"])
@pytest.mark.parametrize(
    "lo,hi,rho_e", [(0.0, 2.0, 1.5), (8.0, 10.0, 2.5), (9.0, 11.0, 7.0), (12.0, 18.0, 1.5), (30.0, 54.0, 1.5)]
)
def test_ellipse_bounds_dominate_the_analytic_continuation(path, lo, hi, rho_e):
    """The certified mode's bounds on |h|, |1-h| over a Bernstein ellipse hold at points of the
    ellipse (mpmath continuation).  Mutant check (done by hand): ignoring the argument of the
    count mean (cos theta = 1) makes the (9, 11, 7) case fail: |Q(c+1, a)| ~ 3e4 there."""
    pl = make_plan(GTMConfig.load(path))
    bits = 120
    with E.working_precision(bits):
        ev = E.StepEval(E.step_models(pl, [0.3 if pl.step(1).s == 1 else 0.93])[0], E.to_arb(pl.mu1), bits)
        L, mid = (hi - lo) / 2, (hi + lo) / 2
        Y = L * (rho_e - 1 / rho_e) / 2
        assert float(ev.eps.mid()) * Y < 1.2, "test parameters must keep the ellipse short"
        a_semi = L * (rho_e + 1 / rho_e) / 2
        hb, hh = exact_quadrature._ellipse_abs_bounds(ev, arb(mid - a_semi), arb(mid + a_semi), arb(Y))
    with mpmath.workdps(40):
        for k in range(12):
            phi = 2 * math.pi * k / 12
            z = mpmath.mpc(mid + a_semi * math.cos(phi), Y * math.sin(phi))
            cont, halt = _complex_h(ev, z)
            # the bounds are exact arb numbers (120 bits); print them with enough digits that the
            # decimal conversion cannot round below them, and allow only 40-digit evaluation error
            slack = 1 + mpmath.mpf(10) ** -35
            assert abs(cont) <= mpmath.mpf(hb.upper().str(60, radius=False)) * slack
            assert abs(halt) <= mpmath.mpf(hh.upper().str(60, radius=False)) * slack
