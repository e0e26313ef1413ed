"""`gtm certify`: a certificate for a GTM configuration - every claim with the witness that backs it.

A :class:`Certificate` is a list of :class:`Claim` values (privacy, accuracy, cost, purification,
provenance). Every claim names its witness:

* ``rational-identity``   - an inequality checked in exact rationals on the deployed float64 numbers;
* ``interval-arithmetic`` - checked with python-flint ``arb`` balls (see :mod:`audits.certify_checks`);
* ``solver-proof``        - a lemma check of :mod:`proofs` (Z3 + cvc5 / interval certificates);
* ``exact-engine``        - the exact transcript-distribution engine (:mod:`gtm_core.exact`);
* ``audit``               - the statistical auditor on the reference implementation;
* ``planner-bound``/``closed-form`` - a planner number or a closed-form expectation (reported, not a proof);
* ``record``              - provenance.

Statuses: ``pass``, ``fail``, ``witness-unavailable`` (the witness could not be run here - the
certificate then does NOT pass), ``not-applicable``, ``info`` (a reported number, no inequality)
and ``recorded``. A configuration whose claims fail is *refused*, with the reason and the smallest
change that would fix it (computed by bisection and confirmed by re-running the checks).

The JSON form carries the SHA-256 digest of its canonical body. :func:`verify_document`
recomputes the digest *and* re-derives every planner number and every deterministic claim from
the embedded configuration, so an edited number is detected even when the digest was recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from importlib import metadata
from typing import Any

from gtm_core import GTMConfig, __version__, make_plan
from gtm_core.errors import ConfigError, GTMError, UnsupportedConfiguration

from . import certify_checks as C

CERT_FORMAT = "gtm-certificate/1"
FAILING = frozenset({"fail", "witness-unavailable"})
CATEGORIES = ("privacy", "accuracy", "cost", "purification", "provenance")

# external witnesses that are not re-derived by --verify (their numbers are digest-protected)
EXTERNAL_CLAIMS = frozenset({
    "privacy.lemma-checks", "privacy.plan-identities", "privacy.exact-worst-case",
    "privacy.audit", "accuracy.exact-threshold",
})


# ---------------------------------------------------------------------------
# data model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Witness:
    kind: str
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    category: str
    statement: str
    values: dict
    witness: Witness
    status: str

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "category": self.category,
            "statement": self.statement,
            "values": self.values,
            "witness": {"kind": self.witness.kind, "details": self.witness.details},
            "status": self.status,
        }


@dataclass(frozen=True)
class Refusal:
    """Why a configuration cannot be certified, and the smallest change that fixes it."""

    claim_id: str
    reason: str
    fix: str
    fix_values: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"claim_id": self.claim_id, "reason": self.reason, "fix": self.fix, "fix_values": self.fix_values}


@dataclass
class Certificate:
    config: GTMConfig
    claims: list[Claim]
    steps: list[dict]
    globals: dict
    refusals: list[Refusal]
    provenance: dict
    mode: str = "full"

    @property
    def horizon(self) -> int:
        return self.config.stream.horizon

    @property
    def verdict(self) -> str:
        """``certified``, ``refused`` (a claim failed) or ``incomplete`` (a witness is unavailable)."""
        if self.refusals or any(c.status == "fail" for c in self.claims):
            return "refused"
        if any(c.status == "witness-unavailable" for c in self.claims):
            return "incomplete"
        return "certified"

    @property
    def passed(self) -> bool:
        return self.verdict == "certified"

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(claim_id)

    def body(self) -> dict:
        return jsonable({
            "format": CERT_FORMAT,
            "verdict": self.verdict,
            "mode": self.mode,
            "config": self.config.to_dict(),
            "config_sha256": self.config.digest(),
            "horizon": self.horizon,
            "globals": self.globals,
            "claims": [c.to_dict() for c in self.claims],
            "refusals": [r.to_dict() for r in self.refusals],
            "steps": self.steps,
            "provenance": self.provenance,
        })

    def document(self) -> dict:
        body = self.body()
        return {"format": CERT_FORMAT, "sha256": body_digest(body), "body": body}

    def to_json(self) -> str:
        return json.dumps(self.document(), indent=1, sort_keys=True, allow_nan=False) + "\n"


def jsonable(obj: Any):
    """JSON-safe copy: +-inf/nan as strings, tuples as lists, numpy scalars as Python numbers."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return jsonable(obj.item())
    return obj


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def body_digest(body: dict) -> str:
    """SHA-256 of the canonical JSON of a certificate body."""
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------


