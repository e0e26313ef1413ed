"""The certificate's independent witnesses beyond rigorous arithmetic: the lemma checks of
:mod:`proofs`, the instantiated parameter identities, the exact engine's worst-case search and
exact thresholds, and a short audit of the reference implementation.

Every witness is a function ``WitnessContext -> Claim``; :data:`DEFAULT_WITNESSES` maps each
external claim id to its function and :func:`audits.certify.run.certify` is handed that mapping
(tests hand it others). Every witness module ships in this package, so nothing is feature-checked:
an exception inside a witness is not caught here - the orchestrator turns it into a *failed*
claim carrying the error message, never into a silent ``witness-unavailable``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable, Mapping

from flint import arb

from gtm_core import exact
from gtm_core.errors import UnsupportedConfiguration
from gtm_core.exact.arb import working_precision
from proofs import cache as lemma_cache
from proofs import instantiate, registry
from proofs.plan_checks import CHERNOFF_PLANNERS

from .. import capped_claim, capped_target, gtm_audit, targets
from .derive import approximate_delta_upper
from .model import Claim, Witness, WitnessContext
from .rows import StepDesign

# Paper results whose lemma checks back the privacy and accuracy claims of a certificate
# (registry names of proofs/registry.py; a prefix selects every sub-check, e.g. lemma10.3a ...).
BACKING_LEMMAS = ("lemma10", "lemma11", "lemma15", "lemma17", "lemma19", "lemma20", "theorem21", "lemma22",
                  "theorem23", "lemma24")


# ---------------------------------------------------------------------------
# proofs/
# ---------------------------------------------------------------------------


def lemma_checks_claim(plan, *, quick: bool) -> Claim:
    cid = "privacy.lemma-checks"
    statement = ("The lemmas behind the privacy and accuracy claims (Lemmas 10, 11, 15, 17, 19, 20, 22, 24, "
                 "Theorems 21 and 23) are proved by Z3 and cvc5 or certified by interval arithmetic, and every "
                 "mutant is killed.")
    results, cached, key, seconds = registry_results(BACKING_LEMMAS)
    ok = bool(results) and all(r["ok"] for r in results.values())
    return Claim(cid, "privacy", statement,
                 {"lemmas": results, "cached": cached, "seconds": seconds,
                  "failing": sorted(k for k, r in results.items() if not r["ok"])},
                 Witness("solver-proof", {"registry": "proofs.registry", "cache_key": key,
                                          "cache": "reused when proofs/*.py and the solver versions are unchanged"}),
                 "pass" if ok else "fail")


def cache_dir() -> Path:
    """Where lemma-check results are cached (``$GTM_CACHE_DIR``, else ``$XDG_CACHE_HOME/gtm``)."""
    base = os.environ.get("GTM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gtm")
    return Path(base)


def registry_results(names) -> tuple[dict, bool, str, float]:
    """Run the named lemma checks, or reuse a cached run of them that :mod:`proofs.cache` trusts.
    Returns ({check: verdict}, cached, cache key, seconds of the run)."""
    return lemma_cache.lemma_results(names, registry, cache_dir())


def plan_identities_claim(plan, rows, *, progress) -> Claim:
    cid = "privacy.plan-identities"
    statement = ("The parameter identities proved in proofs/ (Theorem 21: 1/tau1 + 2/tau2 = eps and the Lambda_t "
                 "exponent bookkeeping; Theorem 23: the exact cancellation) hold for this plan's numbers, "
                 "checked rigorously.")
    if plan.parameterization == "horizon":
        return Claim(cid, "privacy", statement + " Not applicable to the horizon planner: its c_t, rho_t, Lambda_t "
                     "are not Theorem 21's (privacy rests on Lemma 17 alone, checked by privacy.pure-epsilon).",
                     {}, Witness("solver-proof", {"function": "proofs.instantiate.check_plan_identities"}),
                     "not-applicable")
    T = len(rows)
    failures, names, skipped = [], set(), set()
    first: dict = {}
    for t in range(1, T + 1):  # every step: about 5 ms each
        res = instantiate.check_plan_identities(plan, t)
        failed = res.failed()
        if plan.parameterization not in CHERNOFF_PLANNERS:
            # the exact planners pick c_t, rho_t from exact tails, not from the Chernoff thresholds
            # of Lemma 11 / Lemma 20: those identities do not apply (accuracy.poisson-tails, or for
            # exact_noise accuracy.noise-integrated-tails, certifies the exact probabilities instead)
            skipped.update(c.name for c in failed if chernoff_identity(c, plan.parameterization))
            failed = [c for c in failed if not chernoff_identity(c, plan.parameterization)]
            ok = not failed
        else:
            ok = res.ok
        if not ok:
            failures.append(t)
            names.update(c.name for c in failed)
        if t == 1:
            first = res.to_dict()
        progress.steps(t, T)
    checked = [c.get("name") for c in first.get("claims", [])]
    values = {"steps_checked": T, "identities_per_step": checked, "failing_steps": failures[:20],
              "failing_identities": sorted(names)}
    if skipped:
        values["not_applicable_identities"] = sorted(skipped)
    return Claim(cid, "privacy", statement, values,
                 Witness("solver-proof", {"function": "proofs.instantiate.check_plan_identities",
                                          "method": "exact rationals and arb balls at the plan's numbers"}),
                 "pass" if not failures else "fail")


def chernoff_identity(claim, parameterization: str = "exact") -> bool:
    """Lemma 11 / Lemma 20 identities that hold for the Chernoff-threshold planners only. For
    exact_noise also Lemma 10(3b)'s domain condition c + 1 >= 2 ln(1/beta): its c_t is far below
    Theorem 21's, and no Chernoff tail bound is used."""
    if parameterization == "exact_noise" and claim.name.startswith("c + 1 >= 2 ln(1/beta)"):
        return True
    return claim.lemma.startswith("Lemma 11") or claim.name.startswith("rho = lambda^")


