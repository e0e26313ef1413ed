"""The end of an audit: the conditional test on the pre-registered witness, the verdict, and the
summary of the search and of the budget (:mod:`audits.audit_results`).

:func:`conclude` is the engine's last step (:func:`audits.audit_engine.run_audit`);
:func:`budget_assessment` says whether the budget could have given a meaningful bound.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from .audit_results import (METHOD, NO_VIOLATION, VIOLATION, AuditResult, AuditWitness, BudgetAssessment,
                            FamilyTally, RankedPair, SearchCoverage, SearchSummary)
from .audit_scoring import Estimation, ScoredCandidate, Selection
from .early_stop import EarlyVerdict, final_alpha
from .sampling import AuditSettings, SampleBook
from .statistics import conditional_loss_lower_bound, event_estimates, garwood_interval

SELECTION_TOP = 5  # best pairs of the last selection round listed in the JSON


def conclude(problem, book: SampleBook, settings: AuditSettings, selection: Selection, chosen: ScoredCandidate,
             estimation: Estimation, target_name: str) -> AuditResult:
    """The conditional test on the witness event, the per-event estimates and the verdict. With early
    verdicts the bound is the stopping look's (:mod:`audits.early_stop`), else the final look's at
    ``final_alpha`` (alpha without early verdicts: the fixed-sample test)."""
    alpha = settings.alpha
    a, b = problem.inputs(chosen.candidate)
    events = problem.events(chosen.candidate)
    hits_a = int(estimation.hist_a[chosen.membership].sum())
    hits_b = int(estimation.hist_b[chosen.membership].sum())
    level = estimation.early.alpha if estimation.early is not None else final_alpha(alpha, settings.early_stop)
    bound = float(conditional_loss_lower_bound(hits_a, hits_b, level))
    lower_a, _ = garwood_interval(hits_a, alpha / 2)
    _, upper_b = garwood_interval(hits_b, alpha / 2)
    runs_mean, runs_a, runs_b = estimation.runs_mean, estimation.n_a, estimation.n_b
    witness = AuditWitness(
        input_a=problem.describe_input(a), input_b=problem.describe_input(b), event=chosen.event,
        family=chosen.candidate.family, count_a=hits_a, n_a=runs_a, count_b=hits_b, n_b=runs_b,
        probability_a=hits_a / max(runs_a, 1), probability_a_lower=min(float(lower_a) / max(runs_mean, 1), 1.0),
        probability_b=hits_b / max(runs_b, 1), probability_b_upper=min(float(upper_b) / max(runs_mean, 1), 1.0),
        event_codes=tuple(int(x) for x in np.nonzero(chosen.membership)[0]), runs_mean=int(runs_mean),
        loss_bound=bound,
    )
    per_event = event_estimates(events.names, events.counts(estimation.hist_a), runs_a,
                                events.counts(estimation.hist_b), runs_b, alpha)
    bound_reported = max(bound, 0.0) if math.isfinite(bound) else 0.0
    families = dict(sorted((selection.families or {}).items()))
    search = SearchSummary(
        rounds=selection.rounds, pairs_examined=selection.pairs_examined,
        selection_top=tuple(RankedPair(sc.score, sc.event, sc.candidate.to_dict())
                            for sc in selection.ranked[:SELECTION_TOP]),
        projected_bound=chosen.score, final_runs_per_stream=runs_a,
        first_round_runs_per_input=selection.first_round_runs,
        first_round_runs_per_input_structured=selection.first_round_runs_structured, families=families,
        coverage=search_coverage(problem, families, ended_early=selection.ended_early),
        budget=budget_assessment(settings, book, hits_a, hits_b, runs_mean, alpha))
    return AuditResult(
        verdict=VIOLATION if bound > settings.epsilon else NO_VIOLATION, epsilon_claimed=settings.epsilon,
        epsilon_lower_bound=float(bound_reported), confidence=settings.confidence, witness=witness,
        samples=int(book.samples), seconds=book.clock.elapsed(), seed=settings.seed, target=target_name,
        per_event=tuple(per_event), search=search, method=METHOD,
        early_stop=early_verdict(settings, book, selection, estimation) if settings.early_stop else None,
    )


def early_verdict(settings: AuditSettings, book: SampleBook, selection: Selection,
                  estimation: Estimation) -> EarlyVerdict:
    """The ``early_stop`` record: the looks, the one that stopped the audit (if any), and the time to
    verdict - the stopping look's runs and seconds, else the whole audit's."""
    early = estimation.early
    samples, seconds = (early.samples, early.seconds) if early is not None else (book.samples, book.clock.elapsed())
    return EarlyVerdict(alpha=settings.alpha, looks=estimation.looks,
                        stopped_look=None if early is None else early.look,
                        selection_ended_early=selection.ended_early, samples=int(samples), seconds=float(seconds),
                        budget_samples=settings.max_samples)


def search_coverage(problem, families: Mapping[str, FamilyTally], *, ended_early: bool = False) -> SearchCoverage:
    """The problem's coverage (``problem.coverage()``, empty without one), plus the proposed pairs the
    first round never sampled (the selection budget ran out, or ``ended_early``: a flagrant pair ended the
    selection), as a skipped region."""
    coverage = problem.coverage() if hasattr(problem, "coverage") else SearchCoverage()
    unvisited = sum(f.not_visited for name, f in families.items() if not name.endswith("+refined"))
    if unvisited:
        reason = ("early verdicts: a flagrant pair ended the selection (early_stop.selection_ended_early)"
                  if ended_early else "the selection budget ran out during the first round")
        coverage = coverage.with_skipped(f"{unvisited} proposed pairs never sampled",
                                         f"{reason} (see families.*.not_visited)")
    return coverage


def budget_assessment(settings: AuditSettings, book: SampleBook, hits_a: int, hits_b: int, runs_mean: int,
                      alpha: float) -> BudgetAssessment:
    """How much of the budget was used, and whether it was large enough for a meaningful bound.

    ``best_reachable_bound``: the largest bound the conditional test could have reported on the
    witness event with the hits it got, had all of them fallen on the first input
    (:func:`audits.statistics.conditional_loss_lower_bound` of (k_A + k_B, 0)) - a property of the
    budget, not of the deployment. Below the claimed epsilon, no violation could have been found on
    this event however large the true loss: the JSON then carries a warning."""
    hits = int(hits_a) + int(hits_b)
    reach = float(conditional_loss_lower_bound(hits, 0, alpha))
    meaningful = bool(reach > settings.epsilon)
    warning = None
    if not meaningful:
        warning = (f"budget too small for a meaningful bound: with {int(runs_mean)} runs per input the witness "
                   f"event got {hits} hits, so the best bound reachable was "
                   f"{reach if math.isfinite(reach) else float('-inf'):.3f} <= claimed epsilon "
                   f"{settings.epsilon:g}")
    elapsed = book.clock.elapsed()
    return BudgetAssessment(
        seconds=settings.seconds, max_samples=settings.max_samples, samples_used=int(book.samples),
        seconds_used=elapsed, time_share_used=(elapsed / settings.seconds) if settings.seconds else None,
        final_runs_per_input=int(runs_mean), best_reachable_bound=reach if math.isfinite(reach) else None,
        meaningful=meaningful, warning=warning)
