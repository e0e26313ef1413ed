"""Lemma 54 (Poisson Chernoff bounds): the analytic inequalities and the exponent algebra.

* upper tail: h(x) = (1+x) ln(1+x) - x >= x^2/(2(1+x)) for x >= 0 -- arb branch-and-bound on
  [0, 4] (the Taylor test closes the touching point x = 0), the unbounded direction x >= 4
  handed to the solvers with the certified bound ln(1+x) >= ln 5 > 1.6;
* lower tail: g(y) = -y - (1-y) ln(1-y) <= -y^2/2 on [0, 1] (0 ln 0 = 0) -- arb branch-and-bound;
* the algebra from the optimal Chernoff parameter to the stated exponents.
"""

from __future__ import annotations

import mpmath
import z3
from flint import arb

from .core import Check, LemmaCheck, Mutant, Q
from .interval import Certificate, xlogx

TAIL_X = 4
LN5_LOWER = z3.RealVal("8/5")


def _h_gap_ball(x, k=1.0):
    return (1 + x) * (1 + x).log() - x - k * x * x / (2 * (1 + x))


def _h_gap_mp(x, k=1):
    return (1 + x) * mpmath.log(1 + x) - x - k * x * x / (2 * (1 + x))


H_CERT = Certificate(
    name="h(x) >= x^2/(2(1+x)) on [0, 4]",
    description="h(x) = (1+x) ln(1+x) - x",
    f_ball=_h_gap_ball,
    f_series=_h_gap_ball,
    f_mp=_h_gap_mp,
    lo=0.0,
    hi=float(TAIL_X),
    order=4,
)


def _h_mutant(k):
    return Certificate(
        name=f"h(x) >= {k} x^2/(2(1+x))", description="mutant", lo=0.0, hi=float(TAIL_X),
        f_ball=lambda x: _h_gap_ball(x, k), f_mp=lambda x: _h_gap_mp(x, mpmath.mpf(k)),
    )


def _h_lower_tail_form_mutant():
    """h(x) >= x^2/2 (the lower-tail exponent): false for x > 0."""
    return Certificate(
        name="h(x) >= x^2/2", description="mutant", lo=0.0, hi=float(TAIL_X),
        f_ball=lambda x: (1 + x) * (1 + x).log() - x - x * x / 2,
        f_mp=lambda x: (1 + x) * mpmath.log(1 + x) - x - x * x / 2,
    )


def _h_tail():
    """x >= 4: with L = ln(1+x) >= ln 5 >= 8/5 (arb-checked) the inequality is polynomial."""
    if not arb(5).log() > arb(8) / 5:  # the certified constant of the tail step
        raise RuntimeError("arb could not certify ln 5 > 8/5")
    q = Q()
    x = Q.real("x")
    q.hyp(x >= TAIL_X)
    L = q.log("L", 1 + x)
    q.fact(L >= LN5_LOWER, "ln increasing, ln 5 > 8/5 (arb)")
    return q.query((1 + x) * L - x >= x * x / (2 * (1 + x)))


def _g_gap_ball(y, k=0.5):
    return -y - xlogx(1 - y) + k * y * y


def _g_gap_series(y):
    return -y - (1 - y) * (1 - y).log() + 0.5 * y * y


def _g_gap_mp(y, k=mpmath.mpf("0.5")):
    v = 1 - y
    return -y - (v * mpmath.log(v) if v > 0 else 0) + k * y * y


G_CERT = Certificate(
    name="g(y) <= -y^2/2 on [0, 1]",
    description="g(y) = -y - (1-y) ln(1-y), 0 ln 0 = 0",
    f_ball=_g_gap_ball,
    f_series=_g_gap_series,
    f_mp=_g_gap_mp,
    lo=0.0,
    hi=1.0,
    sense="<=",
    order=4,
)


def _g_mutant():
    return Certificate(
        name="g(y) <= -0.55 y^2", description="mutant", lo=0.0, hi=1.0, sense="<=",
        f_ball=lambda y: _g_gap_ball(y, 0.55), f_mp=lambda y: _g_gap_mp(y, mpmath.mpf("0.55")),
    )


def _upper_exponent(sign=1):
    q = Q()
    lam, u = Q.real("lam u")
    q.hyp(lam > 0, u >= 0)
    x = u / lam
    L = q.log("L", 1 + x)  # t = ln(1 + u/lam), e^t = 1 + x
    return q.query(lam * ((1 + x) - 1) - L * (lam + sign * u) == -lam * ((1 + x) * L - x))


