"""The deterministic part of a certificate (re-derived by ``gtm certify --verify``): plan every step
up to the horizon, check every certified inequality on the deployed numbers with
:mod:`proofs.plan_checks` (exact rationals and arb balls), and turn the checks into claims."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import ConfigError, GTMError, UnsupportedConfiguration
from proofs import plan_checks as PC

from gtm_core.files import jsonable
from gtm_core.validation import check_positive_int

from . import horizon_claims
from .model import Claim, Refusal, Witness
from .progress import Progress
from .refusals import refusals_for
from .rows import step_checks_of, step_designs_of, step_rows_of


def effective_config(config: GTMConfig, horizon: int | None) -> GTMConfig:
    """The configuration actually certified: ``horizon`` may shorten a stream (per-step lists are
    truncated) or extend one whose per-step values are scalars."""
    if horizon is None or horizon == config.stream.horizon:
        return config
    check_positive_int("horizon", horizon, error=ConfigError)
    s = config.stream
    changes: dict[str, Any] = {"horizon": horizon}
    for name in ("eps_t", "p_star", "delta_t"):
        v = getattr(s, name)
        if isinstance(v, tuple):
            if horizon > s.horizon:
                raise ConfigError(
                    f"horizon={horizon} exceeds the configuration's horizon={s.horizon} and "
                    f"[stream].{name} is a per-step list"
                )
            changes[name] = list(v[:horizon])
    return config.with_changes(**changes)


@dataclass(frozen=True)
class Derivation:
    """What :func:`derive` computes for one configuration; certify and verify read it, nothing rewrites it."""

    plan: Any
    steps: list[dict]
    globals: dict
    claims: list[Claim]
    refusals: list[Refusal]


def derive(config: GTMConfig, progress: Progress | None = None) -> Derivation:
    """Plan every step up to the horizon and check every deterministic claim rigorously."""
    progress = progress or Progress(False)
    plan, sps = plan_steps(config)
    g = config.gtm
    T = config.stream.horizon
    rows: list[dict] = []
    for t, sp in enumerate(sps, start=1):
        checks = PC.step_checks(
            sp, tau1=plan.tau1, mu1=plan.mu1, gamma=g.gamma, parameterization=plan.parameterization,
            epsilon_c=g.epsilon_c, c_h=g.c_h, budget_factor=g.evaluation_budget_factor,
        )
        values = checks.pop("values")
        row = sp.to_dict()
        row["p_bar_ratio"] = sp.p_bar / sp.p_star
        row["expected_evaluations"] = PC.expected_lambda(sp, tau1=plan.tau1, mu1=plan.mu1)
        row["budget_exceed_upper"] = PC.budget_exceed_bound(sp, tau1=plan.tau1, mu1=plan.mu1)
        row["claimed_loss_halt"] = plan.claimed_loss(t, True)
        row.update(values)
        row["checks"] = checks
        rows.append(jsonable(row))
        progress.steps(t, T)
    glob = jsonable({**plan.globals_dict(), "tau2": None if plan.parameterization == "theorem23" else sps[0].tau2,
                     "horizon": T, "threshold_ratio_floor": PC.THRESHOLD_RATIO_FLOOR})
    claims: list[Claim] = []
    claims += _privacy_claims(config, plan, sps, rows)
    if plan.parameterization == "horizon":  # one union bound over the horizon, not per-step budgets
        claims += horizon_claims.accuracy_claims(config, plan, rows)
    else:
        claims += _accuracy_claims(config, plan, rows)
    claims += _cost_claims(config, plan, rows)
    if not plan.pure:  # a step over budget stops the run: the accuracy claim must include it
        claims.append(budget_stop_claim(config, plan, rows, claims))
    claims += _purification_claims(config, rows)
    refusals = refusals_for(config, plan, rows, claims, progress)
    return Derivation(plan=plan, steps=rows, globals=glob, claims=claims, refusals=refusals)


def plan_steps(config: GTMConfig):
    """The plan and its steps 1..T. A planner that cannot produce a step (float overflow or a numerical
    failure inside the planner) makes the configuration unplannable: UnsupportedConfiguration."""
    try:
        plan = make_plan(config)
        return plan, [plan.step(t) for t in range(1, config.stream.horizon + 1)]
    except GTMError:
        raise
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise UnsupportedConfiguration(
            f"the planner cannot plan this configuration ({type(exc).__name__} in the planner)") from None


def _failing_steps(rows: list[dict], *names: str) -> list[int]:
    return [v.t for v in step_checks_of(rows) if v.fails(*names)]


def _status(ok: bool) -> str:
    return "pass" if ok else "fail"


def _step_claim(cid, category, statement, rows, names, witness_details, values=None) -> Claim:
    """A claim over every step: passes iff every applicable per-step check passes."""
    applicable = [v for v in step_checks_of(rows) if v.applies(*names)]
    bad = _failing_steps(rows, *names)
    vals = {"steps_checked": len(applicable), "failing_steps": bad[:20], "failing_count": len(bad)}
    vals.update(values or {})
    if not applicable:
        return Claim(cid, category, statement, vals, Witness("interval-arithmetic", witness_details), "not-applicable")
    return Claim(cid, category, statement, vals,
                 Witness("interval-arithmetic", {**witness_details, "checks": list(names),
                                                 "precision_bits": PC.ARB_PREC}), _status(not bad))


def _sample_ts(T: int) -> list[int]:
    ts, t = [], 1
    while t <= T:
        ts.append(t)
        t *= 10
    if ts[-1] != T:
        ts.append(T)
    return ts


def _privacy_claims(config, plan, sps, rows) -> list[Claim]:
    g = config.gtm
    out = []
    if plan.parameterization != "theorem23":
        tau2s = sorted({sp.tau2 for sp in sps})
        ok, worst = PC.pure_epsilon(plan.tau1, tau2s, g.epsilon)
        out.append(Claim(
            "privacy.pure-epsilon", "privacy",
            f"The GTM is {g.epsilon:g}-differentially private (pure): 1/tau1 + 2/tau2_t <= epsilon at every step "
            f"(Lemma 17, Theorem 21).",
            {"epsilon": g.epsilon, "tau1": plan.tau1, "tau2": tau2s[0] if len(tau2s) == 1 else tau2s,
             "loss_bound": float(worst), "loss_bound_exact": f"{worst.numerator}/{worst.denominator}",
             "slack": float(Fraction(g.epsilon) - worst)},
            Witness("rational-identity", {"method": "exact rationals on the deployed float64 tau1, tau2_t",
                                          "lemma": "Lemma 17 (6)-(7), Theorem 21"}),
            _status(ok),
        ))
        if not plan.pure:
            c = out[-1]
            out[-1] = Claim(c.id, c.category, "Not applicable to the deployed mechanism, which is not pure "
                            "epsilon-DP: evaluation_budget = \"refuse\" truncates Algorithm 1 (see "
                            "privacy.approximate). Algorithm 1 alone would be: " + c.statement, c.values,
                            c.witness, "not-applicable")
    else:
        ok1 = 1 / Fraction(plan.tau1) <= Fraction(g.epsilon_c)
        out.append(Claim(
            "privacy.expost-continuation", "privacy",
            f"A run that never halts has privacy loss at most eps_C = {g.epsilon_c:g}: 1/tau1 <= eps_C "
            f"(Lemma 17 (6), Theorem 23).",
            {"epsilon_c": g.epsilon_c, "tau1": plan.tau1, "loss_bound": float(1 / Fraction(plan.tau1))},
            Witness("rational-identity", {"method": "exact rationals on the deployed float64 tau1",
                                          "lemma": "Lemma 17 (6), Theorem 23"}),
            _status(ok1),
        ))
        step_rows = step_rows_of(rows)
        losses = {str(t): step_rows[t - 1].claimed_loss_halt for t in _sample_ts(len(rows))}
        out.append(_step_claim(
            "privacy.expost-halting", "privacy",
            "Halting at step t has privacy loss at most eps_C + C_H eps_t ln(4/beta_t): "
            "2/tau2_t <= C_H eps_t ln(4/beta_t) at every step (Lemma 17 (7), Theorem 23).",
            rows, ("expost_halting_loss",), {"lemma": "Lemma 17 (7), Theorem 23"},
            {"loss_function": losses, "max_halting_loss": max(v.claimed_loss_halt for v in step_rows)},
        ))
    if not plan.pure:
        out.append(_approximate_claim(config, plan, rows))
    return out


def budget_stop_total(rows) -> Any:
    """An arb ball enclosing sum_t (rigorous upper bound on Pr[N_t > budget_t]) over the steps
    (``proofs.plan_checks.budget_exceed_bound`` per step; exact float64 summands, arb sum): an upper
    bound on the probability that some step up to the horizon exceeds its evaluation budget (union bound)."""
    total = PC.exact(0.0)
    for v in step_rows_of(rows):
        total += PC.exact(v.budget_exceed_upper)
    return total


ACCURACY_BOUND_CLAIMS = (("accuracy.horizon-union-bound", "failure_upper"),
                         ("accuracy.failure-allocation", "total_upper"))


def accuracy_failure_upper(claims: list[Claim]) -> tuple[str, float]:
    """(claim id, value) of the rigorous upper bound on Algorithm 1's accuracy failure probability among
    ``claims``: the horizon planner's union bound inside the eta_1 integral, else the union bound of the
    per-step failure allocation (Theorem 21/23 accounting)."""
    by_id = {c.id: c for c in claims}
    for cid, key in ACCURACY_BOUND_CLAIMS:
        if cid in by_id:
            return cid, float(by_id[cid].values[key])
    raise UnsupportedConfiguration("no accuracy union-bound claim to combine with the budget stops")


def budget_stop_claim(config, plan, rows, claims: list[Claim]) -> Claim:
    """accuracy.budget-stops (``evaluation_budget = "refuse"`` only): the run fails when Algorithm 1 errs
    or when some step up to the horizon exceeds its budget and the run stops. On the same noise the
    deployed run agrees with Algorithm 1 unless a budget stop happens, so Pr[failure] <= A + B, A the
    accuracy union bound (``accuracy_failure_upper``) and B = sum_t Pr[N_t > budget_t]
    (``budget_stop_total``); A + B <= beta is checked in arb (outward rounding)."""
    beta = config.gtm.beta
    source, acc = accuracy_failure_upper(claims)
    with PC.arb_precision():
        stops = budget_stop_total(rows)
        combined = PC.exact(acc) + stops
        ok = bool(combined <= PC.exact(beta))
        combined_upper, stop_upper = PC.upper(combined), PC.upper(stops)
    statement = (
        f"With evaluation_budget = \"refuse\" a step that exceeds its evaluation budget stops the run in its "
        f"failed state, so that stop is a failure too: with probability >= 1 - beta = {1 - beta:g} the GTM halts at "
        f"every step t <= T={len(rows)} with p_t >= p*_t, continues past every step t <= T with p_t <= p_bar_t "
        f"and stops on no budget: Pr[failure] <= {acc:.6g} ({source}) + {stop_upper:.6g} (sum_t Pr[N_t > "
        f"budget_t]) = {combined_upper:.6g} <= beta = {beta:g} (coupling on the same noise).")
    return Claim(
        "accuracy.budget-stops", "accuracy", statement,
        {"accuracy_upper": acc, "accuracy_claim": source, "budget_stop_upper": stop_upper,
         "combined_upper": combined_upper, "beta": beta},
        Witness("interval-arithmetic", {"method": "arb sum of the accuracy union bound and the rigorous per-step "
                                        "Pr[N_t > budget_t] bounds, rounded outward",
                                        "module": "proofs.plan_checks.budget_exceed_bound",
                                        "precision_bits": PC.ARB_PREC}),
        _status(ok),
    )


def approximate_delta_upper(plan, rows) -> tuple[float, float]:
    """(delta, delta_0) of privacy.approximate as floats rounded up: delta_0 = the arb sum of the rigorous
    per-step Pr[N_t > budget_t] bounds (``budget_stop_total``), delta = (1 + e^eps) delta_0 in arb, eps =
    :meth:`Plan.worst_claimed_loss`. The one computation of the claimed delta (the exact witness
    privacy.exact-worst-case compares its searched delta with it)."""
    eps = plan.worst_claimed_loss()
    with PC.arb_precision():
        total = budget_stop_total(rows)
        delta = (1 + PC.exact(eps).exp()) * total
        return PC.upper(delta), PC.upper(total)


def _approximate_claim(config, plan, rows) -> Claim:
    """privacy.approximate: the (epsilon, delta) claim of a deployment that enforces its evaluation
    budget by refusal (``Plan.privacy_delta``): delta = (1 + e^eps) sum_t Pr[N_t > budget_t], the
    per-step probabilities bounded rigorously (``proofs.plan_checks.budget_exceed_bound``) and the
    sum and factor evaluated in arb with outward rounding."""
    eps = plan.worst_claimed_loss()
    delta_upper, stop_upper = approximate_delta_upper(plan, rows)
    worst = max(step_rows_of(rows), key=lambda v: v.budget_exceed_upper)
    return Claim(
        "privacy.approximate", "privacy",
        f"With evaluation_budget = \"refuse\" the deployed GTM is ({eps:g}, {delta_upper:.3g})-differentially "
        f"private: it agrees with Algorithm 1 (epsilon-DP) unless some step up to the horizon T={len(rows)} "
        f"exceeds its budget, an event of the noise alone with probability delta_0 <= {stop_upper:.3g}; "
        f"hence delta = (1 + e^epsilon) delta_0 (coupling on the same noise, docs/deployment.md).",
        {"epsilon": eps, "delta_upper": delta_upper, "budget_stop_upper": stop_upper,
         "delta_planner": plan.privacy_delta(), "worst_step": worst.t,
         "worst_step_upper": worst.budget_exceed_upper},
        Witness("interval-arithmetic", {"method": "arb sum of rigorous per-step Pr[N_t > budget_t] bounds, "
                                        "times 1 + e^epsilon, rounded outward",
                                        "module": "proofs.plan_checks.budget_exceed_bound"}),
        "pass",  # a true statement even when vacuous (delta >= 1); cost.budget-exceed refuses such budgets
    )


def _accuracy_claims(config, plan, rows) -> list[Claim]:
    """The accuracy claims: the failure allocation over the horizon, the per-step lemmas, the exact
    tails and the rejection threshold with its flipping rule."""
    return (_allocation_claims(config, plan, rows) + _lemma_claims(rows) + _tail_claims(rows)
            + _threshold_claims(rows))


def _allocation_claims(config, plan, rows) -> list[Claim]:
    """Lemma 19(1)'s eta_1 tail, the union bound over the horizon and the share of beta it uses."""
    g = config.gtm
    out = []
    ok, p_tail = PC.eta1_tail(plan.mu1, plan.tau1, g.beta)
    out.append(Claim(
        "accuracy.eta1-tail", "accuracy",
        "Pr[eta_1 > mu_1] = exp(-mu_1/tau_1) <= beta/4, i.e. mu_1 >= tau_1 ln(4/beta) (Lemma 19(1)).",
        {"mu1": plan.mu1, "tau1": plan.tau1, "beta": g.beta, "probability_upper": p_tail},
        Witness("interval-arithmetic", {"lemma": "Lemma 19(1)", "precision_bits": PC.ARB_PREC}),
        _status(ok),
    ))
    t23 = plan.parameterization == "theorem23"
    merged = plan.parameterization == "exact_noise"
    ok, total, parts = PC.failure_allocation(plan.mu1, plan.tau1, rows, g.beta, sample_complexity_share=t23,
                                            noise_tails_merged=merged)
    if merged:
        terms = "beta^I_t + beta^II_t) (beta^I_t = beta_t/2 covers the eta_2,t tail and Type I together"
    else:
        terms = "beta_t/4 + beta^I_t + beta^II_t" + (" + beta_t/6" if t23 else "")
    out.append(Claim(
        "accuracy.failure-allocation", "accuracy",
        f"Union bound over the horizon T={len(rows)}: exp(-mu1/tau1) + sum_t ({terms}) <= beta = {g.beta:g}, "
        "so halting and continuation hold simultaneously at every step with probability >= 1 - beta.",
        {"beta": g.beta, "total_upper": total, "parts": parts},
        Witness("interval-arithmetic", {"method": "arb sum of the deployed float64 beta_t, beta^I_t, beta^II_t",
                                        "lemma": "Theorem 23 accounting" if t23 else
                                        ("exact_noise accounting (gtm_core.exact_noise_calibration)" if merged
                                         else "Theorem 21 accounting")}),
        _status(ok),
    ))
    z = PC.zeta_allocation(rows, g.beta)
    out.append(Claim(
        "accuracy.zeta-share", "accuracy",
        "Share of beta that the horizon's steps use (Definition 7: sum_t beta_t = beta over an infinite stream; "
        "zeta enclosed rigorously). Steps beyond the horizon are not certified.",
        z, Witness("interval-arithmetic", {"method": z["zeta_method"]}), "info",
    ))
    return out


