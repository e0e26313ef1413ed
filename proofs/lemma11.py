"""Lemma 11 (Poisson overhead control), items 1-3, following the paper's proof step by step.

Stated whole, item 1 is ``unknown`` for Z3 after a minute; the proof's steps (the
bound on lambda^l, the root bound m >= r => quadratic >= 0, the rearrangement)
are each ``unsat`` in milliseconds, and the chain that combines them is checked too.
Item 3 is proved with the explicit constant 16:  c < 16 (A + B)/(gamma - 1)^2 + 1.
"""

from __future__ import annotations

import z3

from .common import Max, lam_left, lam_right, lemma11_params, lemma11_root
from .core import Check, Erratum, LemmaCheck, Mutant, Q


def _m(q: Q, c):
    """m = sqrt(c + 1)."""
    return q.sqrt("m", c + 1)


# ---------------------------------------------------------------------------
# item 1
# ---------------------------------------------------------------------------


def _s_left(k=2):
    q = Q()
    A, c = Q.real("A c")
    q.hyp(A > 0, c >= 0)
    m = _m(q, c)
    sA = q.sqrt("sA", 2 * A)
    ll, _ = lam_left(q, c, A)
    return q.query(ll < m * m + k * A + m * sA)


def _s_right():
    q = Q()
    B, c = Q.real("B c")
    q.hyp(B > 0, c >= 0)
    m = _m(q, c)
    sB = q.sqrt("sB", 2 * B)
    _, sr = lam_right(q, c, B)
    return q.query(sr == m * sB)


def _s_quadratic(disc=8):
    q = Q()
    A, B, g = lemma11_params(q)
    r, t = lemma11_root(q, A, B, g, disc=disc)
    m = Q.real("m")
    q.hyp(m >= 0, m >= r)
    # the quadratic always carries the true coefficient 2A; only r's discriminant is mutated
    return q.query((g - 1) * m * m - t["a"] * m - 2 * A >= 0)


def _s_m_above_r():
    q = Q()
    A, B, g = lemma11_params(q)
    r, _ = lemma11_root(q, A, B, g)
    c = Q.real("c")
    q.hyp(c >= 0, c >= r * r)
    m = _m(q, c)
    return q.query(m > r)


def _s_rearrange(k=1):
    q = Q()
    A, B, g = lemma11_params(q)
    m = Q.real("m")
    sA = q.sqrt("sA", 2 * A)
    sB = q.sqrt("sB", 2 * B)
    a = sA + g * sB
    q.hyp(m >= 0, (g - 1) * m * m - a * m - 2 * A >= 0)
    return q.query(m * m + 2 * A + m * sA <= k * g * (m * m - m * sB))


def _item1_statement():
    q = Q()
    A, B, g = lemma11_params(q)
    r, _ = lemma11_root(q, A, B, g)
    c = Q.real("c")
    q.hyp(c >= 0, c >= r * r)  # c >= ceil(r^2) >= r^2
    _m(q, c)
    ll, _ = lam_left(q, c, A)
    lr, _ = lam_right(q, c, B)
    return q.query(ll <= g * lr)


LEMMA11_1 = LemmaCheck(
    key="lemma11.1",
    ref="Lemma 11(1)",
    statement="lambda^l(c, alpha) <= gamma lambda^r(c, beta) for all A, B > 0, gamma in (1, 2], c >= ceil(r^2)",
    steps=[
        Check("left bound", "c < m^2 = c+1: lambda^l(c,alpha) < m^2 + 2A + m sqrt(2A)", _s_left),
        Check("right expansion", "sqrt(2(c+1)B) = m sqrt(2B), so lambda^r(c,beta) = m^2 - m sqrt(2B)", _s_right),
        Check("m > r", "c >= r^2 => m = sqrt(c+1) > r", _s_m_above_r),
        Check("root bound", "m >= r => (gamma-1) m^2 - (sqrt(2A) + gamma sqrt(2B)) m - 2A >= 0", _s_quadratic),
        Check("rearrangement", "quadratic >= 0 => m^2 + 2A + m sqrt(2A) <= gamma (m^2 - m sqrt(2B))", _s_rearrange),
    ],
    statement_query=_item1_statement,
    mutants=[
        Mutant("discriminant 8 -> 4", "root bound with 4(gamma-1)A in the discriminant", lambda: _s_quadratic(disc=4)),
        Mutant("2A -> 1.8A", "left bound with 1.8A instead of 2A", lambda: _s_left(k=1.8)),
        Mutant("gamma -> 0.9 gamma", "rearrangement with the gap ratio shrunk 10%", lambda: _s_rearrange(k=0.9)),
    ],
)


