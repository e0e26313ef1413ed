"""`gtm certify` claims of the ``horizon`` parameterization (:mod:`gtm_core.planners.horizon`; the bound
is :func:`gtm_core.planners.horizon_bound.failure_bound`).

Its accuracy rests on one inequality over the whole horizon, not on per-step budgets:

    Pr[some t <= T halts with p_t <= p_bar, or some t <= T with p_t >= p* continues]
        <= int_0^inf min(1, T max(H(x), C(x))) f_1(x) dx <= beta      (adaptive streams)

(H, C: the step's exact halting probability at p_bar and continuation probability at p*, given eta_1 = x,
integrated over eta_2 and the Poisson count). The witness re-derives the bound in python-flint ``arb``
from the deployed float64 numbers on a grid *finer than the planner's* (every planner panel halved), so a
pass here is a second, independent evaluation of the same rigorous bound. :mod:`.derive` uses these
claims instead of Theorem 21's per-step accuracy claims for this parameterization.
"""

from __future__ import annotations

from gtm_core.planners.horizon_bound import failure_bound
from gtm_core.planners.horizon_problem import design_of, problem_of

from .model import Claim, Witness
from .rows import StepDesign, step_checks_of, step_designs_of

THRESHOLD_CHECKS = ("threshold_positive", "threshold_ratio")


def _claim(cid: str, statement: str, values: dict, kind: str, details: dict, status: str) -> Claim:
    return Claim(cid, "accuracy", statement, values, Witness(kind, details), status)


def union_bound_claim(config, plan, rows) -> Claim:
    problem, design = problem_of(config), design_of(config)
    bound = failure_bound(problem, design, tau1=plan.tau1, mu1=plan.mu1, tau2=rows[0]["tau2"], refine_all=True)
    statement = (
        f"With probability >= 1 - beta = {1 - problem.beta:g}, for adaptive streams, the GTM halts at every step "
        f"t <= T={problem.T} with p_t >= p* = {problem.p_star:g} and continues past every step t <= T with "
        f"p_t <= p_bar = {design.p_bar:.6g}: int_0^inf min(1, T max(H(x), C(x))) f_1(x) dx <= beta, H, C the exact "
        f"per-step error probabilities given eta_1 = x (union bound over the T steps inside the eta_1 integral).")
    values = {"failure_upper": bound.failure_upper, "failure_ball": bound.failure_ball,
              "beta": problem.beta, "p_bar": design.p_bar, "p_star": problem.p_star, "horizon": problem.T,
              "s": design.s, "c": design.c, "rho": design.rho, "theta": design.theta,
              "panels": bound.panels, "eta1_cutoff": bound.eta1_cutoff, "tail_upper": bound.tail_upper}
    details = {"method": "monotone panel bound in arb: H non-increasing, C non-decreasing in eta_1; panel masses "
                         "e^{-x_a/tau1} - e^{-x_b/tau1}; tail e^{-U/tau1}; every planner panel halved",
               "module": "gtm_core.planners.horizon.failure_bound",
               "precision_bits": bound.precision_bits}
    return _claim("accuracy.horizon-union-bound", statement, values, "interval-arithmetic", details,
                  "pass" if bound.certified else "fail")


def steps_claim(config, rows) -> Claim:
    """Every planned step 1..T carries the configuration's (s, c, rho, p_bar): the bound is about them."""
    d = design_of(config)
    bad = [r.t for r in step_designs_of(rows) if (r.s, r.c, r.rho, r.p_bar) != (d.s, d.c, d.rho, d.p_bar)]
    return _claim("accuracy.horizon-steps",
                  "Every step t <= T runs the configuration's direction, threshold, base rate and p_bar (exact "
                  "float equality); steps beyond T are not planned (the deployment stops at its horizon).",
                  {"steps_checked": len(rows), "failing_steps": bad[:20], "failing_count": len(bad)},
                  "rational-identity", {"method": "exact equality of the deployed floats"},
                  "pass" if not bad else "fail")


def threshold_claim(rows) -> Claim:
    bad = [v.t for v in step_checks_of(rows) if v.fails(*THRESHOLD_CHECKS)]
    first = StepDesign.from_dict(rows[0])
    return _claim("accuracy.rejection-threshold",
                  "The claimed rejection threshold is usable: 0 < p_bar < p* and p_bar/p* >= the certificate's floor "
                  "at every step (checked in arb by proofs.plan_checks).",
                  {"steps_checked": len(rows), "failing_steps": bad[:20], "failing_count": len(bad),
                   "p_bar": first.p_bar, "p_star": first.p_star},
                  "interval-arithmetic", {"checks": list(THRESHOLD_CHECKS)}, "pass" if not bad else "fail")


def accuracy_claims(config, plan, rows) -> list[Claim]:
    return [union_bound_claim(config, plan, rows), steps_claim(config, rows), threshold_claim(rows)]
