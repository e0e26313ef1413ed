"""Lemma 24 (purification) items 1-3, Corollary 25's slack bound, and the errata at their boundaries.

e^{eps_1} and e^{c eps_1} enter as variables u, U with 1 <= u <= U (c >= 1,
eps_1 >= 0). Item 3 needs e^eps - 1 >= eps, certified by interval arithmetic
through the substitution x = -ln(1-s) (x in [0, inf) <-> s in [0, 1)):
e^x - 1 - x = (s + (1-s) ln(1-s))/(1-s), so it suffices that s + (1-s)ln(1-s) >= 0 on [0, 1].
"""

from __future__ import annotations

import mpmath
import z3

from .core import Check, Erratum, LemmaCheck, Mutant, Q
from .interval import Certificate, xlogx


def _smooth(p, phi):
    return (1 - 2 * phi) * p + phi


# --- item 1 ----------------------------------------------------------------------


def _identity(k=2):
    q = Q()
    p, phi = Q.real("p phi")
    q.hyp(p >= 0, p <= 1, phi >= 0, phi <= z3.RealVal("1/2"))
    pt = (1 - phi) * p + phi * (1 - p)
    return q.query(z3.And(pt == p + phi * (1 - k * p), pt == _smooth(p, phi)))


def _order_forward(phi_max="1/2"):
    q = Q()
    p, pp, phi = Q.real("p pp phi")
    q.hyp(p >= 0, p <= 1, pp >= 0, pp <= 1, phi >= 0, phi <= z3.RealVal(phi_max), p >= pp)
    return q.query(_smooth(p, phi) >= _smooth(pp, phi))


def _order_backward(strict: bool):
    q = Q()
    p, pp, phi = Q.real("p pp phi")
    q.hyp(p >= 0, p <= 1, pp >= 0, pp <= 1, phi >= 0, phi < z3.RealVal("1/2") if strict else phi <= z3.RealVal("1/2"))
    q.hyp(_smooth(p, phi) >= _smooth(pp, phi))
    return q.query(p >= pp)


LEMMA24_1 = LemmaCheck(
    key="lemma24.1",
    ref="Lemma 24(1)",
    statement="p~ = p + phi(1-2p); if phi <= 1/2 then p~ >= p~' <=> p >= p'",
    steps=[
        Check("identity", "(1-phi)p + phi(1-p) = p + phi(1-2p) = (1-2phi)p + phi", _identity),
        Check("order, =>", "phi <= 1/2, p >= p' => p~ >= p~'", _order_forward),
        Check("order, <= (phi < 1/2)", "phi < 1/2, p~ >= p~' => p >= p'", lambda: _order_backward(strict=True)),
    ],
    mutants=[
        Mutant("1-2p -> 1-1.8p", "identity with a moved constant", lambda: _identity(k=1.8)),
        Mutant("phi <= 0.55", "order preservation claimed for phi up to 0.55", lambda: _order_forward(phi_max="11/20")),
    ],
    errata=[
        Erratum(
            "phi = 1/2",
            "At phi = 1/2 the smoothed mechanism outputs +1 with probability 1/2 whatever p is, so p~ >= p~' holds "
            "while p < p' is possible: the '<=' direction of the equivalence fails.",
            counterexample=lambda: _order_backward(strict=False),
            repaired=lambda: _order_backward(strict=True),
            fix="require phi < 1/2 for the equivalence (phi <= 1/2 suffices for '=>'); Lemma 24(3)'s phi is < 1/2",
        )
    ],
)


# --- item 2 ----------------------------------------------------------------------


def _item2_vars(q: Q, *, phi_max="1/2"):
    p, pp, phi, d, u, U = Q.real("p pp phi delta u U")
    q.hyp(p >= 0, p <= 1, pp >= 0, pp <= 1, d >= 0, u >= 1, U >= u)  # U = e^{c eps} >= e^{eps} = u (c >= 1)
    q.hyp(phi >= 0, phi <= z3.RealVal(phi_max))
    return p, pp, phi, d, u, U


def _step_a():
    q = Q()
    p, pp, phi, d, u, U = _item2_vars(q)
    q.hyp(p <= u * pp + d)
    return q.query(_smooth(p, phi) <= u * _smooth(pp, phi) + d * (1 - 2 * phi) - phi * (u - 1))


def _step_b():
    q = Q()
    p, pp, phi, d, u, U = _item2_vars(q)
    q.hyp(d <= phi * (U - 1 + 2 * d))
    return q.query(d * (1 - 2 * phi) - phi * (u - 1) <= (U - u) * phi)


def _step_c():
    q = Q()
    p, pp, phi, d, u, U = _item2_vars(q)
    return q.query(z3.And(_smooth(pp, phi) >= phi, (U - u) * phi <= (U - u) * _smooth(pp, phi)))


def _item2_statement(k_delta=2, phi_max="1/2", complement=False):
    q = Q()
    p, pp, phi, d, u, U = _item2_vars(q, phi_max=phi_max)
    if complement:  # the -1 output: 1 - p <= u (1 - p') + delta
        q.hyp(1 - p <= u * (1 - pp) + d)
    else:
        q.hyp(p <= u * pp + d)
    q.hyp(phi * (U - 1 + k_delta * d) >= d)
    if complement:
        return q.query(1 - _smooth(p, phi) <= U * (1 - _smooth(pp, phi)))
    return q.query(_smooth(p, phi) <= U * _smooth(pp, phi))


def _complement_form():
    q = Q()
    p, phi = Q.real("p phi")
    return q.query(1 - _smooth(p, phi) == _smooth(1 - p, phi))