def _lemma_claims(rows) -> list[Claim]:
    """Lemma 19(2)'s noise range, Lemma 11 and Lemma 20's halting and continuation chains, per step."""
    out = []
    out.append(_step_claim(
        "accuracy.noise-range", "accuracy",
        "On the good event, lambda_t lies in [rho_t, rho_t Lambda_t] (s=+1) or [rho_t/Lambda_t, rho_t] (s=-1): "
        "Lambda_t >= exp(eps_t (mu_1 + tau_2,t ln(4/beta_t))) and Lambda_t >= 1 (Lemma 19(2)).",
        rows, ("noise_range",), {"lemma": "Lemma 19(2)"},
    ))
    out.append(_step_claim(
        "accuracy.lemma11", "accuracy",
        "Lemma 11 for the concrete c_t: lambda^l(c, alpha) <= gamma lambda^r(c, beta) and "
        "c + 1 > 2 max(ln 1/beta^I, ln 1/beta^II).",
        rows, ("lemma11_gap", "lemma11_tail_validity"), {"lemma": "Lemma 11 (1)-(2)"},
    ))
    out.append(_step_claim(
        "accuracy.lemma20-halting", "accuracy",
        "Halting (Type II <= beta^II): rho p* >= lambda^l(c, beta^II) for s=+1; rho (1-p*) <= lambda^r(c, beta^II) "
        "for s=-1 (Lemma 20).",
        rows, ("base_rate",), {"lemma": "Lemma 20 (1a)/(2a)"},
    ))
    out.append(_step_claim(
        "accuracy.lemma20-continuation", "accuracy",
        "Continuation (Type I <= beta^I) at p <= p_bar: rho Lambda p_bar <= lambda^r(c, beta^I) for s=+1; "
        "(rho/Lambda)(1 - p_bar) >= lambda^l(c, beta^I) for s=-1 (Lemma 20, the chain actually needed).",
        rows, ("continuation_chain",), {"lemma": "Lemma 20 (1b)/(2b)"},
    ))
    return out


