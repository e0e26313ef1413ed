"""Black-box evaluator paper, Theorem A.2 (exponential mechanism) as used by Algorithm 3 / Theorem 4.10,
and Claim 2.4 (monotone CDI) / Claim 4.4 on finite instances.

* privacy: weights w(y) = e^{eps Q(y)/2}, |Q(S,y) - Q(S',y)| <= 1 => P_S(y) <= e^eps P_S'(y)
  (three outputs; a = e^{eps/2} a variable, each weight ratio and the normaliser ratio within a).
* utility: every output with quality <= OPT - t has weight <= u w_opt, u = e^{-eps t/2}; with
  t = 2 log(M/beta)/eps, u = beta/M, so P(bad) <= M u = beta.
* Claim 2.4 for d = 1 on a finite instance: S1 = {1,2} subset of S2 = {1,2,3}, h = 1; the CDI is the
  interval [min, max] of f over M_h; the claim CDI_h(S1) subset of CDI_h(S2) for arbitrary real values
  of f on the subsets (uninterpreted). Mutant: the down-neighbourhood N_1 (relative size) in place of
  M_h - monotonicity fails (why the paper defines the CDI with M_h).
"""

from __future__ import annotations

import z3

from .common import Max, Min
from .core import Check, LemmaCheck, Mutant, Q


def _em_privacy(weight_power=1):
    q = Q()
    a = Q.real("a")  # a = e^{eps/2}
    w = Q.real("w1 w2 w3")
    v = Q.real("v1 v2 v3")
    q.hyp(a > 1)
    A = a ** weight_power
    for wi, vi in zip(w, v):
        q.hyp(wi > 0, vi > 0, wi <= A * vi, vi <= A * wi)  # sensitivity-1 quality: e^{eps(Q - Q')/2} in [1/a, a]
    P = w[0] / (w[0] + w[1] + w[2])
    PP = v[0] / (v[0] + v[1] + v[2])
    return q.query(P <= a * a * PP)


def _em_utility(power=1):
    q = Q()
    M, b, u, wopt, bad, rest = Q.real("M beta u w_opt bad rest")
    q.hyp(M >= 2, b > 0, b < 1, wopt > 0, rest >= 0, bad >= 0)
    q.hyp(u ** power * M == b, u > 0)  # u = e^{-eps t/2} = beta/M (power 2: t halved)
    q.hyp(bad <= M * u * wopt)  # at most M outputs, each of weight <= u w_opt
    return q.query(bad / (wopt + bad + rest) <= b)


def _claim24(use_down=False):
    """d = 1, f arbitrary on the subsets of {1,2,3}; CDI as [min, max] over the neighbourhood."""
    q = Q()
    names = ["f_1", "f_2", "f_3", "f_12", "f_13", "f_23", "f_123"]
    f = dict(zip(names, Q.real(" ".join(names))))
    y = Q.real("y")
    if use_down:  # N_1: subsets with |S'| >= |S| - 1
        small = [f["f_12"], f["f_1"], f["f_2"]]
        big = [f["f_123"], f["f_12"], f["f_13"], f["f_23"]]
    else:  # M_2: subsets with |S'| >= 2
        small = [f["f_12"]]
        big = [f["f_123"], f["f_12"], f["f_13"], f["f_23"]]

    def lo(xs):
        out = xs[0]
        for x in xs[1:]:
            out = Min(out, x)
        return out

    def hi(xs):
        out = xs[0]
        for x in xs[1:]:
            out = Max(out, x)
        return out

    q.hyp(lo(small) <= y, y <= hi(small))
    return q.query(z3.And(lo(big) <= y, y <= hi(big)))


def _claim44(step=1):
    """Depth sensitivity on the finite d = 1 instance: depth(S + x) <= depth(S) + 1 as a counting step."""
    q = Q()
    dS, dSx = Q.int("depth_S depth_Sx")
    q.hyp(dS >= 0, dSx >= 0)
    q.hyp(dSx <= dS + step)  # removing x as well as the optimal S' for S leaves a subset of S minus S'
    q.hyp(dS <= dSx)  # CDI monotone (Claim 2.4): a removal set for S + x restricted to S works for S
    return q.query(z3.And(dSx - dS <= 1, dS - dSx <= 1))


EXPMECH = LemmaCheck(
    key="bb_expmech",
    ref="Black-box paper, Theorem A.2 (used by Algorithm 3 / Theorem 4.10), Claims 2.4 and 4.4",
    statement="EM with a sensitivity-1 quality is eps-DP; P(Q(y^) <= OPT - 2 log(M/beta)/eps) <= beta; "
              "CDI_h(S1) subset CDI_h(S2) for S1 subset S2 (finite d = 1 instance); depth has sensitivity 1",
    steps=[
        Check("EM privacy", "P_S(y) <= e^eps P_S'(y) (three outputs)", _em_privacy),
        Check("EM utility", "P(bad) <= M e^{-eps t/2} = beta", _em_utility),
        Check("Claim 2.4 (finite instance)", "CDI_2({1,2}) subset CDI_2({1,2,3}) for any f", _claim24),
        Check("Claim 4.4 (counting step)", "|depth(S + x) - depth(S)| <= 1", _claim44),
    ],
    mutants=[
        Mutant("EM at 2 eps", "weights e^{eps Q} (sensitivity-1 ratio a^2 per weight)", lambda: _em_privacy(2)),
        Mutant("t halved", "t = log(M/beta)/eps: u^2 = beta/M", lambda: _em_utility(power=2)),
        Mutant("N_1 instead of M_h", "the CDI with the relative down-neighbourhood is not monotone",
               lambda: _claim24(use_down=True)),
        Mutant("adding x costs 2", "depth(S + x) <= depth(S) + 2", lambda: _claim44(step=2)),
    ],
)

LEMMAS = [EXPMECH]