# ---------------------------------------------------------------------------
# item 2
# ---------------------------------------------------------------------------


def _floor_vars(q: Q):
    A, B = Q.real("A B")
    q.hyp(A > 0, B > 0)
    M = Max(A, B)
    k = Q.int("k")  # k = floor(2 max(A, B))
    q.hyp(k <= 2 * M, 2 * M < k + 1)
    return A, B, M, k


def _item2_floor(mult=2, shift=0):
    q = Q()
    A, B, M, k = _floor_vars(q)
    return q.query(k + 1 > mult * M + shift)


def _item2_max():
    q = Q()
    A, B, M, k = _floor_vars(q)
    c = Q.int("c")
    q.hyp(c >= k)
    return q.query(c + 1 >= k + 1)


def _root_dominates_floor(k=2):
    """r^2 >= 2 max(A, B): so ceil(r^2) >= floor(2 max(A, B)) and the floor term never decides c."""
    q = Q()
    A, B, g = lemma11_params(q)
    r, _ = lemma11_root(q, A, B, g)
    return q.query(r * r >= k * Max(A, B))


def _item2_statement(mult=2, shift=0):
    q = Q()
    A, B, M, k = _floor_vars(q)
    c = Q.int("c")
    q.hyp(c >= k, c >= 0)  # c = max(floor(2 max(A,B)), ceil(r^2)) >= floor(...)
    return q.query(c + 1 > mult * M + shift)


LEMMA11_2 = LemmaCheck(
    key="lemma11.2",
    ref="Lemma 11(2)",
    statement="c + 1 > 2 max(ln(1/alpha), ln(1/beta))",
    steps=[
        Check("floor", "floor(y) + 1 > y", _item2_floor),
        Check("max", "c >= floor(2 max(A,B))", _item2_max),
        Check("root dominates", "r^2 >= 2 max(A,B), so the floor term never decides c", _root_dominates_floor,
              in_chain=False),
    ],
    statement_query=_item2_statement,
    mutants=[
        Mutant("2 -> 2.2", "c + 1 > 2.2 max(A,B)", lambda: _item2_statement(mult=2.2)),
        Mutant("c+1 -> c", "c > 2 max(A,B) (off by one)", lambda: _item2_statement(shift=1)),
        Mutant("r^2 >= 5.8 max(A,B)",
            "constant above 3 + sqrt(5) ~ 5.236, the value at gamma = 2, B -> 0 (5.23 still proves)",
               lambda: _root_dominates_floor(k=5.8)),
    ],
)


# ---------------------------------------------------------------------------
# item 3 (explicit constant)
# ---------------------------------------------------------------------------


def _t_sqrt_sum():
    q = Q()
    a, b = Q.real("a b")
    q.hyp(a >= 0, b >= 0)
    d = q.sqrt("d", a * a + b)
    e = q.sqrt("e", b)
    return q.query(d <= a + e)


def _item3_vars(q: Q, *, disc=8):
    A, B, g = lemma11_params(q)
    r, t = lemma11_root(q, A, B, g, disc=disc)
    e = q.sqrt("e", 8 * (g - 1) * A)
    return A, B, g, r, t, e


def _t_numerator(k=2):
    q = Q()
    A, B, g, r, t, e = _item3_vars(q)
    q.hyp(t["d"] <= t["a"] + e)  # sqrt(a^2 + b) <= a + sqrt(b)
    return q.query(r <= k * (t["sA"] + t["sB"]) / (g - 1))


def _t_square(K=16):
    q = Q()
    A, B, g = lemma11_params(q)
    sA = q.sqrt("sA", 2 * A)
    sB = q.sqrt("sB", 2 * B)
    r = Q.real("r")
    q.hyp(r >= 0, r <= 2 * (sA + sB) / (g - 1))
    return q.query(r * r <= K * (A + B) / ((g - 1) * (g - 1)))


def _t_max(K=16):
    q = Q()
    A, B, g = lemma11_params(q)
    r2, k, j, c = Q.real("r2 k j c")
    q.hyp(r2 >= 0, r2 <= 16 * (A + B) / ((g - 1) * (g - 1)))
    q.hyp(k <= 2 * Max(A, B), j < r2 + 1, c == Max(k, j))
    return q.query(c < K * (A + B) / ((g - 1) * (g - 1)) + 1)


