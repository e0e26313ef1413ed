"""Exact accuracy: per-step Type I / Type II error probabilities and the exact rejection threshold."""

from __future__ import annotations

import math

from .arb import bits_for_dps, working_precision
from .results import Probability, probability_from_ball
from .transcripts import transcript_distribution


# ---------------------------------------------------------------------------
# exact accuracy: per-step Type I / Type II probabilities, exact rejection threshold
# ---------------------------------------------------------------------------


def _single_step_halt(plan, t: int, p_t, dps: int) -> Probability:
    """Pr[step t outputs s_t] for p_t, integrating over eta_1 and eta_{2,t} (step t in isolation)."""

    class _OneStep:
        tau1 = plan.tau1
        mu1 = plan.mu1
        horizon = None

        @staticmethod
        def step(i):
            return plan.step(t)

    d = transcript_distribution(_OneStep, [p_t], dps=dps)
    return d.halt[0]


def step_error_probabilities(plan, t: int, *, dps: int = 20) -> dict:
    """Exact per-step error probabilities of step t (no union bound, eta_1 and eta_2 integrated).

    Type I: Pr[halt at t] with p_t = p_bar_t (the paper's rejection threshold; halting
    probability increases in p_t, so this is the worst case below p_bar_t).
    Type II: Pr[continue at t] with p_t = p*_t (worst case above p*_t).
    Both are for step t run on its own (its marginal over eta_1), so they include the
    shared-noise failure (eta_1 > mu_1 etc., Pr[G^c] <= beta/2 by Lemma 19(1)) that the paper
    charges once for all steps; compare with beta^I_t / beta^II_t plus that share.
    """
    sp = plan.step(t)
    t1 = _single_step_halt(plan, t, sp.p_bar, dps)
    t2h = _single_step_halt(plan, t, sp.p_star, dps)
    with working_precision(bits_for_dps(dps)):
        t2 = 1 - t2h.ball
    return {
        "t": t,
        "p_bar": sp.p_bar,
        "p_star": sp.p_star,
        "type_I": t1,
        "type_II": probability_from_ball(t2, dps),
        "beta_I": sp.beta_I,
        "beta_II": sp.beta_II,
        "beta_t": sp.beta_t,
    }


def exact_rejection_threshold(plan, t: int, *, budget: float | None = None, dps: int = 15, iterations: int = 40) -> dict:
    """Largest p with exact Pr[halt at t | p] <= budget (default beta^I_t), by bisection.

    The halting probability is increasing in p (Lemma 15 monotonicity), so bisection
    on [0, p*] is valid.  Returns the bracket and the paper's p_bar for comparison.
    """
    sp = plan.step(t)
    b = sp.beta_I if budget is None else float(budget)
    lo, hi = 0.0, float(sp.p_star)
    if float(_single_step_halt(plan, t, hi, dps).value) <= b:
        return {"t": t, "p_exact": hi, "bracket": (hi, hi), "p_bar": sp.p_bar, "budget": b}
    for _ in range(iterations):
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        if hi - lo <= 1e-6 * hi:
            break
        if float(_single_step_halt(plan, t, mid, dps).value) <= b:
            lo = mid
        else:
            hi = mid
    return {"t": t, "p_exact": lo, "bracket": (lo, hi), "p_bar": sp.p_bar, "budget": b}
