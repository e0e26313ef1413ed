"""Lemma 10 (Poisson and exponential facts): items (3a), (3b), (4), (5).

Item 3 rests on Lemma 54's Chernoff bounds (certified in :mod:`proofs.lemma54`);
here the algebra from the bound to the thresholds lambda^l, lambda^r is checked,
including the necessity of c + 1 >= 2L in (3b).
"""

from __future__ import annotations

import z3

from .common import lam_left, lam_right
from .core import Check, LemmaCheck, Mutant, Q

EXP_MONOTONE = "exp is increasing: a <= b => e^a <= e^b"
LEMMA54_LOWER = "Lemma 54(2) (certified): Pr[Po(lam) <= lam - u] <= exp(-u^2/(2 lam)) for u >= 0"
LEMMA54_UPPER = "Lemma 54(1) (certified): Pr[Po(lam) >= lam + u] <= exp(-u^2/(2(lam+u))) for u >= 0"


# ---------------------------------------------------------------------------
# (3a) left tail
# ---------------------------------------------------------------------------


def _3a_root(k_lin=1, k_rad=2) -> "Q":
    q = Q()
    lam, c, L = Q.real("lam c L")
    q.hyp(c >= 0, L > 0)
    s = q.sqrt("sl", k_rad * c * L + L * L)
    q.hyp(lam >= c + k_lin * L + s)
    return q.query(z3.And(lam > 0, lam - c >= 0, (lam - c) * (lam - c) >= 2 * lam * L))


def _3a_exponent() -> "Q":
    q = Q()
    lam, c, L = Q.real("lam c L")
    q.hyp(lam > 0, L > 0, (lam - c) * (lam - c) >= 2 * lam * L)
    E = -(lam - c) * (lam - c) / (2 * lam)
    bound = q.exp("chernoff_left", E)
    alpha = q.exp("alpha", -L)
    q.fact(z3.Implies(E <= -L, bound <= alpha), EXP_MONOTONE)
    return q.query(bound <= alpha)


def _3a_statement() -> "Q":
    q = Q()
    lam, c, L, P = Q.real("lam c L P")
    q.hyp(c >= 0, L > 0)
    ll, _ = lam_left(q, c, L)
    q.hyp(lam >= ll)
    bound = q.exp("chernoff_left", -(lam - c) * (lam - c) / (2 * lam))
    alpha = q.exp("alpha", -L)
    q.fact(z3.Implies(z3.And(lam > 0, lam - c >= 0), P <= bound), LEMMA54_LOWER)
    return q.query(P <= alpha)


LEMMA10_3A = LemmaCheck(
    key="lemma10.3a",
    ref="Lemma 10(3a)",
    statement="lambda >= lambda^l(c, alpha)  =>  Pr[Po(lambda) <= c] <= alpha",
    steps=[
        Check("larger root", "lambda >= lambda^l(c,alpha) => lambda >= c and (lambda-c)^2 >= 2 lambda L", _3a_root),
        Check("exponent", "(lambda-c)^2 >= 2 lambda L => exp(-(lambda-c)^2/(2 lambda)) <= alpha", _3a_exponent),
    ],
    statement_query=_3a_statement,
    mutants=[
        Mutant("L -> 0.9L", "linear term of lambda^l shrunk by 10%", lambda: _3a_root(k_lin=0.9)),
        Mutant("2cL -> 1.8cL", "radicand 2cL of lambda^l shrunk by 10%", lambda: _3a_root(k_rad=1.8)),
    ],
)


# ---------------------------------------------------------------------------
# (3b) right tail, with necessity of c + 1 >= 2L
# ---------------------------------------------------------------------------


def _3b_root(k_rad=2) -> "Q":
    q = Q()
    lam, c, L = Q.real("lam c L")
    q.hyp(c >= 0, L > 0, c + 1 >= 2 * L, lam > 0)
    s = q.sqrt("sr", k_rad * (c + 1) * L)
    q.hyp(lam <= c + 1 - s)
    return q.query(z3.And(c + 1 - lam >= 0, (c + 1 - lam) * (c + 1 - lam) >= 2 * (c + 1) * L))


