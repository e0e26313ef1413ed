"""Lemma 38 (BatchToCO is (eps, delta)-DP) and the parameter inequalities Lemmas 39-41 use.

Variables stand for the paper's quantities; the weights enter only through
w_1 = omega_1 and S = sum_{l>=2} omega_l with w_1 + S <= 1 (Section 7.3's normalisation;
the arb ledger in :mod:`proofs.co_ledger` checks it for the computed C_omega). The
constant e^3 is a variable E3 > 0: no step depends on its value.

Erratum E1 (Algorithm 3's printed eps(l, t) with the global beta): the GTM's ex-post loss at
halting, eps(l) + C_H eps_t ln(4/beta_t^GTM), stays within Lemma 38's share
(1 + C_H/C_1) eps(l) only if eps_t <= eps(l) / (C_1 ln(4/beta_t^GTM)); the printed eps_t uses a
smaller logarithm ln(4/(omega_t beta)) when beta_t^GTM < omega_t beta, e.g. beta_t^GTM =
omega_t beta_l with beta_l = C_beta omega_l beta < beta.
"""

from __future__ import annotations

import z3

from .core import Check, Erratum, LemmaCheck, Mutant, Q


def _constants(q: Q, *, ts_cost=3):
    c1, ch, ceps, eps = Q.real("C_1 C_H C_eps eps")
    q.hyp(c1 > 0, ch > 0, eps > 0, eps < 1, ceps * (c1 + ch + ts_cost) == c1)
    return c1, ch, ceps, eps


def _eps_total(ts_cost=3, normalised=True):
    """Lemma 38 "total multiplicative": C_eps w1 eps / C_1 + S C_eps eps (1 + C_H/C_1 + 3/C_1) <= eps."""
    q = Q()
    c1, ch, ceps, eps = _constants(q, ts_cost=ts_cost)
    w1, S = Q.real("w_1 S")
    q.hyp(w1 >= 0, S >= 0)
    if normalised:
        q.hyp(w1 + S <= 1)
    total = ceps * w1 * eps / c1 + S * ceps * eps * (1 + ch / c1 + 3 / c1)
    return q.query(total <= eps)


def _ts_eps_term(k=3):
    """(20): for eps_t = eps(l)/(C_1 L), L >= 1, eps_t <= 1: 2 eps_t + min(eps_t, 1) <= 3 eps(l)/C_1."""
    q = Q()
    c1, el, L, et = Q.real("C_1 eps_l L eps_t")
    q.hyp(c1 > 0, el > 0, L >= 1, et * c1 * L == el, et <= 1)
    eps0 = z3.If(et <= 1, et, z3.RealVal(1))
    return q.query(2 * et + eps0 <= k * el / c1)


def _ts_delta_term(k=1):
    """(21): delta_t <= p_bar w^2 beta delta / C_delta, xi = p_bar C_beta w beta
    => 3 e^3 delta_t / xi <= 3 e^3 w delta / (C_beta C_delta)."""
    q = Q()
    pb, w, beta, delta, cb, cd, E3, dt, xi = Q.real("p_bar w beta delta C_beta C_delta E3 delta_t xi")
    q.hyp(pb > 0, w > 0, beta > 0, delta >= 0, cb > 0, cd > 0, E3 > 0, dt >= 0)
    q.hyp(dt * cd <= pb * w * w * beta * delta, xi == pb * cb * w * beta)
    return q.query(3 * E3 * dt / xi <= k * 3 * E3 * w * delta / (cb * cd))


def _delta_total(scale=3):
    """Lemma 38 "total additive": w1 delta/C_delta + S 3 e^3 delta/(C_beta C_delta) <= delta
    when C_delta >= 1 + 3 e^3 / C_beta and w1 + S <= 1."""
    q = Q()
    w1, S, delta, cb, cd, E3 = Q.real("w_1 S delta C_beta C_delta E3")
    q.hyp(w1 >= 0, S >= 0, w1 + S <= 1, delta >= 0, cb > 0, E3 > 0, cd * cb >= cb + scale * E3)
    return q.query(w1 * delta / cd + S * 3 * E3 * delta / (cb * cd) <= delta)


def _first_call_delta():
    """(23): p_bar w1^2 beta delta / C_delta <= w1 delta / C_delta using p_bar w1 beta <= 1."""
    q = Q()
    pb, w1, beta, delta, cd = Q.real("p_bar w_1 beta delta C_delta")
    q.hyp(pb > 0, w1 > 0, beta > 0, delta >= 0, cd > 0, pb * w1 * beta <= 1)
    return q.query(pb * w1 * w1 * beta * delta / cd <= w1 * delta / cd)


