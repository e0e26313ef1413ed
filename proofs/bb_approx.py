"""Black-box evaluator paper, the approximate-DP half: the privacy-critical inequalities of Algorithm 5's
recursion (Theorem G.2), Algorithm 6's composition (Theorem G.4) and Algorithm 2 (Theorem 2.6).

Privacy depends only on the budget split and the sensitivity of the recursion's qualities, never on
the utility constants C, C_0 or Delta (docs/blackbox.md): every query below has Delta, C free.

* q's sensitivity: with |m - m'|, |r - r'|, |o - o'| <= 1 (min of Q over I, max of Q, max outside I^x3),
  1/2 min{m - (r - Delta), r - o} moves by <= 1 for every Delta; the max over two intervals too.
* recursion: L <= H non-trivial levels, each GAP-MAX (eps_l, delta_l) + EM (eps_l, 0) with
  eps_l = eps/(2H), delta_l = delta/H -> basic composition (L 2 eps_l, L delta_l) <= (eps, delta).
* Algorithm 6: eps' = eps/(2 s), s = sqrt(2 d L), L = log(2/delta) > 1/2, E = e^{eps'} - 1 <= 2 eps'
  (interval certificate on (0, 1]) => eps' s + d eps' E < eps for 0 < eps < 1, d >= 1.
* Algorithm 2: (eps/2, delta/2) for TLap + (eps/2, delta/2) for Algorithm 6 <= (eps, delta).
"""

from __future__ import annotations

import mpmath
import z3
from flint import arb

from .core import Check, LemmaCheck, Mutant, Q
from .interval import Certificate


def _mn(a, b):
    return z3.If(a <= b, a, b)


def _mx(a, b):
    return z3.If(a >= b, a, b)


def _q_sensitivity(half=True, two=False):
    q = Q()
    m, r, o, m2, r2, o2, D = Q.real("m r o m2 r2 o2 Delta")
    n, p, n2, p2 = Q.real("n p n2 p2")  # a second interval's min and outside max
    for a, b in ((m, m2), (r, r2), (o, o2), (n, n2), (p, p2)):
        q.hyp(a - b <= 1, b - a <= 1)
    k = z3.RealVal("1/2") if half else z3.RealVal(1)

    def term(mi, ri, oi):
        return k * _mn(mi - (ri - D), ri - oi)

    v, v2 = term(m, r, o), term(m2, r2, o2)
    if two:
        v, v2 = _mx(v, term(n, r, p)), _mx(v2, term(n2, r2, p2))
    return q.query(z3.And(v - v2 <= 1, v2 - v <= 1))


def _recursion(per_level_mechanisms=2, divisor=2, delta_div=True):
    q = Q()
    e, dl = Q.real("eps delta")
    H, L = Q.int("H L")
    q.hyp(e > 0, dl > 0, dl < 1, H >= 1, L >= 0, L <= H)
    el = e / (divisor * H)
    dlv = dl / H if delta_div else dl
    return q.query(z3.And(L * per_level_mechanisms * el <= e, L * dlv <= dl))


def _alg6(two=2, eps_hi=1):
    q = Q()
    e, d, L = Q.real("eps d L")
    q.hyp(e > 0, e < eps_hi, d >= 1, L > z3.RealVal("1/2"))
    s = q.sqrt("s", 2 * d * L)
    ep = e / (two * s)
    E = Q.real("E")
    q.hyp(E >= 0, E <= 2 * ep)  # e^u - 1 <= 2u on (0, 1] (certificate below), u = eps' <= 1
    q.hyp(ep <= 1)
    return q.query(ep * s + d * ep * E < e)


def _alg6_eps_prime_at_most_one():
    """eps' = eps/(2 sqrt(2 d L)) <= 1 when eps < 1, d >= 1, L > 1/2 (so the certificate applies)."""
    q = Q()
    e, d, L = Q.real("eps d L")
    q.hyp(e > 0, e < 1, d >= 1, L > z3.RealVal("1/2"))
    s = q.sqrt("s", 2 * d * L)
    return q.query(e / (2 * s) <= 1)


def _theorem26(delta_split=2, eps_split=2):
    q = Q()
    e, dl = Q.real("eps delta")
    q.hyp(e > 0, e < 1, dl > 0, dl < 1)
    e0, d0 = e / eps_split, dl / delta_split
    return q.query(z3.And(e0 + e0 <= e, d0 + d0 <= dl))


def _expm1_ball(u: arb) -> arb:
    # 2 - (e^u - 1)/u >= 0 on (0, 1] (the (e^u - 1)/u form stays away from 0 as u -> 0)
    return 2 - (u.exp() - 1) / u


