"""Directed rounding of planned float64 parameters, so the deployed numbers satisfy the
lemmas' preconditions *exactly*, not just up to rounding.

The planners compute in float64. A float64 result can land one ulp on the wrong side of an
inequality the privacy or accuracy proof needs (e.g. 1/tau_1 + 2/tau_2 <= eps, or
rho p* >= lambda^l(c, beta^II)). Each helper here checks the inequality rigorously - exact
rationals where the quantities are rational, mpmath interval arithmetic (outward rounded) for
logarithms, square roots and exponentials - and moves the float one ulp at a time in the safe
direction until it holds.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction

import mpmath
from flint import arb
from flint import ctx as flint_ctx

from ..errors import UnsupportedConfiguration
from ..zeta import zeta_enclosure

_IV_DPS = 60
_MAX_NUDGES = 64


@contextlib.contextmanager
def _iv_precision():
    """mpmath's interval context has no workdps(); set and restore its precision."""
    old = mpmath.iv.dps
    mpmath.iv.dps = _IV_DPS
    try:
        yield
    finally:
        mpmath.iv.dps = old


@contextlib.contextmanager
def _arb_precision(bits: int = 256):
    """python-flint's arb precision is global: set and restore it."""
    old = flint_ctx.prec
    flint_ctx.prec = bits
    try:
        yield
    finally:
        flint_ctx.prec = old


def _exact_iv(x: float):
    """The exact value of a float as a (degenerate) interval: floats are dyadic rationals."""
    f = Fraction(float(x))
    with _iv_precision():
        return mpmath.iv.mpf(f.numerator) / mpmath.iv.mpf(f.denominator)


def iv_log_inv(alpha: float):
    """Interval enclosure of L = ln(1/alpha) for a float alpha."""
    with _iv_precision():
        return -mpmath.iv.log(_exact_iv(alpha))


def iv_lambda_left(c: int, alpha: float):
    """Enclosure of lambda^l(c, alpha) = c + L + sqrt(2cL + L^2) (equation (3))."""
    with _iv_precision():
        L = iv_log_inv(alpha)
        cc = mpmath.iv.mpf(int(c))
        return cc + L + mpmath.iv.sqrt(2 * cc * L + L * L)


def iv_lambda_right(c: int, alpha: float):
    """Enclosure of lambda^r(c, alpha) = c + 1 - sqrt(2(c+1)L) (equation (4))."""
    with _iv_precision():
        L = iv_log_inv(alpha)
        y = mpmath.iv.mpf(int(c) + 1)
        return y - mpmath.iv.sqrt(2 * y * L)


def _lo(x) -> mpmath.mpf:
    """Lower endpoint as an exact mpf (created at a higher precision than the interval's, so
    the conversion is exact; comparisons between mpfs are exact)."""
    with mpmath.workdps(_IV_DPS + 20):
        return mpmath.mpf(x.a)


def _hi(x) -> mpmath.mpf:
    with mpmath.workdps(_IV_DPS + 20):
        return mpmath.mpf(x.b)


def _nudge(x: float, ok, direction: float) -> float:
    """Move x in `direction` until ok(x). One ulp at a time at first, then doubling the
    stride: a float computed as exp(large) can be hundreds of ulps short (the relative error
    of the exponent is multiplied by its size), which single-ulp steps would not reach.
    `ok` is monotone in the safe direction, so overshooting only makes x more conservative
    (by at most the size of the last stride)."""
    stride = 1
    for i in range(_MAX_NUDGES):
        if ok(x):
            return x
        if i < 8:
            x = math.nextafter(x, direction)
        else:
            x = x + math.copysign(stride * math.ulp(x), direction)
            stride *= 2
    raise ArithmeticError("directed rounding did not converge")  # pragma: no cover - float64 suffices


def round_step_failure_down(beta_t: float, t: int, beta: float) -> float:
    """Make beta_t <= omega_t beta = beta / (zeta t ln^3(t+2)) hold rigorously (Definition 7), so
    that the planned shares sum to at most beta over any horizon, not just up to rounding. zeta is
    the proved arb enclosure of :func:`gtm_core.zeta.zeta_enclosure`."""
    with _arb_precision():
        tt = arb(int(t))
        exact_share = arb(float(beta)) / (zeta_enclosure(40) * tt * (tt + 2).log() ** 3)

        def ok(b):
            return bool(arb(b) <= exact_share)  # arb(float) is exact

        return _nudge(beta_t, ok, 0.0)


def share_at_most(total: float, parts: int) -> float:
    """The largest float x with parts * x <= total exactly: a failure probability split into
    `parts` equal shares (e.g. beta_t/6 per error type, Theorem 23) whose sum never exceeds it."""
    x = total / parts
    while parts * Fraction(x) > Fraction(total):
        x = math.nextafter(x, 0.0)
    return x


def round_noise_scales_theorem21(tau1: float, tau2: float, epsilon: float) -> tuple[float, float]:
    """Make 1/tau1 + 2/tau2 <= eps hold exactly in rationals (Lemma 17), nudging the taus up."""
    eps = Fraction(epsilon)
    if not (math.isfinite(tau1) and math.isfinite(tau2)):
        raise UnsupportedConfiguration(
            f"epsilon={epsilon!r} is too small: the noise scales tau1={tau1!r}, tau2={tau2!r} overflow float64")

    def ok(pair):
        t1, t2 = pair
        return 1 / Fraction(t1) + 2 / Fraction(t2) <= eps

    t1, t2 = tau1, tau2
    for _ in range(_MAX_NUDGES):
        if ok((t1, t2)):
            return t1, t2
        t1, t2 = math.nextafter(t1, math.inf), math.nextafter(t2, math.inf)
    raise ArithmeticError("directed rounding did not converge")  # pragma: no cover


