"""Lemma 33 (in-expectation to bounded-error conversion).

The expectation is split over {f < tau} and {f >= tau} with conditional means
m_lo <= tau and m_hi <= OPT (the proof uses f in [0, OPT]; OPT(X) is the maximum of f).
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _vars(q: Q):
    OPT, E, a, c, P = Q.real("OPT E alpha c P")  # P = Pr[f >= tau]
    q.hyp(OPT > 0, E >= 0, a > 0, a <= 1, c > 0, c < 1, P >= 0, P <= 1)
    a1 = (1 - c) * a  # alpha'
    tau = a1 * OPT - E
    return OPT, E, a, c, P, a1, tau


def _markov_split(bounded=True):
    q = Q()
    OPT, E, a, c, P, a1, tau = _vars(q)
    Ef, m_lo, m_hi = Q.real("Ef m_lo m_hi")
    q.hyp(tau > 0, m_lo >= 0, m_lo <= tau, m_hi >= tau)
    if bounded:
        q.hyp(m_hi <= OPT)  # f <= OPT
    q.hyp(Ef == (1 - P) * m_lo + P * m_hi)
    return q.query(Ef <= tau + (OPT - tau) * P)


def _rearrange(k=1):
    q = Q()
    OPT, E, a, c, P, a1, tau = _vars(q)
    q.hyp(tau > 0, a * OPT - E <= tau + (OPT - tau) * P)
    return q.query(P >= k * c * a)


def _nonpositive_tau():
    q = Q()
    OPT, E, a, c, P, a1, tau = _vars(q)
    q.hyp(tau <= 0, P == 1)  # f >= 0 >= tau always
    return q.query(P >= 1 - (1 - c * a))


def _statement(bounded=True):
    q = Q()
    OPT, E, a, c, P, a1, tau = _vars(q)
    Ef, m_lo, m_hi = Q.real("Ef m_lo m_hi")
    q.hyp(m_lo >= 0, m_lo <= tau, m_hi >= tau, Ef == (1 - P) * m_lo + P * m_hi, Ef >= a * OPT - E)
    if bounded:
        q.hyp(m_hi <= OPT)
    q.hyp(z3.Implies(tau <= 0, P == 1))
    return q.query(P >= 1 - (1 - c * a))


LEMMA33 = LemmaCheck(
    key="lemma33",
    ref="Lemma 33",
    statement="E[f] >= alpha OPT - E  =>  Pr[f >= (1-c) alpha OPT - E] >= c alpha = 1 - beta_c",
    steps=[
        Check("split of E[f]", "E[f] <= tau Pr[f < tau] + OPT Pr[f >= tau]", _markov_split),
        Check("rearrangement", "P >= c alpha OPT/((1-alpha')OPT + E) >= c alpha, using E < alpha' OPT", _rearrange),
        Check("tau <= 0", "P = 1 >= 1 - beta_c", _nonpositive_tau, in_chain=False),
    ],
    statement_query=_statement,
    mutants=[
        Mutant("c alpha -> 1.1 c alpha", "claimed probability 10% higher", lambda: _rearrange(k=1.1)),
        Mutant("f <= OPT dropped", "split without the bound f <= OPT", lambda: _markov_split(bounded=False)),
    ],
)

LEMMAS = [LEMMA33]
