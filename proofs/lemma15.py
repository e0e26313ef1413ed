"""Lemma 15(3): the four shift inequalities, and Poisson-CDF monotonicity in lambda.

e^{eps_t} enters as a variable u >= 1 (eps_t >= 0). Monotonicity of
F(c; lambda) = e^{-lambda} P_c(lambda), P_c = sum_{k<=c} lambda^k/k!, is proved for
every c by induction: P_c' - P_c = -lambda^c/c! (base c = 0 and step c -> c+1 are
solver queries), hence F' = e^{-lambda}(P_c' - P_c) = -e^{-lambda} lambda^c/c! <= 0.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q

F_MONOTONE = "Poisson CDF F(c; lambda) is non-increasing in lambda (proved below by induction)"


def _means(q: Q, *, dp_slack=1):
    """lam1 = lambda_t(z-1) > 0, lambda_t(z) = u lam1, lambda_t(z+1) = u^2 lam1; p, p' in (0,1) eps-DP."""
    lam1, u, p, pp = Q.real("lam1 u p pp")
    q.hyp(lam1 > 0, u >= 1, p > 0, p < 1, pp > 0, pp < 1)
    q.hyp(p * u * dp_slack >= pp, p <= u * pp * dp_slack)  # e^{-eps} p' <= p <= e^{eps} p'
    return lam1, u * lam1, u * u * lam1, u, p, pp


def _case(which: str, *, dp_slack=1, wrong_shift=False):
    q = Q()
    lm, l0, lp, u, p, pp = _means(q, dp_slack=dp_slack)
    if which == "plus_continue":  # s=+1: lambda(z) p >= lambda(z-1) p'  (F non-increasing => g <= g'(z-1))
        return q.query(l0 * p >= (lp if wrong_shift else lm) * pp)
    if which == "plus_halt":  # s=+1: lambda(z) p <= lambda(z+1) p'
        return q.query(l0 * p <= (lm if wrong_shift else lp) * pp)
    if which == "minus_continue":  # s=-1: lambda(z) p <= lambda(z+1) p'
        return q.query(l0 * p <= lp * pp)
    if which == "minus_halt":  # s=-1: lambda(z) p >= lambda(z-1) p'
        return q.query(l0 * p >= lm * pp)
    raise ValueError(which)


def _statement():
    """All four inequalities on g, with F abstract and monotone."""
    q = Q()
    lm, l0, lp, u, p, pp = _means(q)
    F0, Fm, Fp = Q.real("F_z F_zm1_prime F_zp1_prime")  # F(c; lambda(z)p), F(c; lambda(z-1)p'), F(c; lambda(z+1)p')
    q.hyp(F0 >= 0, F0 <= 1, Fm >= 0, Fm <= 1, Fp >= 0, Fp <= 1)
    q.fact(z3.Implies(l0 * p >= lm * pp, F0 <= Fm), F_MONOTONE)
    q.fact(z3.Implies(l0 * p <= lp * pp, F0 >= Fp), F_MONOTONE)
    # s = +1: g = F, so g(z) <= g'(z-1) and 1-g(z) <= 1-g'(z+1)
    plus = z3.And(F0 <= Fm, 1 - F0 <= 1 - Fp)
    # s = -1: g = 1-F, so g(z) <= g'(z+1) and 1-g(z) <= 1-g'(z-1)
    minus = z3.And(1 - F0 <= 1 - Fp, F0 <= Fm)
    return q.query(z3.And(plus, minus))


def _induction_base():
    q = Q()
    P0, dP0, q0 = Q.real("P0 dP0 q0")
    q.hyp(P0 == 1, dP0 == 0, q0 == 1)  # P_0 = 1, P_0' = 0, lambda^0/0! = 1
    return q.query(dP0 - P0 == -q0)


def _induction_step(forget_derivative=False):
    q = Q()
    P, dP, qc, P1, dP1, q1 = Q.real("P dP qc P1 dP1 q1")
    q.hyp(dP - P == -qc)  # induction hypothesis
    q.hyp(P1 == P + q1)  # P_{c+1} = P_c + lambda^{c+1}/(c+1)!
    # (lambda^{c+1}/(c+1)!)' = lambda^c/c!  (power rule)
    q.hyp(dP1 == (dP if forget_derivative else dP + qc))
    q.hyp(q1 > 0)
    return q.query(dP1 - P1 == -q1)


def _cdf_derivative(k=1):
    q = Q()
    E, P, dP, qc, dF = Q.real("E P dP qc dF")  # E = e^{-lambda} > 0, qc = lambda^c/c! >= 0 (lambda >= 0)
    q.hyp(E > 0, qc >= 0, dP - P == -qc)
    q.hyp(dF == E * dP - k * E * P)  # product rule, (e^{-lambda})' = -e^{-lambda}
    return q.query(dF <= 0)


LEMMA15 = LemmaCheck(
    key="lemma15.3",
    ref="Lemma 15(3)",
    statement="g_t(z) <= g'_t(z - s_t) and 1 - g_t(z) <= 1 - g'_t(z + s_t), both signs s_t",
    steps=[
        Check("s=+1 continuation mean", "lambda(z) p >= lambda(z-1) p'", lambda: _case("plus_continue")),
        Check("s=+1 halting mean", "lambda(z) p <= lambda(z+1) p'", lambda: _case("plus_halt")),
        Check("s=-1 continuation mean", "lambda(z) p <= lambda(z+1) p'", lambda: _case("minus_continue")),
        Check("s=-1 halting mean", "lambda(z) p >= lambda(z-1) p'", lambda: _case("minus_halt")),
        Check("CDF induction base", "P_0' - P_0 = -1", _induction_base, in_chain=False),
        Check("CDF induction step", "P_c' - P_c = -q_c => P_{c+1}' - P_{c+1} = -q_{c+1}", _induction_step,
              in_chain=False),
        Check("CDF derivative sign", "F' = e^{-lambda}(P_c' - P_c) <= 0", _cdf_derivative, in_chain=False),
    ],
    statement_query=_statement,
    mutants=[
        Mutant("wrong shift direction", "s=+1: lambda(z) p >= lambda(z+1) p'", lambda: _case("plus_continue",
            wrong_shift=True)),
        Mutant("DP ratio 10% loose", "only p' <= 1.1 e^{eps} p assumed (DP ratio loosened 10%)",
               lambda: _case("plus_continue", dp_slack=1.1)),
        Mutant("induction forgets q_c", "P_{c+1}' = P_c'", lambda: _induction_step(forget_derivative=True)),
        Mutant("product rule sign", "F' = e^{-lambda}(P' + P)", lambda: _cdf_derivative(k=-1)),
    ],
)

LEMMAS = [LEMMA15]