def _gtm_share(printed=False):
    """Corollary 35(1) inside Lemma 38 (19): eps_t = eps(l)/(C_1 L_t), L_t = ln(4/beta_t^GTM)
    => ex-post loss eps(l) + C_H eps_t L_t <= (1 + C_H/C_1) eps(l).
    ``printed``: eps_t = eps(l)/(C_1 L_g) with L_g = ln(4/(omega_t beta)) <= L_t."""
    q = Q()
    c1, ch, el, et, Lt, Lg = Q.real("C_1 C_H eps_l eps_t L_t L_g")
    q.hyp(c1 > 0, ch > 0, el > 0, Lt >= 1)
    if printed:
        q.hyp(Lg >= 1, Lg <= Lt, et * c1 * Lg == el)
    else:
        q.hyp(et * c1 * Lt == el)
    return q.query(el + ch * et * Lt <= (1 + ch / c1) * el)


def _lambda_bound():
    """Corollary 35 proof: ln Lambda_t = (eps_t/eps(l)) ln(4/beta_l) + 2/C_H <= 1/C_1 + 2/C_H
    when eps_t = eps(l)/(C_1 L_t) and ln(4/beta_l) <= L_t (beta_t^GTM <= beta_l)."""
    q = Q()
    c1, ch, el, et, Lt, Lb = Q.real("C_1 C_H eps_l eps_t L_t L_b")
    q.hyp(c1 > 0, ch > 0, el > 0, Lb > 0, Lb <= Lt, et * c1 * Lt == el)
    return q.query((et / el) * Lb + 2 / ch <= 1 / c1 + 2 / ch)


LEMMA38 = LemmaCheck(
    key="lemma38",
    ref="Lemma 38",
    statement="C_eps = C_1/(C_1+C_H+3), C_delta >= 1 + 3e^3/C_beta, sum omega <= 1  =>  total (eps, delta) budget respected",
    steps=[
        Check("GTM_l share (19)", "eps_t = eps(l)/(C_1 ln(4/beta_t)) => ex-post loss <= (1 + C_H/C_1) eps(l)", _gtm_share),
        Check("Lambda_t <= Lambda", "Corollary 35: (eps_t/eps(l)) ln(4/beta_l) + 2/C_H <= 1/C_1 + 2/C_H", _lambda_bound),
        Check("ThresholdSelect eps term (20)", "2 eps_t + min(eps_t, 1) <= 3 eps(l)/C_1", _ts_eps_term),
        Check("ThresholdSelect delta term (21)", "3e^3 delta_t/xi_l <= 3e^3 omega_l delta/(C_beta C_delta)", _ts_delta_term),
        Check("first call delta (23)", "p_bar w1^2 beta delta/C_delta <= w1 delta/C_delta", _first_call_delta),
        Check("total eps", "C_eps w1 eps/C_1 + S C_eps eps (1 + (C_H+3)/C_1) <= eps", _eps_total),
        Check("total delta", "w1 delta/C_delta + S 3e^3 delta/(C_beta C_delta) <= delta", _delta_total),
    ],
    mutants=[
        Mutant("C_eps with +2", "C_eps = C_1/(C_1 + C_H + 2): ThresholdSelect's 3/C_1 not paid", lambda: _eps_total(ts_cost=2)),
        Mutant("weights unnormalised", "sum of omega not <= 1", lambda: _eps_total(normalised=False)),
        Mutant("C_delta = 1 + e^3/C_beta", "delta scale too small by 3", lambda: _delta_total(scale=1)),
        Mutant("TS eps term 2 eps(l)/C_1", "drops eps_0", lambda: _ts_eps_term(k=2)),
        Mutant("TS delta term halved", "3e^3 delta_t/xi <= half the bound", lambda: _ts_delta_term(k=0.5)),
    ],
    errata=[
        Erratum(
            "E1: printed eps(l, t)",
            "Algorithm 3's eps(l,t) = eps(l)/(C_1 ln(4/(omega_t beta))) uses the global beta; GTM_l runs at beta_l < beta",
            counterexample=lambda: _gtm_share(printed=True),
            repaired=_gtm_share,
            fix="eps(l, j) = eps(l)/(C_1 ln(4/beta_j^GTM)) with GTM_l's own allocation beta_j^GTM (sum <= beta_l)",
        )
    ],
)


# ---------------------------------------------------------------------------
# Lemmas 39 and 41: the parameter inequalities
# ---------------------------------------------------------------------------


def _lemma39_item1_algebra():
    """2p*(1 - u/2) < p* + p_bar/2  <=>  u > 1 - p_bar/(2p*)   (u = e^{-eps_t x'/2})."""
    q = Q()
    ps, pb, u = Q.real("p_star p_bar u")
    q.hyp(ps > 0, pb > 0, u > 0)
    return q.query((2 * ps * (1 - u / 2) < ps + pb / 2) == (u > 1 - pb / (2 * ps)))


def _lemma39_item1_bound(pstar_max="1/2", pb_le_ps=True):
    """1 - p_bar/(2p*) >= p_bar when p_bar <= p* <= 1/2."""
    q = Q()
    ps, pb = Q.real("p_star p_bar")
    q.hyp(pb > 0, ps <= z3.RealVal(pstar_max))
    if pb_le_ps:
        q.hyp(pb <= ps)
    else:
        q.hyp(ps > 0)
    return q.query(1 - pb / (2 * ps) >= pb)


