"""Lemma 55 (Poisson Chernoff bounds, multiplicative form): the exponent algebra.

ln c, ln lambda and ln(c/lambda) are variables tied by ln(c/lambda) = ln c - ln lambda;
the sign of the optimal t = ln(c/lambda) follows from monotonicity of ln. The
application in Lemma 22 (c = e lambda gives e^{-lambda}) is checked as well.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _optimum():
    q = Q()
    c, lam = Q.real("c lam")
    q.hyp(c > 0, lam > 0)
    t = q.log("t", c / lam)  # e^t = c/lam
    return q.query(lam * (c / lam - 1) - t * c == c - lam - c * t)


def _rewrite(k=1):
    q = Q()
    c, lam = Q.real("c lam")
    q.hyp(c > 0, lam > 0)
    t = q.log("t", c / lam)
    lc = q.log("ln_c", c)
    ll = q.log("ln_lam", lam)
    q.fact(t == lc - ll, "ln(c/lam) = ln c - ln lam")
    # ln of e^{-lam} (e lam)^c / c^c
    return q.query(c - lam - c * t == -lam + c * (k + ll) - c * lc)


def _sign(flip=False):
    q = Q()
    c, lam = Q.real("c lam")
    q.hyp(c > 0, lam > 0)
    t = q.log("t", c / lam)
    q.fact(z3.And(z3.Implies(c > lam, t > 0), z3.Implies(c < lam, t < 0), z3.Implies(c == lam, t == 0)),
           "ln increasing, ln 1 = 0")
    if flip:
        return q.query(z3.Implies(c > lam, t < 0))
    return q.query(z3.And(z3.Implies(c > lam, t > 0), z3.Implies(c < lam, t < 0)))


def _lemma22_use(k=1):
    q = Q()
    lam = Q.real("lam")
    q.hyp(lam > 0)
    e = q.exp("e", z3.RealVal(1))
    c = e * lam  # c = e lam
    lc = q.log("ln_c", c)
    ll = q.log("ln_lam", lam)
    q.fact(lc == 1 + ll, "ln(e lam) = 1 + ln lam")
    q.fact(e > 2, "e > 2")
    return q.query(-lam + c * (1 + ll) - c * lc == -k * lam)


LEMMA55 = LemmaCheck(
    key="lemma55",
    ref="Lemma 55",
    statement="c > lam: Pr[Po(lam) >= c] <= e^{-lam}(e lam)^c/c^c; c < lam: Pr[Po(lam) <= c] <= same; "
    "c = e lam gives e^{-lam} (Lemma 22)",
    steps=[
        Check("optimal exponent", "lam(e^t - 1) - tc = c - lam - c ln(c/lam) at e^t = c/lam", _optimum),
        Check("rewrite", "c - lam - c ln(c/lam) = ln(e^{-lam}(e lam)^c / c^c)", _rewrite),
        Check("sign of t", "c > lam => t > 0 (upper tail), c < lam => t < 0 (lower tail)", _sign),
        Check("Lemma 22 use", "c = e lam => exponent = -lam", _lemma22_use),
    ],
    mutants=[
        Mutant("(e lam)^c -> (e^{1.1} lam)^c", "rewrite with a moved constant", lambda: _rewrite(k=1.1)),
        Mutant("sign flipped", "c > lam => t < 0", lambda: _sign(flip=True)),
        Mutant("e^{-lam} -> e^{-1.1 lam}", "Lemma 22 use with a moved constant", lambda: _lemma22_use(k=1.1)),
    ],
)

LEMMAS = [LEMMA55]