LEMMA24_2 = LemmaCheck(
    key="lemma24.2",
    ref="Lemma 24(2)",
    statement="phi <= 1/2, phi >= delta/(e^{c eps} - 1 + 2 delta), c >= 1 => the phi-smoothed mechanism is (c eps)-DP",
    steps=[
        Check("smoothing the DP inequality", "p~ <= e^eps p~' + delta(1-2phi) - phi(e^eps - 1)", _step_a),
        Check("residual condition", "delta <= phi(U - 1 + 2 delta) => residual <= (U - u) phi", _step_b),
        Check("minimum of p~'", "p~' >= phi, so (U-u) phi <= (U-u) p~'", _step_c),
        Check("-1 output has the same form", "1 - p~ = (1-2phi)(1-p) + phi", _complement_form, in_chain=False),
    ],
    statement_query=_item2_statement,
    mutants=[
        Mutant("2 delta -> 2.2 delta", "threshold delta/(e^{c eps} - 1 + 2.2 delta)",
            lambda: _item2_statement(k_delta=2.2)),
        Mutant("-1 output, 2 delta -> 2.2 delta", "complement output with the moved threshold",
               lambda: _item2_statement(k_delta=2.2, complement=True)),
    ],
)


# --- item 3 and Corollary 25 ---------------------------------------------------


def _exp_tangent_ball(s):
    return s + xlogx(1 - s)


def _exp_tangent_series(s):
    return s + (1 - s) * (1 - s).log()


def _exp_tangent_mp(s):
    v = 1 - s
    return s + (v * mpmath.log(v) if v > 0 else 0)


EXP_TANGENT = Certificate(
    name="e^x >= 1 + x (x >= 0)",
    description="via x = -ln(1-s): s + (1-s) ln(1-s) >= 0 for s in [0, 1]",
    f_ball=_exp_tangent_ball,
    f_series=_exp_tangent_series,
    f_mp=_exp_tangent_mp,
    lo=0.0,
    hi=1.0,
    order=2,
)


def _exp_upper_ball(x):
    return 1 + x + x * x - x.exp()


EXP_UPPER = Certificate(
    name="e^x <= 1 + x + x^2 (0 <= x <= 1)",
    description="used to pin e^eps in the item-3 mutant's counterexample search",
    f_ball=_exp_upper_ball,
    f_series=lambda x: 1 + x + x * x - x.exp(),
    f_mp=lambda x: 1 + x + x * x - mpmath.exp(x),
    lo=0.0,
    hi=1.0,
    order=3,
)


def _tangent_mutant():
    """e^x >= 1 + 1.1 x, i.e. s + 1.1 (1-s) ln(1-s) >= 0: false near s = 0."""
    return Certificate(
        name="e^x >= 1 + 1.1x",
        description="tangent slope moved 10%",
        f_ball=lambda s: s + 1.1 * xlogx(1 - s),
        f_mp=lambda s: s + (arb_free_mp_xlogx(1 - s) * mpmath.mpf("1.1")),
        lo=0.0,
        hi=1.0,
        order=2,
    )


def arb_free_mp_xlogx(v):
    return v * mpmath.log(v) if v > 0 else mpmath.mpf(0)


def _item3(k=1, strict=False, eps_cap=None):
    q = Q()
    p, d, eps = Q.real("p delta eps")
    q.hyp(p >= 0, p <= 1, d >= 0, eps > 0)
    if eps_cap is not None:
        q.hyp(eps <= eps_cap)
    u = q.exp("u", eps)  # e^{eps_1}
    q.fact(u - 1 >= eps, "e^x >= 1 + x (interval certificate)")
    if eps_cap is not None:
        q.fact(u <= 1 + eps + eps * eps, "e^x <= 1 + x + x^2 on [0, 1] (interval certificate)")
    phi = d / (u - 1 + 2 * d)
    pt = _smooth(p, phi)
    diff = z3.If(pt >= p, pt - p, p - pt)
    if strict:  # Corollary 25 as printed: phi < delta/eps
        return q.query(phi < d / eps)
    return q.query(z3.And(phi <= z3.RealVal("1/2"), diff <= phi, phi * k <= d / eps))


LEMMA24_3 = LemmaCheck(
    key="lemma24.3",
    ref="Lemma 24(3), Corollary 25",
    statement="phi = delta/(e^eps - 1 + 2 delta) gives an eps-DP mechanism with |p~ - p| <= phi <= delta/eps",
    steps=[
        EXP_TANGENT,
        EXP_UPPER,
        Check("slack bound", "|p~ - p| = phi|1-2p| <= phi <= delta/eps, and phi <= 1/2", _item3),
    ],
    mutants=[
        Mutant("delta/eps -> delta/(1.1 eps)", "slack bound 10% too small",
               lambda: _item3(k=1.1, eps_cap=z3.RealVal("1/10"))),
        Mutant("e^x >= 1 + 1.1 x", "tangent inequality with a moved slope (certificate mutant)", _tangent_mutant),
    ],
    errata=[
        Erratum(
            "Corollary 25 strict slack",
            "Corollary 25 writes phi_t < delta_t/eps_t; at delta_t = 0 both sides are 0.",
            counterexample=lambda: _item3(strict=True),
            repaired=lambda: _item3(),
            fix="phi_t <= delta_t/eps_t (strict only when delta_t > 0)",
        )
    ],
)

LEMMAS = [LEMMA24_1, LEMMA24_2, LEMMA24_3]