def round_tau1_at_least(tau1: float, inverse_bound: float) -> float:
    """Make 1/tau1 <= inverse_bound exactly (Theorem 23: 1/tau1 = eps_C)."""
    b = Fraction(inverse_bound)
    return _nudge(tau1, lambda t: 1 / Fraction(t) <= b, math.inf)


def round_tau2_theorem23(tau2: float, eps_t: float, c_h: float, beta_t: float) -> float:
    """Make 2/tau2 <= C_H eps_t ln(4/beta_t) hold rigorously (Theorem 23's halting loss)."""
    if math.isinf(tau2):
        return tau2

    def ok(t):
        with _iv_precision():
            rhs = _exact_iv(c_h) * _exact_iv(eps_t) * (iv_log_inv(beta_t) + mpmath.iv.log(4))
            return _hi(2 / _exact_iv(t)) <= _lo(rhs)

    return _nudge(tau2, ok, math.inf)


def round_mu1(mu1: float, tau1: float, beta: float) -> float:
    """Make mu1 >= tau1 ln(4/beta) hold rigorously, so Pr[eta_1 > mu_1] <= beta/4 (Lemma 19)."""

    def ok(m):
        with _iv_precision():
            need = _exact_iv(tau1) * (mpmath.iv.log(4) + iv_log_inv(beta))
            return _lo(_exact_iv(m)) >= _hi(need)

    return _nudge(mu1, ok, math.inf)


def round_noise_range(Lambda: float, eps_t: float, mu1: float, tau2: float, beta_t: float) -> float:
    """Make Lambda >= exp(eps_t (mu1 + tau2 ln(4/beta_t))) hold rigorously (Lemma 19(2), c_G = 1/4)."""
    if eps_t == 0:
        return max(Lambda, 1.0)

    def ok(L):
        with _iv_precision():
            need = mpmath.iv.exp(
                _exact_iv(eps_t) * (_exact_iv(mu1) + _exact_iv(tau2) * (mpmath.iv.log(4) + iv_log_inv(beta_t)))
            )
            return _lo(_exact_iv(L)) >= _hi(need)

    return _nudge(Lambda, ok, math.inf)


def round_base_rate_above(rho: float, c: int, beta_II: float, p_star: float) -> float:
    """s = +1 (Lemma 20(1)): make rho p* >= lambda^l(c, beta^II) hold rigorously (nudging rho up)."""

    def ok(r):
        with _iv_precision():
            return _lo(_exact_iv(r) * _exact_iv(p_star)) >= _hi(iv_lambda_left(c, beta_II))

    return _nudge(rho, ok, math.inf)


def round_base_rate_below(rho: float, c: int, beta_II: float, q_star: float) -> float:
    """s = -1 (Lemma 20(2)): make rho q* <= lambda^r(c, beta^II) hold rigorously (nudging rho down)."""

    def ok(r):
        with _iv_precision():
            return _hi(_exact_iv(r) * _exact_iv(q_star)) <= _lo(iv_lambda_right(c, beta_II))

    return _nudge(rho, ok, -math.inf)


def round_rejection_threshold(p_bar: float, s: int, p_star: float, gamma: float, Lambda: float) -> float:
    """Make the claimed p_bar no larger than the chosen variant's threshold, exactly in rationals:
    s = +1: p_bar gamma Lambda <= p*;  s = -1: p_bar <= 1 - gamma Lambda (1 - p*)."""
    ps, g, L = Fraction(p_star), Fraction(gamma), Fraction(Lambda)
    if s == 1:
        ok = lambda pb: Fraction(pb) * g * L <= ps  # noqa: E731
    else:
        ok = lambda pb: Fraction(pb) <= 1 - g * L * (1 - ps)  # noqa: E731
    return _nudge(p_bar, ok, -math.inf)


def round_product_up(x: float, y: float) -> float:
    """The smallest float >= x * y exactly (e.g. lambda_max = rho Lambda, an upper bound)."""
    exact = Fraction(x) * Fraction(y)
    return _nudge(x * y, lambda v: Fraction(v) >= exact, math.inf)


def round_crossover_up(phi: float, eps_t: float, delta_t: float) -> float:
    """Lemma 24(2)-(3): make phi >= delta / (e^eps - 1 + 2 delta) hold rigorously (nudging phi up),
    so the smoothed mechanism is really eps_t-DP."""

    def ok(f):
        with _iv_precision():
            d = _exact_iv(delta_t)
            need = d / (mpmath.iv.exp(_exact_iv(eps_t)) - 1 + 2 * d)
            return _lo(_exact_iv(f)) >= _hi(need)

    return _nudge(phi, ok, math.inf)


def evaluation_budget(factor: float, lam_bar: float) -> int:
    """The smallest integer >= factor * lam_bar, rigorously; a factor equal to float(e) is read as
    Euler's number itself (Lemma 22(1): Pr[Po(lam_bar) > e lam_bar] <= e^{-lam_bar})."""
    with _iv_precision():
        f = mpmath.iv.e if factor == math.e else _exact_iv(factor)
        need = _hi(f * _exact_iv(lam_bar))
    # the ceiling from the bound's exact mantissa and exponent: mpmath.ceil would first round it to
    # the working precision (53 bits), which can round a budget above 2^53 *down* below the bound
    man, exp = need.man_exp
    return int(man << exp) if exp >= 0 else -((-int(man)) >> -exp)
