"""Lemma 28: the chain length d between an accepting and a rejecting dataset, equation (14).

Powers e^{j eps} enter as variables P_j with P_{j+1} = E P_j; logarithms as
variables tied by the certified facts ln(xy) = ln x + ln y and monotonicity of ln.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q

LN_MONO = "ln is increasing and ln(xy) = ln x + ln y"


def _crossing(k=2):
    q = Q()
    uk, vk, dp = Q.real("u_k v_k delta_p")
    q.hyp(dp >= 0, uk <= z3.RealVal("1/2"), uk + vk == 1 + 2 * dp)
    return q.query(z3.And(vk >= z3.RealVal("1/2") + k * dp, vk >= z3.RealVal("1/2")))


def _iterate(off_by_one=False):
    q = Q()
    E, Pj, Pj1, u0, uj, uj1 = Q.real("E P_j P_j1 u_0 u_j u_j1")
    q.hyp(E > 1, Pj >= 1, Pj1 == E * Pj, u0 >= 0, uj >= 0)
    q.hyp(uj <= Pj * u0, uj1 <= E * uj)  # induction hypothesis and Lemma 27(1)
    return q.query(uj1 <= (Pj if off_by_one else Pj1) * u0)


def _left_count():
    q = Q()
    eps, k1, l2, lI = Q.real("eps k1 ln2 ln_bI")  # k1 = k + 1, lI = ln(beta^I + delta')
    q.hyp(eps > 0, k1 >= 1)
    # 1/2 <= u_{k+1} <= e^{(k+1)eps} (beta^I + delta'); take logs (LN_MONO): -ln 2 <= (k+1) eps + lI
    q.hyp(-l2 <= k1 * eps + lI)
    return q.query(k1 >= (-l2 - lI) / eps)  # (k+1) >= (1/eps) ln(1/(2(beta^I + delta')))


def _right_count():
    q = Q()
    eps, dk, l2, lII = Q.real("eps d_minus_k ln2 ln_bII")
    q.hyp(eps > 0, dk >= 1)
    q.hyp(-l2 <= dk * eps + lII)  # 1/2 <= v_k <= e^{(d-k) eps} (beta^II + delta')
    return q.query(dk >= (-l2 - lII) / eps)


def _sum(minus=1):
    q = Q()
    eps, k, d, l2, lI, lII = Q.real("eps k d ln2 ln_bI ln_bII")
    q.hyp(eps > 0, k >= 0, d >= k + 1)
    q.hyp(k + 1 >= (-l2 - lI) / eps, d - k >= (-l2 - lII) / eps)
    return q.query(d >= ((-l2 - lI) + (-l2 - lII)) / eps - minus)


def _chain():
    """The statement from the three counting steps, each instantiated at the statement's variables."""
    q = Q()
    eps, k, d, l2, lI, lII = Q.real("eps k d ln2 ln_bI ln_bII")
    q.hyp(eps > 0, k >= 0, d >= k + 1)
    q.hyp(-l2 <= (k + 1) * eps + lI, -l2 <= (d - k) * eps + lII)  # the two exponentiated propagation bounds
    q.hyp(_left_count().instance(k1=k + 1), _right_count().instance(d_minus_k=d - k), _sum().implication())
    return q.query(d >= ((-l2 - lI) + (-l2 - lII)) / eps - 1)


LEMMA28 = LemmaCheck(
    key="lemma28",
    ref="Lemma 28, equation (14)",
    statement="d >= (1/eps)(ln(1/(2(beta^I + delta'))) + ln(1/(2(beta^II + delta')))) - 1",
    steps=[
        Check("crossing", "u_k <= 1/2 => v_k >= 1/2 + 2 delta' >= 1/2", _crossing),
        Check("iterate Lemma 27", "u_j <= e^{j eps} u_0 => u_{j+1} <= e^{(j+1) eps} u_0", _iterate),
        Check("left count", "1/2 <= e^{(k+1)eps}(beta^I + delta') => k+1 >= ...", _left_count),
        Check("right count", "1/2 <= e^{(d-k)eps}(beta^II + delta') => d-k >= ...", _right_count),
        Check("sum", "d + 1 = (k+1) + (d-k)", _sum),
    ],
    chain=_chain,
    mutants=[
        Mutant("-1 -> -0.9", "equation (14) with a tighter additive constant", lambda: _sum(minus=0.9)),
        Mutant("iteration off by one", "u_{j+1} <= e^{j eps} u_0", lambda: _iterate(off_by_one=True)),
        Mutant("2 delta' -> 2.2 delta'", "crossing bound constant moved", lambda: _crossing(k=2.2)),
    ],
)

LEMMAS = [LEMMA28]