def _delta_over_eps(half=True):
    """delta(l,t) = min(a, (p_bar/2) eps_t) => delta_t/eps_t <= p_bar/2, and then p_bar - delta_t/eps_t >= p_bar/2."""
    q = Q()
    a, pb, et, dt = Q.real("a p_bar eps_t delta_t")
    q.hyp(a >= 0, pb > 0, et > 0)
    cap = pb / 2 * et if half else pb * et
    q.hyp(dt == z3.If(a <= cap, a, cap))
    return q.query(z3.And(dt / et <= pb / 2, pb - dt / et >= pb / 2))


def _lemma39_item2(k=1):
    """p_t > p_bar/2 and p_t <= (1/2) u (u = e^{-eps_t (h - OPT)/2}) => u > p_bar."""
    q = Q()
    pt, pb, u = Q.real("p_t p_bar u")
    q.hyp(pb > 0, u > 0, pt > pb / 2, pt <= u / 2)
    return q.query(u > k * pb)


def _lemma41_failure(cb_max="1/3"):
    """Pr[-1] <= (1-p)(1+eps0/2) xi/p with p >= p_bar/2, eps0 <= 1, xi = p_bar C_beta w beta
    => Pr[-1] <= w beta when C_beta <= 1/3."""
    q = Q()
    p, pb, e0, cb, w, beta, fail = Q.real("p p_bar eps0 C_beta w beta fail")
    q.hyp(pb > 0, p >= pb / 2, p <= 1, e0 >= 0, e0 <= 1, cb > 0, cb <= z3.RealVal(cb_max), w > 0, beta > 0)
    xi = pb * cb * w * beta
    q.hyp(fail <= (1 - p) * (1 + e0 / 2) * xi / p)
    return q.query(fail <= w * beta)


def _lemma41_kmax(L_min=1):
    """k_max <= 1 + (2/p_bar) L <= (4/p_bar) L for L = ln(1/(omega_l beta)) >= 1, p_bar < 1/2."""
    q = Q()
    pb, L, k = Q.real("p_bar L k_max")
    q.hyp(pb > 0, pb < z3.RealVal("1/2"), L >= L_min, k <= 1 + 2 / pb * L)
    return q.query(k <= 4 / pb * L)


LEMMA39 = LemmaCheck(
    key="lemma39",
    ref="Lemma 39",
    statement=("GTM_l's answer brackets the threshold: v < h + (2/eps_t) ln(1/p_bar) on continue; "
               "OPT_t + (2/eps_t) ln(1/p_bar) > h on halt"),
    steps=[
        Check("delta_t/eps_t <= p_bar/2", "the min in delta(l,t) absorbs Corollary 35's perturbation", _delta_over_eps),
        Check("item 1 algebra", "2p*(1 - u/2) < p* + p_bar/2 iff u > 1 - p_bar/(2p*)", _lemma39_item1_algebra),
        Check("item 1 bound", "1 - p_bar/(2p*) >= p_bar for p_bar <= p* <= 1/2", _lemma39_item1_bound),
        Check("item 2", "p_bar/2 < p_t <= u/2 => u > p_bar", _lemma39_item2),
    ],
    mutants=[
        Mutant("p* <= 1 allowed", "item 1 bound with p* up to 1 and p_bar unrelated to p*",
               lambda: _lemma39_item1_bound(pstar_max="1", pb_le_ps=False)),
        Mutant("delta cap p_bar eps_t", "delta(l,t) capped at p_bar eps_t instead of p_bar eps_t / 2",
               lambda: _delta_over_eps(half=False)),
        Mutant("item 2 claims u > 2 p_bar", "twice the proved bound", lambda: _lemma39_item2(k=2)),
    ],
)

LEMMA41 = LemmaCheck(
    key="lemma41",
    ref="Lemma 41",
    statement="ThresholdSelect at checkpoint l fails w.p. <= omega_l beta; k_max <= (4/p_bar) ln(1/(omega_l beta))",
    steps=[
        Check("failure of ThresholdSelect", "Lemma 34(2) with p >= p_bar/2, C_beta <= 1/3 gives <= omega_l beta",
              _lemma41_failure),
        Check("k_max simplification", "1 + (2/p_bar) L <= (4/p_bar) L for L >= 1", _lemma41_kmax),
    ],
    mutants=[
        Mutant("C_beta <= 1/2", "the constraint C_beta <= 1/3 relaxed", lambda: _lemma41_failure(cb_max="1/2")),
        Mutant("L >= 0", "k_max simplification without omega_l beta <= 1/e", lambda: _lemma41_kmax(L_min=0)),
    ],
)

LEMMAS = [LEMMA38, LEMMA39, LEMMA41]
