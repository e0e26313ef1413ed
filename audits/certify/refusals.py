"""Refusals: why a configuration cannot be certified, and the smallest change that fixes it
(computed by bisection, then confirmed by re-running the checks)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import UnsupportedConfiguration
from proofs import plan_checks as PC

from .model import Refusal
from .rows import StepRow, step_checks_of, step_designs_of, step_rows_of


def _sig_down(x: float, digits: int = 2) -> float:
    """x rounded *down* to `digits` significant digits."""
    if x <= 0 or not math.isfinite(x):
        return x
    e = math.floor(math.log10(x)) - digits + 1
    v = math.floor(x / 10 ** e) * 10 ** e
    return float(f"{v:.{digits}g}") if float(f"{v:.{digits}g}") <= x else v


def _sig_up(x: float, digits: int = 3) -> float:
    if x <= 0 or not math.isfinite(x):
        return x
    e = math.floor(math.log10(x)) - digits + 1
    v = math.ceil(x / 10 ** e) * 10 ** e
    return float(f"{v:.{digits}g}") if float(f"{v:.{digits}g}") >= x else v


def refusals_for(config, plan, rows, claims, progress) -> list[Refusal]:
    out = []
    failed = {c.id: c for c in claims if c.status == "fail"}
    for cid in failed:
        if cid == "accuracy.rejection-threshold":
            progress.say("refused: rejection threshold vanishes; computing the fix")
            out.append(fix_vanishing_threshold(config, rows))
        elif cid == "purification.thresholds":
            progress.say("refused: purification eats the gap; computing the fix")
            out.append(fix_purification(config, rows))
        elif cid == "cost.budget-exceed":
            progress.say("refused: evaluation budget too small; computing the fix")
            out.append(fix_budget(config, plan, rows))
        elif cid == "accuracy.budget-stops":
            progress.say("refused: accuracy failure plus budget stops exceed beta; computing the fix")
            v = failed[cid].values
            out.append(fix_budget(config, plan, rows, allowance=config.gtm.beta - v["accuracy_upper"],
                                  claim_id=cid))
        else:
            c = failed[cid]
            out.append(Refusal(cid, f"claim {cid} fails: {c.statement}",
                               "no automatic fix: this indicates a planner defect; please report it",
                               {"failing_steps": c.values.get("failing_steps")}))
    return out


def fix_unplannable(config: GTMConfig, error: UnsupportedConfiguration) -> Refusal:
    """The planner refuses the configuration itself (``error``): for a ``horizon`` design the fix is a
    new design (``gtm tune``), for the others the largest horizon / eps_t with a usable threshold."""
    if config.gtm.parameterization == "horizon":
        return Refusal("accuracy.plannable", f"the planner cannot plan this configuration: {error}",
                       "run `gtm tune` for a certified design", {})
    fix = fix_vanishing_threshold(config, None)
    return Refusal(fix.claim_id, f"the planner cannot plan this configuration: {error}", fix.fix, fix.fix_values)


def _ratio_ok_fast(config: GTMConfig) -> bool:
    """Usable threshold at every step, with the planner's own p_bar (theorem21/23/exact share Lambda)."""
    try:
        return PC.first_unusable_step(make_plan(config)) is None
    except (UnsupportedConfiguration, ArithmeticError, TypeError, ValueError):
        return False  # the planner cannot plan it: certainly not a working configuration


def _scale_eps(config: GTMConfig, k: float) -> GTMConfig:
    e = config.stream.eps_t
    new = [x * k for x in e] if isinstance(e, tuple) else e * k
    return config.with_changes(eps_t=new)


def fix_vanishing_threshold(config: GTMConfig, rows: list[dict] | None) -> Refusal:
    """p_bar_t / p*_t drops below the floor: the largest horizon and the largest eps_t that work."""
    floor = PC.THRESHOLD_RATIO_FLOOR
    fix_values: dict[str, Any] = {"floor": floor}
    parts = []
    first_bad = None
    if rows:
        bad = [v.t for v in step_checks_of(rows)
               if not (v.checks["threshold_ratio"] and v.checks["threshold_positive"])]
        first_bad = bad[0] if bad else None
        if first_bad and first_bad > 1:
            fix_values["largest_horizon"] = first_bad - 1
            parts.append(f"horizon <= {first_bad - 1}")
    lo, hi = 0.0, 1.0  # scale of eps_t: ok(lo) holds (eps_t -> 0 gives Lambda -> 1)
    for _ in range(40):
        mid = (lo + hi) / 2
        if _ratio_ok_fast(_scale_eps(config, mid)):
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4 * hi:
            break
    e = config.stream.eps_t
    if isinstance(e, tuple):
        k = _sig_down(lo, 2)
        while k > 0 and not _ratio_ok_fast(_scale_eps(config, k)):
            k = _sig_down(k * 0.99, 2)
        fix_values["eps_t_scale"] = k
        parts.append(f"every eps_t scaled by {k:g}")
    else:
        eps = _sig_down(e * lo, 2)
        while eps > 0 and not _ratio_ok_fast(config.with_changes(eps_t=eps)):
            eps = _sig_down(eps * 0.99, 2)
        fix_values["largest_eps_t"] = eps
        parts.append(f"eps_t <= {eps:g}")
    where = f" at step t={first_bad}" if first_bad else ""
    return Refusal(
        "accuracy.rejection-threshold",
        f"gamma * Lambda_t grows until the rejection threshold p_bar_t falls below {floor:g} x p*_t{where}: "
        f"the continuation guarantee becomes useless before the horizon",
        "smallest change that works: " + " or ".join(parts),
        fix_values,
    )