# ---------------------------------------------------------------------------
# exact engine
# ---------------------------------------------------------------------------


def exact_search_claim(plan, *, max_attempts: int, time_cap: float, seed: int, quick: bool = True,
                       executor=None, delta_claimed: float | None = None) -> Claim:
    """privacy.exact-worst-case: the pure-loss search of Algorithm 1 (``"none"``), or under
    ``"refuse"`` the (epsilon, delta) check :func:`exact_delta_claim` against ``delta_claimed``
    (privacy.approximate's delta; required then)."""
    if not plan.pure:
        if delta_claimed is None:
            raise UnsupportedConfiguration("privacy.exact-worst-case of a capped plan needs the claimed delta")
        return exact_delta_claim(plan, max_attempts=max_attempts, time_cap=time_cap, seed=seed, quick=quick,
                                 executor=executor, delta_claimed=delta_claimed)
    cid = "privacy.exact-worst-case"
    statement = ("The exact engine's worst-case search over neighbouring Bernoulli streams finds no transcript "
                 "whose exact privacy loss exceeds its claimed bound (Lemma 17 (6)-(7)).")
    horizon = min(3 if quick else 5, plan.horizon)
    res = exact.worst_case_search(plan, horizon=horizon, seconds=time_cap, seed=seed % (2**32),
                                  max_attempts=max_attempts, **search_mapping(executor))
    found, error, claimed = float(res.loss), float(res.loss_error), float(res.claimed)
    values = {"loss_found": found, "loss_error": error, "loss_claimed": claimed,
              "ratio": found / claimed if claimed else None, "search_horizon": horizon,
              "evaluations": res.evaluations, "attempts": res.attempts, "max_attempts": max_attempts,
              "complete": res.complete, "seconds": res.seconds,
              "witness": {"p": list(res.p), "p_prime": list(res.p_prime), "transcript": res.transcript,
                          "t": res.t}}
    exceeds = found - error > claimed
    return Claim(cid, "privacy", statement, values,
                 Witness("exact-engine", {"function": "gtm_core.exact.worst_case_search",
                                          "seed": seed % (2**32)}),
                 "fail" if exceeds else "pass")