def _3b_necessity(k=2) -> "Q":
    q = Q()
    lam, c, L = Q.real("lam c L")
    q.hyp(c >= 0, L > 0, c + 1 < k * L, lam >= 0, lam <= c + 1)
    return q.query((c + 1 - lam) * (c + 1 - lam) < 2 * (c + 1) * L)


def _3b_exponent() -> "Q":
    q = Q()
    lam, c, L = Q.real("lam c L")
    q.hyp(c >= 0, L > 0, (c + 1 - lam) * (c + 1 - lam) >= 2 * (c + 1) * L)
    E = -(c + 1 - lam) * (c + 1 - lam) / (2 * (c + 1))
    bound = q.exp("chernoff_right", E)
    alpha = q.exp("alpha", -L)
    q.fact(z3.Implies(E <= -L, bound <= alpha), EXP_MONOTONE)
    return q.query(bound <= alpha)


def _3b_denominator() -> "Q":
    q = Q()
    lam, c = Q.real("lam c")
    q.hyp(c >= 0, lam > 0, lam <= c + 1)
    u = c + 1 - lam
    return q.query(z3.And(u >= 0, 2 * (lam + u) == 2 * (c + 1)))


def _3b_statement() -> "Q":
    q = Q()
    lam, c, L, P = Q.real("lam c L P")
    q.hyp(c >= 0, L > 0, c + 1 >= 2 * L, lam > 0)
    lr, _ = lam_right(q, c, L)
    q.hyp(lam <= lr)
    bound = q.exp("chernoff_right", -(c + 1 - lam) * (c + 1 - lam) / (2 * (c + 1)))
    alpha = q.exp("alpha", -L)
    q.fact(z3.Implies(z3.And(lam > 0, c + 1 - lam >= 0), P <= bound), LEMMA54_UPPER + " with lam+u = c+1")
    return q.query(P <= alpha)


LEMMA10_3B = LemmaCheck(
    key="lemma10.3b",
    ref="Lemma 10(3b)",
    statement="c+1 >= 2 ln(1/alpha) and lambda <= lambda^r(c, alpha)  =>  Pr[Po(lambda) >= c+1] <= alpha; "
    "and c+1 >= 2L is necessary for (c+1-lambda)^2 >= 2(c+1)L with 0 <= lambda <= c+1",
    steps=[
        Check("root", "lambda <= lambda^r => u = c+1-lambda >= 0 and u^2 >= 2(c+1)L", _3b_root),
        Check("denominator", "lambda + u = c + 1", _3b_denominator),
        Check("exponent", "u^2 >= 2(c+1)L => exp(-u^2/(2(c+1))) <= alpha", _3b_exponent),
        Check("necessity", "c+1 < 2L and 0 <= lambda <= c+1 => (c+1-lambda)^2 < 2(c+1)L", _3b_necessity,
              in_chain=False),
    ],
    statement_query=_3b_statement,
    mutants=[
        Mutant("necessity 2L -> 2.2L", "necessity claimed for c+1 < 2.2L (10% larger)", lambda: _3b_necessity(k=2.2)),
        Mutant("2(c+1)L -> 1.8(c+1)L", "radicand of lambda^r shrunk by 10%", lambda: _3b_root(k_rad=1.8)),
    ],
)


# ---------------------------------------------------------------------------
# (4) algebraic inversion
# ---------------------------------------------------------------------------


def _inv_vars(q: Q, k_lin=1, k_r=2):
    lam, x, L = Q.real("lam x L")
    q.hyp(lam >= 0, x >= 0, L > 0, x + 1 > 2 * L)
    y = x + 1
    s1 = q.sqrt("s1", k_r * y * L)
    s2 = q.sqrt("s2", 2 * lam * L + L * L)
    return lam, y, L, s1, s2, k_lin


def _inv_f1():
    q = Q()
    lam, y, L, s1, s2, _ = _inv_vars(q)
    q.hyp(lam <= y - s1)
    return q.query(z3.And(y >= lam, (y - lam) * (y - lam) >= 2 * y * L))


def _inv_f2(k_lin=1):
    q = Q()
    lam, y, L, s1, s2, _ = _inv_vars(q)
    q.hyp(y >= lam, (y - lam) * (y - lam) >= 2 * y * L)
    return q.query(y >= lam + k_lin * L + s2)