def _tail_claims(rows) -> list[Claim]:
    """The direct witnesses of the per-step error tails: exact Poisson tails at the good event's worst
    mean, and the noise-integrated tails of the exact_noise planner."""
    out = []
    step_rows = step_rows_of(rows)
    worst_I = max(v.type_I_bound for v in step_rows)
    worst_II = max(v.type_II_bound for v in step_rows)
    out.append(_step_claim(
        "accuracy.poisson-tails", "accuracy",
        "Second witness, no Chernoff bound: the exact Poisson tails at the worst mean the good event allows "
        "are within beta^II (halting, p >= p*) and beta^I (continuation, p <= p_bar).",
        rows, ("poisson_halting_tail", "poisson_continuation_tail"),
        {"method": "regularised incomplete gamma in arb"},
        {"max_type_I_bound": worst_I, "max_type_II_bound": worst_II},
    ))
    out.append(_step_claim(
        "accuracy.noise-integrated-tails", "accuracy",
        "exact_noise planner: the per-step error probabilities integrated exactly over eta_2,t and the Poisson "
        "count, at their worst points, are within budget: Pr[continue | eta_1 = mu_1, p = p*] <= beta^II_t "
        "(halting, every eta_1 <= mu_1 and p >= p*) and Pr[halt | eta_1 = 0, p = p_bar] <= beta^I_t "
        "(continuation, every eta_1 >= 0 and p <= p_bar).",
        rows, ("integrated_halting_tail", "integrated_continuation_tail"),
        {"method": "closed form of gtm_core.exact (_StepEval) in arb, 160 bits",
         "module": "gtm_core.exact_noise_calibration.certify_step"},
        {"max_type_I_bound": worst_I, "max_type_II_bound": worst_II},
    ))
    return out


