"""The certified BatchToCO's budget split (gtm_core/batchtoco/certified.py): the composition of
Lemma 38 with the certified shares, by Z3 and cvc5, with mutants.

Variables stand for the split's floats; each share is defined by an inequality (the driver rounds
every share down), so the checks hold for the floats run as well as for the exact values. The arb
ledger of a concrete configuration is :mod:`proofs.co_certified_ledger`.
"""

from __future__ import annotations

import z3

from .core import Check, LemmaCheck, Mutant, Q


def _total(selection_scale=1, warmup_paid=True, levels_extra=0, warmup_paid_before_checkpoint=False,
           warmup_per_checkpoint=0):
    """eps_first + n_W eps_W + L (eps_G + 2 eps_Q + eps_0) <= eps for the certified split:
    eps_first <= f eps, R eps_W <= w eps, L b <= eps - eps_first - R eps_W, eps_G <= phi b,
    eps_S <= b - eps_G, eps_0 <= s0 eps_S, 2 eps_Q <= eps_S - eps_0 (each share rounded down). Warm-up:
    the calls run at the doubling times t = 2, 4, ... <= T, each at most once - before the first checkpoint
    only, or with warmup_after_checkpoint at all of them - so n_W <= R calls cost n_W eps_W <= R eps_W
    (eps_W >= 0): the total is checked with R calls, the charge of both settings.
    ``selection_scale``: Q run at that multiple of eps_Q; ``levels_extra``: instances beyond L;
    ``warmup_paid_before_checkpoint``: only the R_0 <= R calls before the first checkpoint are subtracted from
    the level budget while all R run (warm-up after the checkpoint charged 0); ``warmup_per_checkpoint``:
    that many extra warm-up calls at each of the L checkpoints (n_W = R + L)."""
    q = Q()
    eps, f, w, phi, s0, L, R, R0 = Q.real("eps f w phi s0 L R R_0")
    ef, ew, b, eg, es, e0, eq = Q.real("eps_first eps_W b eps_G eps_S eps_0 eps_Q")
    q.hyp(eps > 0, eps < 1, f > 0, w >= 0, f + w < 1, phi > 0, phi < 1, s0 > 0, s0 < 1, L >= 1, R >= 0)
    q.hyp(R0 >= 0, R0 <= R)
    charged = 0 if not warmup_paid else (R0 * ew if warmup_paid_before_checkpoint else R * ew)
    q.hyp(ef >= 0, ef <= f * eps, ew >= 0, R * ew <= w * eps, b >= 0, L * b <= eps - ef - charged,
          eg >= 0, eg <= phi * b, es >= 0, es <= b - eg, e0 > 0, e0 <= s0 * es, eq >= 0, 2 * eq <= es - e0)
    made = R + warmup_per_checkpoint * L
    total = ef + made * ew + (L + levels_extra) * (eg + 2 * selection_scale * eq + e0)
    return q.query(total <= eps)


def _gtm_share(split=2):
    """Lemma 17 with the horizon planner's split: 1/tau_1 = theta eps_G/(theta+2), 2/tau_2 = 2 eps_G/(theta+2)
    (rounded so that 1/tau_1 + 2/tau_2 <= eps_G) => GTM_l's transcript is eps_G-DP for any eps_t, c, rho."""
    q = Q()
    th, eg, a, b2 = Q.real("theta eps_G inv_tau1 two_over_tau2")
    q.hyp(th > 0, eg > 0, a >= 0, b2 >= 0, a * (th + 2) <= th * eg, b2 * (th + split) <= 2 * eg)
    return q.query(a + b2 <= eg)


def _scored_mechanism(batch_share=1):
    """Definition 36(2) at eps_Q: A at eps_Q/2 plus Lap(2/eps_Q) on the 1-sensitive f(., Y^) (eps_Q/2) => eps_Q."""
    q = Q()
    eq, ea, el = Q.real("eps_Q eps_A eps_Lap")
    q.hyp(eq > 0, ea * 2 == batch_share * eq, el * 2 == eq)
    return q.query(ea + el <= eq)