def fix_purification(config: GTMConfig, rows: list[dict]) -> Refusal:
    """phi_t >= p_bar_t (or p*_t + phi_t >= 1): the largest delta_t that keeps both shifted thresholds."""
    worst = None
    for r in step_designs_of(rows):
        if r.delta_t <= 0:
            continue
        m = min(r.p_bar, 1 - r.p_star)
        # phi(delta) = delta / (expm1(eps) + 2 delta) < m  <=>  delta < m expm1(eps) / (1 - 2 m)
        d = m * math.expm1(r.eps_t) / (1 - 2 * m) if m < 0.5 else math.inf
        if worst is None or d < worst[0]:
            worst = (d, r.t)
    d_max, t_worst = worst
    delta = _sig_down(d_max * (1 - 1e-9), 2)

    def ok(dv: float) -> bool:
        cfg = config.with_changes(delta_t=dv if not isinstance(config.stream.delta_t, tuple)
                                  else [min(x, dv) for x in config.stream.delta_t])
        plan = make_plan(cfg)
        g = cfg.gtm
        for t in range(1, cfg.stream.horizon + 1):
            sp = plan.step(t)
            if sp.delta_t > 0:
                chk = PC.step_checks(sp, tau1=plan.tau1, mu1=plan.mu1, gamma=g.gamma,
                                    parameterization=plan.parameterization, epsilon_c=g.epsilon_c, c_h=g.c_h)
                if not (chk["purification_gap"] and chk["purification_crossover"]):
                    return False
        return True

    while delta > 0 and not ok(delta):
        delta = _sig_down(delta * 0.9, 2)
    r = StepRow.from_dict(rows[t_worst - 1])
    return Refusal(
        "purification.thresholds",
        f"delta_t/eps_t eats the whole gap: at t={t_worst} phi_t={r.phi:.3g} >= p_bar_t={r.p_bar:.3g} "
        f"(continue threshold p_bar_t - phi_t <= 0) or p*_t + phi_t >= 1",
        f"smallest change that works: delta_t <= {delta:g} (largest, 2 significant digits)",
        {"largest_delta_t": delta, "step": t_worst},
    )


def _budget_total(config: GTMConfig, plan, rows, factor: float) -> float:
    total = 0.0
    for v in step_rows_of(rows):
        sp = plan.step(v.t)
        lam_bar = max(sp.lambda_max, math.log(4 / sp.beta_t))
        budget = int(math.ceil(factor * lam_bar))
        total += PC.budget_exceed_bound(dataclasses.replace(sp, evaluation_budget=budget),
                                       tau1=plan.tau1, mu1=plan.mu1)
    return total


def budget_bound_words(total: float, beta: float) -> str:
    """The summed per-step exceed bounds in words: a union bound above 1 is a bound, not a probability."""
    text = (f"the union bound sum_t Pr[N_t > budget_t] on exceeding it at some step up to the horizon is "
            f"{total:.3g} > beta = {beta:g}")
    return text + (" (a bound above 1, not a probability)" if total >= 1 else "")


def fix_budget(config: GTMConfig, plan, rows, *, allowance: float | None = None,
               claim_id: str = "cost.budget-exceed") -> Refusal:
    """The budget is hit with probability above ``allowance`` (default beta; for ``accuracy.budget-stops``
    beta minus the accuracy union bound): the smallest evaluation_budget_factor that works."""
    beta = config.gtm.beta if allowance is None else allowance
    if not beta > 0:
        return Refusal(claim_id, f"the accuracy union bound leaves no room for budget stops within beta = "
                       f"{config.gtm.beta:g}", "evaluation_budget = \"none\" (the budget is reported, never "
                       "enforced; the GTM is then pure epsilon-DP)", {})
    lo, hi = config.gtm.evaluation_budget_factor, config.gtm.evaluation_budget_factor
    while _budget_total(config, plan, rows, hi) > beta:
        lo, hi = hi, hi * 4
        if hi > 1e9:
            return Refusal(claim_id,
                           "the evaluation budget is exceeded with probability above beta for every budget factor "
                           "up to 1e9 (the Pareto tail of lambda_t is too heavy)",
                           "reduce eps_t relative to epsilon (heavier tails come from eps_t tau2 near 1)", {})
    for _ in range(40):
        if hi / lo < 1.0005:
            break
        mid = math.sqrt(lo * hi)
        if _budget_total(config, plan, rows, mid) <= beta:
            hi = mid
        else:
            lo = mid
    f = _sig_up(hi, 3)
    cfg = config.with_changes(evaluation_budget_factor=f)
    p2 = make_plan(cfg)
    steps = step_rows_of(rows)
    while math.fsum(PC.budget_exceed_bound(p2.step(v.t), tau1=p2.tau1, mu1=p2.mu1) for v in steps) > beta:
        f = _sig_up(f * 1.01, 3)
        cfg = config.with_changes(evaluation_budget_factor=f)
        p2 = make_plan(cfg)
    total = math.fsum(v.budget_exceed_upper for v in steps)
    words = (budget_bound_words(total, beta) if allowance is None else
             f"the union bound sum_t Pr[N_t > budget_t] = {total:.3g} exceeds beta minus the accuracy union bound "
             f"= {beta:.3g}")
    return Refusal(
        claim_id,
        f"the evaluation budget (factor {config.gtm.evaluation_budget_factor:g} x lambda_bar_t) is too small: "
        f"{words}",
        f"smallest change that works: evaluation_budget_factor >= {f:g} (3 significant digits)",
        {"smallest_budget_factor": f},
    )