def _threshold_claims(rows) -> list[Claim]:
    """The rejection threshold (Theorems 21/23) and the flipping rule, per step."""
    out = []
    designs = step_designs_of(rows)
    table = {str(t): {"p_star": designs[t - 1].p_star, "p_bar": designs[t - 1].p_bar, "s": designs[t - 1].s}
             for t in _sample_ts(len(rows))}
    ratios = [v.p_bar_ratio for v in step_rows_of(rows)]
    out.append(_step_claim(
        "accuracy.rejection-threshold", "accuracy",
        f"With probability >= 1 - beta the GTM halts at every step with p_t >= p*_t and continues past every "
        f"step with p_t <= p_bar_t; 0 < p_bar_t < p*_t and p_bar_t / p*_t >= {PC.THRESHOLD_RATIO_FLOOR:g} "
        f"(usable threshold) at every step (Theorems 21/23).",
        rows, ("threshold_positive", "threshold_ratio"), {"theorem": "Theorem 21(1)-(2) / 23(1)-(2)"},
        {"thresholds": table, "min_ratio": min(ratios), "floor": PC.THRESHOLD_RATIO_FLOOR},
    ))
    out.append(_step_claim(
        "accuracy.flipping-rule", "accuracy",
        "s_t = +1 iff gamma Lambda_t (1 - p*_t) > p*_t (the better of the direct and flipped thresholds).",
        rows, ("flipping_rule",), {"method": "exact rationals"},
        {"flipped_steps": sum(1 for r in designs if r.s == -1)},
    ))
    return out