class Progress:
    """Stage messages on stderr (``progress=False`` silences them)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.timings: dict[str, float] = {}
        self._stage: str | None = None
        self._stage_t0 = 0.0

    def stage(self, name: str, message: str) -> None:
        self._close()
        self._stage, self._stage_t0 = name, time.monotonic()
        self.say(message)

    def say(self, message: str) -> None:
        if self.enabled:
            print(f"certify [{time.monotonic() - self.t0:6.1f}s] {message}", file=sys.stderr, flush=True)

    def steps(self, i: int, n: int) -> None:
        if self.enabled and n >= 50 and (i == n or i % max(1, n // 10) == 0):
            self.say(f"  {i}/{n} steps")

    def _close(self) -> None:
        if self._stage is not None:
            self.timings[self._stage] = round(time.monotonic() - self._stage_t0, 3)
            self._stage = None

    def finish(self) -> dict[str, float]:
        self._close()
        self.timings["total"] = round(time.monotonic() - self.t0, 3)
        return self.timings


# ---------------------------------------------------------------------------
# the deterministic part (re-derived by --verify)
# ---------------------------------------------------------------------------


def effective_config(config: GTMConfig, horizon: int | None) -> GTMConfig:
    """The configuration actually certified: ``horizon`` may shorten a stream (per-step lists are
    truncated) or extend one whose per-step values are scalars."""
    if horizon is None or horizon == config.stream.horizon:
        return config
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ConfigError(f"horizon must be a positive integer, got {horizon!r}")
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


@dataclass
class Derivation:
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
        checks = C.step_checks(
            sp, tau1=plan.tau1, mu1=plan.mu1, gamma=g.gamma, parameterization=plan.parameterization,
            epsilon_c=g.epsilon_c, c_h=g.c_h, budget_factor=g.evaluation_budget_factor,
        )
        values = checks.pop("values")
        row = sp.to_dict()
        row["p_bar_ratio"] = sp.p_bar / sp.p_star
        row["expected_evaluations"] = C.expected_lambda(sp, tau1=plan.tau1, mu1=plan.mu1)
        row["budget_exceed_upper"] = C.budget_exceed_bound(sp, tau1=plan.tau1, mu1=plan.mu1)
        row["claimed_loss_halt"] = plan.claimed_loss(t, True)
        row.update(values)
        row["checks"] = checks
        rows.append(jsonable(row))
        progress.steps(t, T)
    glob = jsonable({**plan.globals_dict(), "tau2": None if plan.parameterization == "theorem23" else sps[0].tau2,
                     "horizon": T, "threshold_ratio_floor": C.THRESHOLD_RATIO_FLOOR})
    claims: list[Claim] = []
    claims += _privacy_claims(config, plan, sps, rows)
    if plan.parameterization == "horizon":  # its accuracy claim and witness: audits/certify_horizon.py
        from .certify_horizon import accuracy_claims as horizon_accuracy_claims

        claims += [Claim(d["id"], d["category"], d["statement"], d["values"],
                         Witness(d["witness_kind"], d["witness_details"]), d["status"])
                   for d in horizon_accuracy_claims(config, plan, rows)]
    else:
        claims += _accuracy_claims(config, plan, rows)
    claims += _cost_claims(config, plan, rows)
    claims += _purification_claims(config, rows)
    refusals = _refusals(config, plan, rows, claims, progress)
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
    return [r["t"] for r in rows if any(r["checks"].get(n) is False for n in names)]


def _status(ok: bool) -> str:
    return "pass" if ok else "fail"


def _step_claim(cid, category, statement, rows, names, witness_details, values=None) -> Claim:
    """A claim over every step: passes iff every applicable per-step check passes."""
    applicable = [r for r in rows if any(r["checks"].get(n) is not None for n in names)]
    bad = _failing_steps(rows, *names)
    vals = {"steps_checked": len(applicable), "failing_steps": bad[:20], "failing_count": len(bad)}
    vals.update(values or {})
    if not applicable:
        return Claim(cid, category, statement, vals, Witness("interval-arithmetic", witness_details), "not-applicable")
    return Claim(cid, category, statement, vals,
                 Witness("interval-arithmetic", {**witness_details, "checks": list(names),
                                                 "precision_bits": C.ARB_PREC}), _status(not bad))


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
        ok, worst = C.pure_epsilon(plan.tau1, tau2s, g.epsilon)
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
        losses = {str(t): rows[t - 1]["claimed_loss_halt"] for t in _sample_ts(len(rows))}
        out.append(_step_claim(
            "privacy.expost-halting", "privacy",
            "Halting at step t has privacy loss at most eps_C + C_H eps_t ln(4/beta_t): "
            "2/tau2_t <= C_H eps_t ln(4/beta_t) at every step (Lemma 17 (7), Theorem 23).",
            rows, ("expost_halting_loss",), {"lemma": "Lemma 17 (7), Theorem 23"},
            {"loss_function": losses, "max_halting_loss": max(r["claimed_loss_halt"] for r in rows)},
        ))
    return out


def _accuracy_claims(config, plan, rows) -> list[Claim]:
    g = config.gtm
    out = []
    ok, p_tail = C.eta1_tail(plan.mu1, plan.tau1, g.beta)
    out.append(Claim(
        "accuracy.eta1-tail", "accuracy",
        "Pr[eta_1 > mu_1] = exp(-mu_1/tau_1) <= beta/4, i.e. mu_1 >= tau_1 ln(4/beta) (Lemma 19(1)).",
        {"mu1": plan.mu1, "tau1": plan.tau1, "beta": g.beta, "probability_upper": p_tail},
        Witness("interval-arithmetic", {"lemma": "Lemma 19(1)", "precision_bits": C.ARB_PREC}),
        _status(ok),
    ))
    t23 = plan.parameterization == "theorem23"
    merged = plan.parameterization == "exact_noise"
    ok, total, parts = C.failure_allocation(plan.mu1, plan.tau1, rows, g.beta, sample_complexity_share=t23,
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
    z = C.zeta_allocation(rows, g.beta)
    out.append(Claim(
        "accuracy.zeta-share", "accuracy",
        "Share of beta that the horizon's steps use (Definition 7: sum_t beta_t = beta over an infinite stream; "
        "zeta enclosed rigorously). Steps beyond the horizon are not certified.",
        z, Witness("interval-arithmetic", {"method": z["zeta_method"]}), "info",
    ))
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
    worst_I = max(r["type_I_bound"] for r in rows)
    worst_II = max(r["type_II_bound"] for r in rows)
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
    table = {str(t): {"p_star": rows[t - 1]["p_star"], "p_bar": rows[t - 1]["p_bar"], "s": rows[t - 1]["s"]}
             for t in _sample_ts(len(rows))}
    ratios = [r["p_bar_ratio"] for r in rows]
    out.append(_step_claim(
        "accuracy.rejection-threshold", "accuracy",
        f"With probability >= 1 - beta the GTM halts at every step with p_t >= p*_t and continues past every "
        f"step with p_t <= p_bar_t; 0 < p_bar_t < p*_t and p_bar_t / p*_t >= {C.THRESHOLD_RATIO_FLOOR:g} "
        f"(usable threshold) at every step (Theorems 21/23).",
        rows, ("threshold_positive", "threshold_ratio"), {"theorem": "Theorem 21(1)-(2) / 23(1)-(2)"},
        {"thresholds": table, "min_ratio": min(ratios), "floor": C.THRESHOLD_RATIO_FLOOR},
    ))
    out.append(_step_claim(
        "accuracy.flipping-rule", "accuracy",
        "s_t = +1 iff gamma Lambda_t (1 - p*_t) > p*_t (the better of the direct and flipped thresholds).",
        rows, ("flipping_rule",), {"method": "exact rationals"},
        {"flipped_steps": sum(1 for r in rows if r["s"] == -1)},
    ))
    return out


def _cost_claims(config, plan, rows) -> list[Claim]:
    g = config.gtm
    out = []
    lam = [r["lambda_max_upper"] for r in rows]
    budgets = [r["evaluation_budget"] for r in rows]
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
    ev = [r["expected_evaluations"] for r in rows]
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
    bound = [r["budget_exceed_upper"] for r in rows]
    total_bound = math.fsum(bound)
    total_planner = math.fsum(r["budget_exceed_probability"] for r in rows)
    worst = max(range(len(rows)), key=lambda i: bound[i])
    ok = total_bound <= g.beta  # a sum of outward-rounded upper bounds (fsum is correctly rounded)
    total_bound = math.nextafter(total_bound, math.inf)
    out.append(Claim(
        "cost.budget-exceed", "cost",
        f"Probability that some step up to the horizon needs more evaluations than its budget (the run then "
        f"stops in its terminal failed state) is <= beta = {g.beta:g}: sum_t min_L Pr[lambda_t > L] + "
        f"Pr[Po(L) > budget_t].",
        {"total_upper": total_bound, "total_planner": total_planner, "beta": g.beta,
         "worst_step": rows[worst]["t"], "worst_step_upper": bound[worst],
         "budget_factor": g.evaluation_budget_factor},
        Witness("interval-arithmetic", {"method": "Pareto-ratio tail + Poisson Chernoff bound in arb at the "
                                        "float-optimised L; planner's float64 bound reported alongside",
                                        "module": "gtm_core.budget"}),
        _status(ok),
    ))
    return out


def _purification_claims(config, rows) -> list[Claim]:
    if not any(r["delta_t"] > 0 for r in rows):
        return [Claim(
            "purification.not-needed", "purification",
            "delta_t = 0 at every step: the inputs are pure eps_t-DP, no purification (Lemma 24) is applied.",
            {"max_delta_t": 0.0}, Witness("record", {}), "not-applicable",
        )]
    phis = [r["phi"] for r in rows if r["delta_t"] > 0]
    out = [_step_claim(
        "purification.crossover", "purification",
        "Each (eps_t, delta_t)-DP input is purified by a binary symmetric channel with crossover "
        "phi_t >= delta_t / (e^{eps_t} - 1 + 2 delta_t), phi_t <= 1/2: the purified mechanism is pure eps_t-DP "
        "(Lemma 24(2)-(3)).",
        rows, ("purification_crossover",), {"lemma": "Lemma 24(2)"},
        {"phi_max": max(phis), "phi_min": min(phis)},
    )]
    table = {str(t): {"halt_threshold": rows[t - 1]["halt_threshold"],
                      "continue_threshold": rows[t - 1]["continue_threshold"], "phi": rows[t - 1]["phi"]}
             for t in _sample_ts(len(rows))}
    out.append(_step_claim(
        "purification.thresholds", "purification",
        "Shifted thresholds (Corollary 25): halts when p_t >= p*_t + phi_t, continues when p_t <= p_bar_t - phi_t; "
        "both are non-vacuous: p*_t + phi_t < 1 and p_bar_t - phi_t > 0.",
        rows, ("purification_gap",), {"corollary": "Corollary 25"}, {"thresholds": table},
    ))
    return out


# ---------------------------------------------------------------------------
# refusals and their fixes (computed, then confirmed)
# ---------------------------------------------------------------------------


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


def _refusals(config, plan, rows, claims, progress) -> list[Refusal]:
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
        else:
            c = failed[cid]
            out.append(Refusal(cid, f"claim {cid} fails: {c.statement}",
                               "no automatic fix: this indicates a planner defect; please report it",
                               {"failing_steps": c.values.get("failing_steps")}))
    return out


def _ratio_ok_fast(config: GTMConfig) -> bool:
    """Usable threshold at every step, with the planner's own p_bar (theorem21/23/exact share Lambda)."""
    try:
        plan = make_plan(config)
        T = config.stream.horizon
        scalar = not any(isinstance(getattr(config.stream, n), tuple) for n in ("eps_t", "p_star"))
        ts = [T] if scalar else range(1, T + 1)  # with constant inputs p_bar_t/p*_t decreases in t
        return all(plan.step(t).p_bar >= C.THRESHOLD_RATIO_FLOOR * plan.step(t).p_star for t in ts)
    except (UnsupportedConfiguration, ArithmeticError, TypeError, ValueError):
        return False  # the planner cannot plan it: certainly not a working configuration