# An attempt of the delta search evaluates two capped laws (the refusal correction's integrals):
# about this many times an attempt of the pure search at horizon 3. The delta search gets the
# certificate's attempt count divided by it (at least DELTA_MIN_ATTEMPTS), and a CPU-time safety cap of
# DELTA_CPU_SECONDS_PER_ATTEMPT per attempt (never the budget: a complete search re-runs by its count).
DELTA_ATTEMPT_COST = 40
DELTA_MIN_ATTEMPTS = 4
DELTA_CPU_SECONDS_PER_ATTEMPT = 150.0
DELTA_SEARCH_DPS, DELTA_FINAL_DPS = 8, 12


def delta_search_attempts(max_attempts: int) -> int:
    """The delta search's attempt count for the certificate's pure-search count ``max_attempts``."""
    return max(DELTA_MIN_ATTEMPTS, max_attempts // DELTA_ATTEMPT_COST)


def exact_delta_claim(plan, *, max_attempts: int, time_cap: float, seed: int, quick: bool, executor,
                      delta_claimed: float) -> Claim:
    """privacy.exact-worst-case under ``"refuse"``: the exact engine's law of the capped mechanism, the
    searched pair maximising the hockey-stick delta_eps at the claimed eps (``objective="delta"``), whose
    arb upper enclosure must lie below privacy.approximate's delta (compared as arb balls). The pure
    loss is no claim of a capped mechanism (privacy.pure-epsilon is n/a)."""
    cid = "privacy.exact-worst-case"
    eps = float(plan.worst_claimed_loss())
    statement = (f"The exact engine's law of the deployed, capped mechanism (evaluation_budget = \"refuse\": "
                 f"refusals included), searched over neighbouring Bernoulli streams, finds no pair whose "
                 f"hockey-stick divergence delta_eps at eps = {eps:g} exceeds the delta of privacy.approximate "
                 f"({delta_claimed:.3g}): the arb upper enclosure of the delta found (its quadrature error "
                 f"estimated, not certified, under a budget) lies below it.")
    horizon = min(1 if quick else 2, plan.horizon)
    attempts = delta_search_attempts(max_attempts)
    cap = max(float(time_cap), attempts * DELTA_CPU_SECONDS_PER_ATTEMPT)
    res = exact.worst_case_search(plan, horizon=horizon, seconds=cap, seed=seed % (2**32), max_attempts=attempts,
                                  objective="delta", dps=DELTA_SEARCH_DPS, final_dps=DELTA_FINAL_DPS,
                                  **search_mapping(executor))
    with working_precision(64):
        ok = bool(arb(res.delta_upper) <= arb(float(delta_claimed)))
    values = {"objective": "delta", "epsilon": eps, "delta_found": float(res.loss),
              "delta_found_error": float(res.loss_error), "delta_found_upper": float(res.delta_upper),
              "delta_claimed": float(delta_claimed), "delta_claim": "privacy.approximate",
              "search_horizon": horizon, "evaluations": res.evaluations, "attempts": res.attempts,
              "max_attempts": attempts, "complete": res.complete, "seconds": res.seconds,
              "witness": {"p": list(res.p), "p_prime": list(res.p_prime), "direction": res.transcript}}
    return Claim(cid, "privacy", statement, values,
                 Witness("exact-engine", {"function": "gtm_core.exact.worst_case_search", "objective": "delta",
                                          "seed": seed % (2**32)}),
                 "pass" if ok else "fail")


def search_mapping(executor) -> dict:
    """How the exact search's starts are evaluated on ``executor``: its ordered map (the starts are pure
    and reduced in order, so the result is the same), in chunks that keep every worker busy."""
    if executor is None:
        return {}
    return {"map_starts": executor.map_ordered, "chunk": max(8, 8 * int(executor.workers))}


# the exact-threshold witness computes this many sampled steps per budget-second (a count, so that
# ``--verify --rerun`` reproduces it whatever the machine's load)
THRESHOLD_STEPS_PER_SECOND = 0.4


def exact_threshold_claim(plan, rows, *, seconds: float) -> Claim:
    cid = "accuracy.exact-threshold"
    statement = ("The exact engine's rejection threshold at sampled steps: the largest p whose exact halting "
                 "probability (eta_1 and eta_2,t integrated, no union or Chernoff bound) stays within beta^I_t, "
                 "next to the paper's p_bar_t; the gain is how much tighter the exact analysis is.")
    T = len(rows)
    ts = sorted({t for t in (1, 10, 100, 1000, T) if t <= T})
    table = {}
    max_steps = max(1, int(seconds * THRESHOLD_STEPS_PER_SECOND))
    for t in ts[:max_steps]:
        d = exact.exact_rejection_threshold(plan, t)
        pe = float(d["p_exact"])
        pb = StepDesign.from_dict(rows[t - 1]).p_bar
        table[str(t)] = {"p_bar_paper": pb, "p_bar_exact": pe, "gain": pe / pb if pb > 0 else None,
                         "bracket": list(d["bracket"])}
    return Claim(cid, "accuracy", statement,
                 {"thresholds": table, "steps": [int(t) for t in table], "max_steps": max_steps,
                  "tighter_at": [int(t) for t, v in table.items() if v["p_bar_exact"] > v["p_bar_paper"]]},
                 Witness("exact-engine", {"function": "gtm_core.exact.exact_rejection_threshold"}), "info")


# ---------------------------------------------------------------------------
# auditor
# ---------------------------------------------------------------------------


def audit_claim(plan, *, max_samples: int, seed: int, confidence: float = 0.95, executor=None,
                claim: str = "auto", delta_claimed: float | None = None) -> Claim:
    """privacy.audit: a statistical audit of the deployed GTM against the privacy claim its configuration
    makes (:func:`audits.capped_claim.privacy_claim`; ``claim`` forces another, for tests of the tester).
    ``evaluation_budget = "none"``: the in-process simulator of Algorithm 1 (:class:`audits.targets.
    SimulatorTarget`) against pure epsilon (the loss test, a lower bound on epsilon); ``"refuse"``: the
    deployed, capped GTM (:class:`audits.capped_target.DeployedSimulatorTarget`, refusals included)
    against (epsilon, delta) (the hockey-stick test, a lower bound on delta(epsilon);
    ``max_samples`` sets its estimation size, a quarter per input of the chosen pair).
    ``delta_claimed``: the certificate's delta (privacy.approximate's arb upper bound) in place of the
    planner's float one for an (epsilon, delta) claim (the two agree; the audit tests what is printed)."""
    cid = "privacy.audit"
    stated = capped_claim.privacy_claim(plan, claim=claim)
    if delta_claimed is not None and stated.measure == capped_claim.APPROXIMATE:
        stated = dataclasses.replace(stated, delta=float(delta_claimed))
    _, eps_t = gtm_audit.audit_parameters(plan.config)
    if stated.method == capped_claim.LOSS:
        return _loss_audit(plan, stated, eps_t, max_samples=max_samples, seed=seed, confidence=confidence,
                           executor=executor)
    target = capped_target.DeployedSimulatorTarget(plan)
    res = capped_claim.audit_claim(target, stated, eps_t=eps_t, seconds=None, seed=seed % (2**32),
                                   confidence=confidence, max_samples=max_samples).result
    statement = (f"A statistical audit of the deployed GTM under this configuration (evaluation_budget = "
                 f"\"{plan.budget_policy}\": refusals included) finds no violation of its "
                 f"{_measure_words(stated)} claim: the {confidence:g}-confidence lower bound on the "
                 f"hockey-stick divergence delta(eps) at eps = {stated.epsilon:g} stays at or below "
                 f"delta = {stated.delta:.3g}.")
    lb = float(res.delta_lower_bound)
    values = {"verdict": res.verdict, "method": stated.method, "measure": stated.measure,
              "epsilon_claimed": stated.epsilon, "delta_claimed": stated.delta, "delta_lower_bound": lb,
              "confidence": res.confidence, "samples": res.samples, "max_samples": max_samples,
              "seconds": res.seconds, "claim": stated.to_dict(), "witness": res.witness}
    ok = res.verdict == "no-violation-found" and lb <= stated.delta
    return Claim(cid, "privacy", statement, values,
                 Witness("audit", {"target": "in-process vectorised deployed GTM, evaluation budget enforced "
                                             "(audits.capped_target)", "test": "audits.capped_claim.audit_claim",
                                   "seed": seed}), "pass" if ok else "fail")


def _measure_words(stated) -> str:
    return (f"pure {stated.epsilon:g}-DP" if stated.measure == capped_claim.PURE
            else f"({stated.epsilon:g}, {stated.delta:.3g})-DP")


def _loss_audit(plan, stated, eps_t, *, max_samples: int, seed: int, confidence: float, executor) -> Claim:
    """The pure-epsilon loss audit of the uncapped GTM (Algorithm 1, no budget: the simulator)."""
    cid = "privacy.audit"
    statement = ("A statistical audit of the reference GTM under this configuration finds no privacy violation: "
                 f"the {confidence:g}-confidence lower bound on the privacy loss stays at or below the claim.")
    target = targets.SimulatorTarget(plan)
    claimed = stated.epsilon
    res = gtm_audit.audit(target, epsilon=claimed, eps_t=eps_t, seconds=None, max_samples=max_samples,
                          seed=seed % (2**32), confidence=confidence, progress=False, executor=executor)
    d = res.to_dict()
    lb = float(d["epsilon_lower_bound"])
    verdict = d["verdict"]
    values = {"verdict": verdict, "epsilon_claimed": claimed, "epsilon_lower_bound": lb,
              "confidence": d["confidence"], "samples": d["samples"], "max_samples": max_samples,
              "seconds": d["seconds"]}
    if d["per_event"]:
        values["events"] = d["per_event"]
    values["witness"] = d["witness"]
    ok = verdict == "no-violation-found" and lb <= claimed
    return Claim(cid, "privacy", statement, values,
                 Witness("audit", {"target": "in-process simulator of the reference GTM (audits.targets)",
                                   "seed": seed}), "pass" if ok else "fail")


# ---------------------------------------------------------------------------
# the default mapping handed to the orchestrator
# ---------------------------------------------------------------------------

WitnessFunction = Callable[[WitnessContext], Claim]

DEFAULT_WITNESSES: Mapping[str, WitnessFunction] = {
    "privacy.lemma-checks": lambda ctx: lemma_checks_claim(ctx.plan, quick=ctx.quick),
    "privacy.plan-identities": lambda ctx: plan_identities_claim(ctx.plan, ctx.rows, progress=ctx.progress),
    "privacy.exact-worst-case": lambda ctx: exact_search_claim(
        ctx.plan, max_attempts=ctx.budgets["search_attempts"], time_cap=ctx.budgets["search_time_cap"],
        seed=ctx.seed, quick=ctx.quick, executor=ctx.executor,
        delta_claimed=None if ctx.plan.pure else approximate_delta_upper(ctx.plan, ctx.rows)[0]),
    "accuracy.exact-threshold": lambda ctx: exact_threshold_claim(ctx.plan, ctx.rows,
                                                                  seconds=ctx.budgets["exact_threshold"]),
    "privacy.audit": lambda ctx: audit_claim(
        ctx.plan, max_samples=ctx.budgets["audit_samples"], seed=ctx.seed, executor=ctx.executor,
        delta_claimed=None if ctx.plan.pure else approximate_delta_upper(ctx.plan, ctx.rows)[0]),
}