def _item3_statement(K=16, plus_one=True, extra=None):
    """The statement with floor/ceil as integers; ``extra`` narrows the search region (sat searches only)."""
    q = Q()
    A, B, g, r, t, e = _item3_vars(q)
    k, j = Q.int("k j")
    c = Q.real("c")
    q.hyp(k <= 2 * Max(A, B), 2 * Max(A, B) < k + 1)  # k = floor(2 max(A,B))
    q.hyp(j >= r * r, j < r * r + 1)  # j = ceil(r^2)
    q.hyp(c == Max(k, j))
    if extra is not None:
        q.hyp(extra(A, B))
    bound = K * (A + B) / ((g - 1) * (g - 1)) + (1 if plus_one else 0)
    return q.query(c < bound if plus_one else c <= bound)


def _item3_chain():
    """Chain over the abstract quantities: the steps' conclusions imply the statement."""
    q = Q()
    A, B, g = lemma11_params(q)
    a, d, e, sA, sB, r, k, j, c = Q.real("a d e sA sB r k j c")
    q.hyp(sA >= 0, sB >= 0, sA * sA == 2 * A, sB * sB == 2 * B, a == sA + g * sB)
    q.hyp(d >= 0, e >= 0, r == (a + d) / (2 * (g - 1)))
    q.hyp(k <= 2 * Max(A, B), j < r * r + 1, c == Max(k, j))
    K = 16 * (A + B) / ((g - 1) * (g - 1))
    q.hyp(d <= a + e)  # step: sqrt(a^2+b) <= a + sqrt(b)
    q.hyp(e * e == 8 * (g - 1) * A)
    q.hyp(z3.Implies(d <= a + e, r <= 2 * (sA + sB) / (g - 1)))  # step: numerator
    q.hyp(z3.Implies(z3.And(r >= 0, r <= 2 * (sA + sB) / (g - 1)), r * r <= K))  # step: square
    q.hyp(z3.Implies(z3.And(r * r >= 0, r * r <= K, k <= 2 * Max(A, B), j < r * r + 1, c == Max(k, j)), c < K + 1))
    q.hyp(r >= 0)
    return q.query(c < K + 1)


def _item3_repaired():
    """With A + B >= 1, the proved bound c < 16(A+B)/(gamma-1)^2 + 1 gives c <= 17 (A+B)/(gamma-1)^2."""
    q = Q()
    A, B, g = lemma11_params(q)
    c = Q.real("c")
    K = (A + B) / ((g - 1) * (g - 1))
    q.hyp(c < 16 * K + 1)  # Lemma 11(3), proved above
    q.hyp(A + B >= 1)
    return q.query(c <= 17 * K)


LEMMA11_3 = LemmaCheck(
    key="lemma11.3",
    ref="Lemma 11(3)",
    statement="c = O((ln(1/alpha) + ln(1/beta))/(gamma-1)^2); explicitly c < 16 (A+B)/(gamma-1)^2 + 1",
    steps=[
        Check("sqrt(a^2+b) <= a + sqrt(b)", "a, b >= 0", _t_sqrt_sum),
        Check("numerator", "gamma <= 2: r <= 2 (sqrt(2A) + sqrt(2B))/(gamma-1)", _t_numerator),
        Check("square", "r^2 <= 8 (sqrt(2A)^2 + sqrt(2B)^2)/(gamma-1)^2 = 16 (A+B)/(gamma-1)^2", _t_square),
        Check("max", "floor(2max(A,B)) <= 2(A+B) <= 16(A+B)/(gamma-1)^2 and ceil(r^2) < r^2 + 1", _t_max),
    ],
    chain=_item3_chain,
    mutants=[
        Mutant("constant 16 -> 14.4", "r^2 <= 14.4 (A+B)/(gamma-1)^2", lambda: _t_square(K=14.4)),
        Mutant("numerator 2 -> 1.8", "r <= 1.8 (sqrt(2A)+sqrt(2B))/(gamma-1)", lambda: _t_numerator(k=1.8)),
    ],
    errata=[
        Erratum(
            "no additive constant",
            "Read with a uniform constant, c <= K (A+B)/(gamma-1)^2 fails as alpha, beta -> 1: c >= ceil(r^2) >= 1 "
            "while (A+B)/(gamma-1)^2 -> 0 (here K = 16).",
            counterexample=lambda: _item3_statement(
                K=16, plus_one=False, extra=lambda A, B: z3.And(A == B, A <= z3.RealVal("1/1000"))),
            repaired=_item3_repaired,
            fix="add A + B >= 1 (e.g. alpha, beta <= 1/e as in Lemma 20's lower bound), "
            "then c <= 17 (A+B)/(gamma-1)^2; "
            "in general c < 16 (A+B)/(gamma-1)^2 + 1",
        )
    ],
    notes="Lemma 11(3)'s O(.) holds with an additive constant; see erratum.",
)

LEMMAS = [LEMMA11_1, LEMMA11_2, LEMMA11_3]