def _scale_eps(config: GTMConfig, k: float) -> GTMConfig:
    e = config.stream.eps_t
    new = [x * k for x in e] if isinstance(e, tuple) else e * k
    return config.with_changes(eps_t=new)


def fix_vanishing_threshold(config: GTMConfig, rows: list[dict] | None) -> Refusal:
    """p_bar_t / p*_t drops below the floor: the largest horizon and the largest eps_t that work."""
    floor = C.THRESHOLD_RATIO_FLOOR
    fix_values: dict[str, Any] = {"floor": floor}
    parts = []
    first_bad = None
    if rows:
        bad = [r["t"] for r in rows if not (r["checks"]["threshold_ratio"] and r["checks"]["threshold_positive"])]
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
    for r in rows:
        if r["delta_t"] <= 0:
            continue
        m = min(r["p_bar"], 1 - r["p_star"])
        # phi(delta) = delta / (expm1(eps) + 2 delta) < m  <=>  delta < m expm1(eps) / (1 - 2 m)
        d = m * math.expm1(r["eps_t"]) / (1 - 2 * m) if m < 0.5 else math.inf
        if worst is None or d < worst[0]:
            worst = (d, r["t"])
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
                chk = C.step_checks(sp, tau1=plan.tau1, mu1=plan.mu1, gamma=g.gamma,
                                    parameterization=plan.parameterization, epsilon_c=g.epsilon_c, c_h=g.c_h)
                if not (chk["purification_gap"] and chk["purification_crossover"]):
                    return False
        return True

    while delta > 0 and not ok(delta):
        delta = _sig_down(delta * 0.9, 2)
    r = rows[t_worst - 1]
    return Refusal(
        "purification.thresholds",
        f"delta_t/eps_t eats the whole gap: at t={t_worst} phi_t={r['phi']:.3g} >= p_bar_t={r['p_bar']:.3g} "
        f"(continue threshold p_bar_t - phi_t <= 0) or p*_t + phi_t >= 1",
        f"smallest change that works: delta_t <= {delta:g} (largest, 2 significant digits)",
        {"largest_delta_t": delta, "step": t_worst},
    )


