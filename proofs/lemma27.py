"""Lemma 27 (acceptance probability propagation) and the identities of Definition 26.

E = e^eps > 1 (eps > 0) is a variable; delta' = delta/(E - 1).
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _vars(q: Q, *, dp_scale=1):
    E, d, dp = Q.real("E delta delta_p")
    q.hyp(E > 1, d >= 0, dp * dp_scale * (E - 1) == d)  # delta' = delta/(e^eps - 1)
    return E, d, dp


def _identities():
    q = Q()
    E, d, dp = _vars(q)
    h = Q.real("h")
    q.hyp(h >= 0, h <= 1)
    u, v = h + dp, (1 - h) + dp
    return q.query(z3.And(d + dp == E * dp, u + v == 1 + 2 * dp))


def _item1(dp_scale=1):
    q = Q()
    E, d, dp = _vars(q, dp_scale=dp_scale)
    h0, h1 = Q.real("h_j h_j1")
    q.hyp(h0 >= 0, h0 <= 1, h1 >= 0, h1 <= 1)
    q.hyp(h1 <= E * h0 + d, h0 <= E * h1 + d)  # (eps, delta)-DP on the +1 output, both orders
    u0, u1 = h0 + dp, h1 + dp
    return q.query(z3.And(u1 <= E * u0, u0 <= E * u1))  # e^{-eps} u_j <= u_{j+1} <= e^eps u_j


def _item2(k=1):
    q = Q()
    E, d, dp = _vars(q)
    h0, h1 = Q.real("h_j h_j1")
    q.hyp(h0 >= 0, h0 <= 1, h1 >= 0, h1 <= 1)
    q.hyp(1 - h0 <= E * (1 - h1) + d, 1 - h1 <= E * (1 - h0) + d)  # DP on the -1 output
    v0, v1 = (1 - h0) + dp, (1 - h1) + dp
    return q.query(z3.And(v0 <= k * E * v1, v1 <= k * E * v0))


LEMMA27 = LemmaCheck(
    key="lemma27",
    ref="Lemma 27, Definition 26",
    statement="e^{-eps} u_j <= u_{j+1} <= e^eps u_j and e^{-eps} v_j <= v_{j+1} <= e^eps v_j; "
    "u_j + v_j = 1 + 2 delta', delta + delta' = e^eps delta'",
    steps=[
        Check("Definition 26 identities", "delta + delta' = e^eps delta', u + v = 1 + 2 delta'", _identities),
        Check("item 1", "h_{j+1} <= e^eps h_j + delta => u_{j+1} <= e^eps u_j (and symmetric)", _item1),
        Check("item 2", "1 - h_j <= e^eps (1 - h_{j+1}) + delta => v_j <= e^eps v_{j+1} (and symmetric)", _item2),
    ],
    mutants=[
        Mutant("delta' -> delta/(1.1(e^eps - 1))", "item 1 with a 10% smaller delta'", lambda: _item1(dp_scale=1.1)),
        Mutant("e^eps -> 0.9 e^eps", "item 2 with a 10% smaller ratio", lambda: _item2(k=0.9)),
    ],
)

LEMMAS = [LEMMA27]