def _cost_claims(config, plan, rows) -> list[Claim]:
    g = config.gtm
    out = []
    step_rows = step_rows_of(rows)
    lam = [v.lambda_max_upper for v in step_rows]
    budgets = [v.evaluation_budget for v in step_rows]
    c = _step_claim(
        "cost.evaluation-bound", "cost",
        "On the good event lambda_t <= lambda_max,t (rho Lambda for s=+1, rho for s=-1; Theorem 21(3) / Lemma 22), "
        "and the evaluation budget is >= e * max(lambda_max,t, ln(4/beta_t)), so "
        "Pr[N_t > budget_t | good event] <= beta_t/4 (Lemma 22(1), Lemma 55).",
        rows, ("lemma22_budget",), {"lemma": "Lemma 22(1)"},
        {"lambda_max_first": lam[0], "lambda_max_last": lam[-1], "lambda_max_max": max(lam),
         "budget_first": budgets[0], "budget_last": budgets[-1], "budget_factor": g.evaluation_budget_factor},
    )
    if c.status == "not-applicable":
        c = Claim(c.id, c.category, c.statement + f" Not applicable: evaluation_budget_factor="
                  f"{g.evaluation_budget_factor:g} < e.", c.values, c.witness, "not-applicable")
    out.append(c)
    ev = [v.expected_evaluations for v in step_rows]
    evf = [e for e in ev if isinstance(e, float)]
    total = sum(evf) if len(evf) == len(ev) else math.inf
    out.append(Claim(
        "cost.expected-evaluations", "cost",
        "Expected evaluations E[N_t] = E[lambda_t] of a step that is run (marginal over the noise; Lemma 12(2) "
        "Pareto moments): s=+1: rho e^{eps mu1} sigma2/(sigma2-1) sigma1/(sigma1+1); s=-1 analogous; "
        "infinite when the Pareto moment diverges.",
        {"first": ev[0], "last": ev[-1], "max": max(evf) if len(evf) == len(ev) else "inf",
         "total_if_never_halting": total},
        Witness("closed-form", {"lemma": "Lemma 12(1)-(2)"}), "info",
    ))
    bound = [v.budget_exceed_upper for v in step_rows]
    total_bound = math.fsum(bound)
    total_planner = math.fsum(v.budget_exceed_probability for v in step_rows)
    worst = max(range(len(rows)), key=lambda i: bound[i])
    ok = total_bound <= g.beta  # a sum of outward-rounded upper bounds (fsum is correctly rounded)
    total_bound = math.nextafter(total_bound, math.inf)
    out.append(Claim(
        "cost.budget-exceed", "cost",
        "Probability that some step up to the horizon needs more evaluations than its budget ("
        + ("the run then stops in its terminal failed state" if not plan.pure else
           "reported only: evaluation_budget = \"none\" never enforces it")
        + f") is <= beta = {g.beta:g}: sum_t min_L Pr[lambda_t > L] + Pr[Po(L) > budget_t].",
        {"total_upper": total_bound, "total_planner": total_planner, "beta": g.beta,
         "worst_step": step_rows[worst].t, "worst_step_upper": bound[worst],
         "budget_factor": g.evaluation_budget_factor},
        Witness("interval-arithmetic", {"method": "Pareto-ratio tail + Poisson Chernoff bound in arb at the "
                                        "float-optimised L; planner's float64 bound reported alongside",
                                        "module": "gtm_core.budget"}),
        _status(ok),
    ))
    return out