def _selection_cost(eps0_cap=1):
    """Lemma 34(1) with eps_1 = eps_Q and eps_0 <= 1: ThresholdSelect_l is (2 eps_Q + eps_0)-DP, within eps_S."""
    q = Q()
    eq, e0, es = Q.real("eps_Q eps_0 eps_S")
    q.hyp(eq >= 0, e0 > 0, e0 <= eps0_cap, 2 * eq + e0 <= es)
    return q.query(2 * eq + e0 <= es)


def _failure(per_level_scale=1):
    """Accuracy side: L levels at beta_l <= C_beta beta / L fail together w.p. <= C_beta beta."""
    q = Q()
    L, bl, cb, beta = Q.real("L beta_l C_beta beta")
    q.hyp(L >= 1, cb > 0, beta > 0, bl >= 0, L * bl <= per_level_scale * cb * beta)
    return q.query(L * bl <= cb * beta)


def _halting_slack(k=2):
    """Lemma 39(2), delta = 0: p_bar < p_t <= u/2 (u = e^{-eps_t (h - OPT)/2}) => u > 2 p_bar, i.e.
    h - OPT < (2/eps_t) ln(1/(2 p_bar)): the slack S_l used in ThresholdSelect_l's threshold."""
    q = Q()
    pt, pb, u = Q.real("p_t p_bar u")
    q.hyp(pb > 0, u > 0, pt > pb, pt <= u / 2)
    return q.query(u > k * pb)


CO_CERTIFIED = LemmaCheck(
    key="co_certified",
    ref="Lemma 38 (certified shares)",
    statement="eps_first + R eps_W + L (eps_G + 2 eps_Q + eps_0) <= eps; each component within its share",
    steps=[
        Check("GTM_l share", "1/tau_1 + 2/tau_2 <= eps_G (Lemma 17, any eps_t, c, rho)", _gtm_share),
        Check("scored mechanism", "A at eps_Q/2 + Lap(2/eps_Q) is eps_Q-DP", _scored_mechanism),
        Check("ThresholdSelect share", "Lemma 34(1): 2 eps_Q + eps_0 <= eps_S", _selection_cost),
        Check("total eps", "first call + warm-up + L levels <= eps", _total),
        Check("failure", "L beta_l <= C_beta beta", _failure),
        Check("halting slack", "p_bar < p_t <= u/2 => u > 2 p_bar", _halting_slack),
    ],
    mutants=[
        Mutant("selection_up", "ThresholdSelect's Q at 8 eps_Q while charged eps_Q", lambda: _total(selection_scale=8)),
        Mutant("selection x1.5", "Q at 1.5 eps_Q", lambda: _total(selection_scale=z3.RealVal("3/2"))),
        Mutant("warm-up unpaid", "warm-up calls not subtracted from the level budget", lambda: _total(warmup_paid=False)),
        Mutant("one level more", "an instance beyond L runs", lambda: _total(levels_extra=1)),
        Mutant("warm-up after checkpoint free", "warmup_after_checkpoint: all R warm-up calls run, only those "
               "before the first checkpoint charged", lambda: _total(warmup_paid_before_checkpoint=True)),
        Mutant("warmup_at_checkpoints", "a warm-up call at every checkpoint too (R + L calls, R charged)",
               lambda: _total(warmup_per_checkpoint=1)),
        Mutant("tau_2 split theta+1", "2/tau_2 = 2 eps_G/(theta+1)", lambda: _gtm_share(split=1)),
        Mutant("A at eps_Q", "the scored mechanism calls A at eps_Q", lambda: _scored_mechanism(batch_share=2)),
        Mutant("beta_l doubled", "beta_l = 2 C_beta beta / L", lambda: _failure(per_level_scale=2)),
        Mutant("slack claims 4 p_bar", "twice the proved bound", lambda: _halting_slack(k=4)),
    ],
)

LEMMAS = [CO_CERTIFIED]