def _upper_bound():
    q = Q()
    lam, u, H = Q.real("lam u H")  # H = h(u/lam)
    q.hyp(lam > 0, u >= 0)
    x = u / lam
    q.hyp(H >= x * x / (2 * (1 + x)))
    return q.query(-lam * H <= -u * u / (2 * (lam + u)))


def _upper_chain():
    q = Q()
    lam, u, H, expo = Q.real("lam u H exponent")
    q.hyp(lam > 0, u >= 0)
    x = u / lam
    q.hyp(z3.Implies(z3.And(x >= 0, x <= TAIL_X), H >= x * x / (2 * (1 + x))))  # certificate
    q.hyp(z3.Implies(x >= TAIL_X, H >= x * x / (2 * (1 + x))))  # tail step
    q.hyp(expo == -lam * H)  # exponent algebra step
    q.hyp(_upper_bound().implication())
    return q.query(expo <= -u * u / (2 * (lam + u)))


def _lower_exponent():
    q = Q()
    lam, u = Q.real("lam u")
    q.hyp(lam > 0, u >= 0, u < lam)
    y = u / lam
    M = q.log("M", 1 - y)  # t = ln(1 - u/lam) < 0, e^t = 1 - y
    return q.query(lam * ((1 - y) - 1) - M * (lam - u) == lam * (-y - (1 - y) * M))


def _lower_bound(k=2):
    q = Q()
    lam, u, G = Q.real("lam u G")  # G = g(u/lam)
    q.hyp(lam > 0, u >= 0, u <= lam)
    y = u / lam
    q.hyp(G <= -y * y / 2)
    return q.query(lam * G <= -u * u / (k * lam))


def _lower_edge():
    """u = lam: Pr[M <= 0] = e^{-lam} <= e^{-lam/2}."""
    q = Q()
    lam = Q.real("lam")
    q.hyp(lam > 0)
    a = q.exp("e_lam", -lam)
    b = q.exp("e_half", -lam / 2)
    q.fact(z3.Implies(-lam <= -lam / 2, a <= b), "exp is increasing")
    return q.query(a <= b)


def _lower_chain():
    q = Q()
    lam, u, G, expo = Q.real("lam u G exponent")
    q.hyp(lam > 0, u >= 0, u <= lam)
    y = u / lam
    q.hyp(z3.Implies(z3.And(y >= 0, y <= 1), G <= -y * y / 2))  # certificate on [0, 1]
    q.hyp(expo == lam * G)  # exponent algebra step
    q.hyp(_lower_bound().implication())
    return q.query(expo <= -u * u / (2 * lam))


LEMMA54_1 = LemmaCheck(
    key="lemma54.1",
    ref="Lemma 54(1)",
    statement="Pr[Po(lam) >= lam + u] <= exp(-u^2/(2(lam+u))), via h(x) >= x^2/(2(1+x))",
    steps=[
        H_CERT,
        Check("h tail x >= 4", "ln(1+x) >= 8/5 => (1+x)L - x >= x^2/(2(1+x))", _h_tail),
        Check("optimal exponent", "lam(e^t - 1) - t(lam+u) = -lam h(u/lam) at t = ln(1+u/lam)", _upper_exponent),
        Check("bound", "h >= x^2/(2(1+x)) => -lam h <= -u^2/(2(lam+u))", _upper_bound),
    ],
    chain=_upper_chain,
    mutants=[
        Mutant("1.1 x^2/(2(1+x))", "certificate claim with a 10% larger constant", lambda: _h_mutant(1.1)),
        Mutant("h(x) >= x^2/2", "certificate claim with the lower-tail form", _h_lower_tail_form_mutant),
        Mutant("t(lam - u)", "exponent algebra with a flipped sign", lambda: _upper_exponent(sign=-1)),
    ],
)

LEMMA54_2 = LemmaCheck(
    key="lemma54.2",
    ref="Lemma 54(2)",
    statement="Pr[Po(lam) <= lam - u] <= exp(-u^2/(2 lam)), via g(y) <= -y^2/2",
    steps=[
        G_CERT,
        Check("optimal exponent", "lam(e^t - 1) - t(lam-u) = lam g(u/lam) at t = ln(1-u/lam)", _lower_exponent),
        Check("bound", "g <= -y^2/2 => lam g <= -u^2/(2 lam)", _lower_bound),
        Check("edge u = lam", "e^{-lam} <= e^{-lam/2}", _lower_edge),
    ],
    chain=_lower_chain,
    mutants=[
        Mutant("g(y) <= -0.55 y^2", "certificate claim with a 10% larger constant", _g_mutant),
        Mutant("-u^2/(1.8 lam)", "bound with a moved constant", lambda: _lower_bound(k=1.8)),
    ],
)

LEMMAS = [LEMMA54_1, LEMMA54_2]