def _purification_claims(config, rows) -> list[Claim]:
    step_rows = step_rows_of(rows)
    if not any(v.delta_t > 0 for v in step_rows):
        return [Claim(
            "purification.not-needed", "purification",
            "delta_t = 0 at every step: the inputs are pure eps_t-DP, no purification (Lemma 24) is applied.",
            {"max_delta_t": 0.0}, Witness("record", {}), "not-applicable",
        )]
    phis = [v.phi for v in step_rows if v.delta_t > 0]
    out = [_step_claim(
        "purification.crossover", "purification",
        "Each (eps_t, delta_t)-DP input is purified by a binary symmetric channel with crossover "
        "phi_t >= delta_t / (e^{eps_t} - 1 + 2 delta_t), phi_t <= 1/2: the purified mechanism is pure eps_t-DP "
        "(Lemma 24(2)-(3)).",
        rows, ("purification_crossover",), {"lemma": "Lemma 24(2)"},
        {"phi_max": max(phis), "phi_min": min(phis)},
    )]
    table = {str(t): {"halt_threshold": step_rows[t - 1].halt_threshold,
                      "continue_threshold": step_rows[t - 1].continue_threshold, "phi": step_rows[t - 1].phi}
             for t in _sample_ts(len(rows))}
    out.append(_step_claim(
        "purification.thresholds", "purification",
        "Shifted thresholds (Corollary 25): halts when p_t >= p*_t + phi_t, continues when p_t <= p_bar_t - phi_t; "
        "both are non-vacuous: p*_t + phi_t < 1 and p_bar_t - phi_t > 0.",
        rows, ("purification_gap",), {"corollary": "Corollary 25"}, {"thresholds": table},
    ))
    return out