EXPM1 = Certificate(
    name="e^u - 1 <= 2u on (0, 1]",
    description="2 - (e^u - 1)/u >= 0 for u in [1e-9, 1] (the proof of Theorem G.4's bound on e^{eps'} - 1)",
    f_ball=_expm1_ball,
    f_mp=lambda u: 2 - mpmath.expm1(u) / u,
    lo=1e-9,
    hi=1.0,
)

LOG2 = Certificate(
    name="log 2 > 1/2",
    description="log(2/delta) >= log 2 > 1/2 for delta in (0, 1): log(2/x) - 1/2 >= 0 on [1e-12, 1]",
    f_ball=lambda x: (2 / x).log() - arb(1) / 2,
    f_mp=lambda x: mpmath.log(2 / x) - mpmath.mpf(1) / 2,
    lo=1e-12,
    hi=1.0,
)


def _expm1_mutant():
    return Certificate(name="e^u - 1 <= 1.5u", description="constant 2 replaced by 1.5 (fails near u = 1)",
                       f_ball=lambda u: arb(1.5) - (u.exp() - 1) / u,
                       f_mp=lambda u: mpmath.mpf(1.5) - mpmath.expm1(u) / u, lo=1e-9, hi=1.0)


RECURSION = LemmaCheck(
    key="bb_approx.recursion",
    ref="Black-box paper, Algorithm 5 and the privacy part of the proof of Theorem G.2",
    statement="q(S, .) has sensitivity 1 for every Delta; L <= H levels at (eps/(2H), delta/H) each, two "
              "mechanisms per level, compose to (eps, delta)",
    steps=[
        Check("q sensitivity (one interval)", "|1/2 min{m-(r-Delta), r-o} - same'| <= 1", _q_sensitivity),
        Check("q sensitivity (max over intervals)", "max over two intervals keeps sensitivity 1",
              lambda: _q_sensitivity(two=True)),
        Check("basic composition over the levels", "L 2 eps/(2H) <= eps and L delta/H <= delta for L <= H",
              _recursion),
    ],
    mutants=[
        Mutant("q without the factor 1/2", "sensitivity 2: |q - q'| <= 1 fails", lambda: _q_sensitivity(half=False)),
        Mutant("level charged at eps/H", "GAP-MAX and EM each at eps/H: 2L eps/H <= eps fails",
               lambda: _recursion(divisor=1)),
        Mutant("level charged at the undivided eps", "every level at eps: 2L eps <= eps fails",
               lambda: _recursion(divisor=z3.RealVal(1) / z3.ToReal(z3.Int("H")))),
        Mutant("delta not divided by H", "L delta <= delta fails for L >= 2", lambda: _recursion(delta_div=False)),
    ],
)

COMPOSITION = LemmaCheck(
    key="bb_approx.composition",
    ref="Black-box paper, Algorithm 6 line 6 and the privacy part of the proof of Theorem G.4 (Theorem A.1)",
    statement="eps' = eps/(2 sqrt(2 d log(2/delta))): eps' sqrt(2 d log(2/delta)) + d eps'(e^eps' - 1) < eps for "
              "0 < eps < 1; d delta/(2d) + delta/2 = delta",
    steps=[
        Check("eps' <= 1", "so e^eps' - 1 <= 2 eps' applies", _alg6_eps_prime_at_most_one),
        Check("advanced composition < eps", "eps' s + d eps' E < eps with E <= 2 eps', s^2 = 2 d L, L > 1/2", _alg6),
        EXPM1,
        LOG2,
    ],
    mutants=[
        Mutant("eps' without the factor 2", "eps' = eps/sqrt(2 d L): the first term alone is eps",
               lambda: _alg6(two=1)),
        Mutant("eps up to 4", "eps < 4 in place of eps < 1: eps^2/(4L) < eps/2 fails", lambda: _alg6(eps_hi=4)),
        Mutant("e^u - 1 <= 1.5u", "a too-strong exponential bound", _expm1_mutant),
    ],
)

THEOREM26 = LemmaCheck(
    key="bb_approx.theorem26",
    ref="Black-box paper, Theorem 2.6 / proof C.7 (Algorithm 2)",
    statement="TLap(1, eps/2, delta/2) size estimate + Algorithm 6 at (eps/2, delta/2) is (eps, delta)",
    steps=[Check("basic composition", "(eps/2 + eps/2, delta/2 + delta/2) <= (eps, delta)", _theorem26)],
    mutants=[Mutant("delta_0 = delta", "both parts at delta: 2 delta <= delta fails", lambda: _theorem26(delta_split=1)),
             Mutant("eps_0 = eps", "both parts at eps: 2 eps <= eps fails", lambda: _theorem26(eps_split=1))],
)

LEMMAS = [RECURSION, COMPOSITION, THEOREM26]