def _inv_b1():
    q = Q()
    lam, y, L, s1, s2, _ = _inv_vars(q)
    q.hyp(y >= lam + L + s2)
    return q.query(z3.And(y >= lam, (y - lam) * (y - lam) >= 2 * y * L))


def _inv_b2(k_r=2):
    q = Q()
    lam, y, L, s1, s2, _ = _inv_vars(q, k_r=k_r)
    q.hyp(y >= lam, (y - lam) * (y - lam) >= 2 * y * L)
    return q.query(lam <= y - s1)


def _inv_statement(k_lin=1, k_r=2):
    q = Q()
    lam, y, L, s1, s2, _ = _inv_vars(q, k_r=k_r)
    return q.query((lam <= y - s1) == (y >= lam + k_lin * L + s2))


LEMMA10_4 = LemmaCheck(
    key="lemma10.4",
    ref="Lemma 10(4)",
    statement="x+1 > 2L:  lambda <= lambda^r(x, alpha)  <=>  x + 1 >= lambda^l(lambda, alpha)",
    steps=[
        Check("forward: square", "lambda <= y - sqrt(2yL) => y >= lambda, (y-lambda)^2 >= 2yL", _inv_f1),
        Check("forward: larger root", "y >= lambda, (y-lambda)^2 >= 2yL => y >= lambda^l(lambda)", _inv_f2),
        Check("backward: square", "y >= lambda^l(lambda) => y >= lambda, (y-lambda)^2 >= 2yL", _inv_b1),
        Check("backward: root", "y >= lambda, (y-lambda)^2 >= 2yL => lambda <= lambda^r(x)", _inv_b2),
    ],
    statement_query=_inv_statement,
    mutants=[
        Mutant("L -> 1.1L in lambda^l", "equivalence with the linear term of lambda^l enlarged 10%",
               lambda: _inv_statement(k_lin=1.1)),
        Mutant("2yL -> 1.8yL in lambda^r", "equivalence with the radicand of lambda^r shrunk 10%",
               lambda: _inv_statement(k_r=1.8)),
        Mutant("forward step L -> 1.1L", "larger-root step with the linear term enlarged 10%",
               lambda: _inv_f2(k_lin=1.1)),
    ],
)


# ---------------------------------------------------------------------------
# (5) exponential density shift
# ---------------------------------------------------------------------------


def _shift(mode="exact"):
    q = Q()
    tau, z, D = Q.real("tau z D")
    q.hyp(tau > 0, z >= 0, z + D >= 0)
    a = q.exp("e_z", -z / tau)
    b = q.exp("e_D", -D / tau)
    ab = q.exp("e_zD", -(z + D) / tau)
    q.fact(ab == a * b, "exp(x + y) = exp(x) exp(y)")
    q.fact(z3.And(z3.Implies(D > 0, b < 1), z3.Implies(D < 0, b > 1), z3.Implies(D == 0, b == 1)),
           "exp is increasing and exp(0) = 1")
    f_z = a / tau
    f_zD = ab / tau
    if mode == "exact":
        return q.query(f_zD == b * f_z)
    if mode == "sign":  # e^{+D/tau} instead of e^{-D/tau}
        q.hyp(D > 0)
        return q.query(f_zD * b == f_z)  # f(z+D) = e^{+D/tau} f(z)  <=>  f(z+D) e^{-D/tau} = f(z)
    if mode == "scale":
        return q.query(f_zD == 1.1 * b * f_z)
    raise ValueError(mode)


LEMMA10_5 = LemmaCheck(
    key="lemma10.5",
    ref="Lemma 10(5)",
    statement="eta ~ Exp(tau): f(z + Delta) = e^{-Delta/tau} f(z) for z, z + Delta >= 0",
    steps=[Check("shift", "f(z+D) = e^{-D/tau} f(z) from exp(x+y) = exp(x) exp(y)", _shift)],
    statement_query=None,
    mutants=[
        Mutant("sign of the exponent", "f(z+D) = e^{+D/tau} f(z)", lambda: _shift("sign")),
        Mutant("factor 1.1", "f(z+D) = 1.1 e^{-D/tau} f(z)", lambda: _shift("scale")),
    ],
)

LEMMAS = [LEMMA10_3A, LEMMA10_3B, LEMMA10_4, LEMMA10_5]