def _budget_total(config: GTMConfig, plan, rows, factor: float) -> float:
    import dataclasses

    total = 0.0
    for r in rows:
        sp = plan.step(r["t"])
        lam_bar = max(sp.lambda_max, math.log(4 / sp.beta_t))
        budget = int(math.ceil(factor * lam_bar))
        total += C.budget_exceed_bound(dataclasses.replace(sp, evaluation_budget=budget),
                                       tau1=plan.tau1, mu1=plan.mu1)
    return total


def fix_budget(config: GTMConfig, plan, rows) -> Refusal:
    """The budget is hit with probability above beta: the smallest evaluation_budget_factor that works."""
    beta = config.gtm.beta
    lo, hi = config.gtm.evaluation_budget_factor, config.gtm.evaluation_budget_factor
    while _budget_total(config, plan, rows, hi) > beta:
        lo, hi = hi, hi * 4
        if hi > 1e9:
            return Refusal("cost.budget-exceed",
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
    while math.fsum(C.budget_exceed_bound(p2.step(r["t"]), tau1=p2.tau1, mu1=p2.mu1) for r in rows) > beta:
        f = _sig_up(f * 1.01, 3)
        cfg = config.with_changes(evaluation_budget_factor=f)
        p2 = make_plan(cfg)
    total = math.fsum(r["budget_exceed_upper"] for r in rows)
    return Refusal(
        "cost.budget-exceed",
        f"the evaluation budget (factor {config.gtm.evaluation_budget_factor:g} x lambda_bar_t) is exceeded with "
        f"probability up to {total:.3g} > beta = {beta:g} over the horizon",
        f"smallest change that works: evaluation_budget_factor >= {f:g} (3 significant digits)",
        {"smallest_budget_factor": f},
    )


# ---------------------------------------------------------------------------
# provenance
# ---------------------------------------------------------------------------

_LIBRARIES = ("numpy", "scipy", "mpmath", "python-flint", "z3-solver", "cvc5", "matplotlib", "opendp", "click")


def library_versions() -> dict:
    out = {}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(seed: int, seeded: bool, timings: dict, mode: str, budgets: dict) -> dict:
    return {
        "gtm_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "seed": seed,
        "seeded": seeded,
        "seed_note": ("seeded by the user: reproducible, not for deployment" if seeded
                      else "seed drawn from the operating system and recorded for reproducibility"),
        "mode": mode,
        "budgets_seconds": budgets,
        "timings_seconds": timings,
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# ---------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------


def _require_planner(name: str) -> None:
    """A parameterisation without a planner in this installation is bad input (exit 2), not a refusal."""
    from gtm_core import planners

    planners._load_optional_planner(name)  # "exact", "exact_noise" register themselves on import
    if name not in planners.STEP_PLANNERS:
        raise UnsupportedConfiguration(f"parameterization {name!r} has no planner in this installation")


def budgets_for(quick: bool, seconds: float | None) -> dict:
    """Time budgets of the statistical and search witnesses."""
    if seconds is not None:
        if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0):
            raise ConfigError(f"seconds must be > 0, got {seconds!r}")
        total = float(seconds)
    else:
        total = 30.0 if quick else 400.0
    # the exact search's budget is CPU time (wall time grows on a loaded machine): keep its share small
    return {"audit": round(total * 0.55, 3), "exact_search": round(total * 0.2, 3),
            "exact_threshold": round(total * 0.25, 3)}


def certify(config: GTMConfig, *, horizon: int | None = None, quick: bool = False, seconds: float | None = None,
            seed: int | None = None, progress: bool = True, witnesses: bool = True) -> Certificate:
    """Certify a configuration: every claim with its witness (see the module docstring).

    ``witnesses=False`` skips the external witnesses (lemma checks, exact engine, audit): their claims
    are then ``witness-unavailable`` and the certificate is not certified (for tests of the engine)."""
    from . import certify_witnesses as W

    if not isinstance(config, GTMConfig):
        raise ConfigError(f"config must be a GTMConfig, got {type(config).__name__}")
    prog = Progress(progress)
    mode = "quick" if quick else "full"
    budgets = budgets_for(quick, seconds)
    seeded = seed is not None
    if seed is None:
        import secrets

        seed = secrets.randbits(63)
    cfg = effective_config(config, horizon)
    _require_planner(cfg.gtm.parameterization)
    T = cfg.stream.horizon
    prog.stage("derive", f"planning and checking {T} steps rigorously ({cfg.gtm.parameterization}, {mode})")
    try:
        d = derive(cfg, prog)
    except UnsupportedConfiguration as exc:
        prog.say(f"refused: {exc}")
        if cfg.gtm.parameterization == "horizon":  # its fix is a new design, not a smaller eps_t
            refusal = Refusal("accuracy.plannable", str(exc), "run `gtm tune` for a certified design", {})
        else:
            refusal = fix_vanishing_threshold(cfg, None)
        refusal = Refusal(refusal.claim_id, f"the planner cannot plan this configuration: {exc}", refusal.fix,
                          refusal.fix_values)
        claim = Claim("accuracy.plannable", "accuracy", "Every step up to the horizon can be planned in float64.",
                      {"error": str(exc)}, Witness("planner-bound", {}), "fail")
        timings = prog.finish()
        return Certificate(cfg, [claim], [], {}, [refusal], provenance(seed, seeded, timings, mode, budgets), mode)
    claims = list(d.claims)
    if not d.refusals:
        claims += W.external_claims(cfg, d.plan, d.steps, quick=quick, budgets=budgets, seed=seed, progress=prog,
                                    skip=not witnesses)
    else:
        prog.say("configuration refused: skipping the statistical and search witnesses")
    timings = prog.finish()
    prov = provenance(seed, seeded, timings, mode, budgets)
    claims.append(Claim(
        "provenance", "provenance",
        "Package and library versions, configuration hash, seed and timings of this certificate.",
        {"gtm_version": __version__, "config_sha256": cfg.digest(), "seed": seed, "seeded": seeded},
        Witness("record", {"libraries": prov["libraries"]}), "recorded",
    ))
    cert = Certificate(cfg, claims, d.steps, d.globals, d.refusals, prov, mode)
    prog.say(f"verdict: {cert.verdict}")
    return cert


# ---------------------------------------------------------------------------
# verification
# ---------------------------------------------------------------------------


class CertificateUnreadable(GTMError):
    """The file is not a gtm certificate (not JSON, wrong format, missing fields)."""


@dataclass
class Verification:
    status: str  # "valid" | "tampered" | "mismatched"
    problems: list[str]

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def load_document(path) -> dict:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise CertificateUnreadable(f"cannot read certificate {str(path)!r}: {exc.strerror}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CertificateUnreadable(f"certificate {str(path)!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != CERT_FORMAT or not isinstance(doc.get("body"), dict) \
            or not isinstance(doc.get("sha256"), str):
        raise CertificateUnreadable(f"{str(path)!r} is not a {CERT_FORMAT} document")
    for key in ("config", "config_sha256", "claims", "steps", "globals", "refusals", "verdict", "provenance"):
        if key not in doc["body"]:
            raise CertificateUnreadable(f"certificate body lacks {key!r}")
    return doc


def _diff(path: str, stored, derived, problems: list[str], limit: int = 20) -> None:
    if len(problems) >= limit:
        return
    if isinstance(stored, dict) and isinstance(derived, dict):
        for k in sorted(set(stored) | set(derived)):
            if k not in stored or k not in derived:
                problems.append(f"{path}.{k}: present on one side only")
            else:
                _diff(f"{path}.{k}", stored[k], derived[k], problems, limit)
    elif isinstance(stored, list) and isinstance(derived, list):
        if len(stored) != len(derived):
            problems.append(f"{path}: length {len(stored)} != re-derived {len(derived)}")
            return
        for i, (a, b) in enumerate(zip(stored, derived)):
            _diff(f"{path}[{i}]", a, b, problems, limit)
    elif stored != derived or type(stored) is not type(derived):
        problems.append(f"{path}: certificate has {stored!r}, re-derived {derived!r}")


def verify_document(doc: dict, progress: bool = False) -> Verification:
    """Digest check, then re-derive every planner number and deterministic claim from the embedded config."""
    body = doc["body"]
    problems: list[str] = []
    if body_digest(body) != doc["sha256"]:
        problems.append("sha256 digest of the body does not match: the certificate was edited")
        return Verification("tampered", problems)
    try:
        config = GTMConfig.from_dict(body["config"])
    except GTMError as exc:
        return Verification("tampered", [f"embedded configuration is invalid: {exc}"])
    if config.digest() != body["config_sha256"]:
        return Verification("tampered", ["config_sha256 does not match the embedded configuration"])
    version = body["provenance"].get("gtm_version") if isinstance(body["provenance"], dict) else None
    if version != __version__:
        return Verification("mismatched", [f"certificate made by gtm {version}, this is gtm {__version__}: "
                                           f"numbers cannot be re-derived across versions"])
    try:
        d = derive(config, Progress(progress))
    except UnsupportedConfiguration:
        if body["steps"]:
            return Verification("tampered", ["the embedded configuration cannot be planned, yet steps are listed"])
        return Verification("valid", [])
    _diff("steps", body["steps"], d.steps, problems)
    _diff("globals", body["globals"], d.globals, problems)
    stored_claims = {c.get("id"): c for c in body["claims"] if isinstance(c, dict)}
    for c in d.claims:
        s = stored_claims.get(c.id)
        if s is None:
            problems.append(f"claim {c.id} is missing")
            continue
        _diff(f"claims[{c.id}]", s, jsonable(c.to_dict()), problems)
    derived_ids = {c.id for c in d.claims} | EXTERNAL_CLAIMS | {"provenance"}
    for cid in stored_claims:
        if cid not in derived_ids:
            problems.append(f"claim {cid} is not one this version produces")
    _diff("refusals", body["refusals"], jsonable([r.to_dict() for r in d.refusals]), problems)
    numeric = bool(problems)
    problems += _check_external_consistency(body)
    verdict = _verdict_of(body)
    if verdict != body["verdict"]:
        problems.append(f"verdict {body['verdict']!r} does not follow from the claims ({verdict!r})")
    if not problems:
        return Verification("valid", [])
    # Re-derived float64 numbers can differ in the last bits across platforms or library builds
    # (libm, numpy, scipy). The digest matched, so if only re-derived numbers differ and the
    # certificate was made elsewhere, say so instead of calling it tampered.
    prov = body.get("provenance") or {}
    elsewhere = prov.get("libraries") != library_versions() or prov.get("platform") != platform.platform()
    only_numeric = numeric and len(problems) == len([p for p in problems if "re-derived" in p])
    if elsewhere and only_numeric:
        return Verification("mismatched", ["made on a different platform or with different library versions; "
                                           "re-derived numbers differ:"] + problems)
    return Verification("tampered", problems)


def _verdict_of(body: dict) -> str:
    statuses = [c.get("status") for c in body["claims"]]
    if body["refusals"] or "fail" in statuses:
        return "refused"
    if "witness-unavailable" in statuses:
        return "incomplete"
    return "certified"


def _check_external_consistency(body: dict) -> list[str]:
    """Digest-protected witnesses cannot be re-run cheaply; their status must follow from their numbers."""
    from . import certify_witnesses as W

    return W.consistency_problems(body)
