"""The generic audit engine: selection -> validation -> estimation, then the verdict.

:func:`run_audit` is generic over an :class:`AuditProblem` - the GTM problem of
:mod:`audits.gtm_audit`, the finite-output problems of :mod:`audits.finite`, the Sparse Vector
problems of :mod:`audits.power.svt` - so the same statistics audit all of them.

Three phases (:func:`select`, :func:`validate`, :func:`estimate`), on disjoint samples:

1. *Selection* (a share of the budget): successive halving over the candidate pairs. The first
   round samples every pair (runs per input sized to the budget, :func:`first_round_runs`); in each
   later round the survivors are sampled twice as much, ranked by the bound the final phase would
   report (exploitation, :func:`audits.audit_scoring.score_candidate`) and by the point estimate of
   their loss (exploration), the best quarter of each ranking survive, and the best few of each are
   refined (``problem.refine``; the refinements are sampled first in the next round).
   While no pair is projected above the claim the selection may use EXTENDED_SELECTION_SHARE of
   the budget. The JSON's ``search`` section lists the families tried (pairs proposed / sampled),
   the searched region and every skipped region with its reason (``problem.coverage()``), and
   ``search.budget`` whether the budget could give a meaningful bound.
2. *Validation*: the top pairs and their best events re-ranked on fresh samples (removes the
   winner's curse); for a wide search also the best pair of each event space the top pairs do not
   cover, from any round (:func:`validation_pool`). The output is one pre-registered witness: a
   pair, an event and a direction.
3. *Estimation*: fresh samples of the witness pair only. The planned number of runs M per input
   is fixed before sampling (from the measured throughput and the remaining budget); each input
   is run a Poisson(M) number of times (drawn from the audit's seeded generator, independent of
   the outputs), so the event counts are independent Poisson variables and the *conditional
   test* of :func:`audits.statistics.conditional_loss_lower_bound` (one Clopper-Pearson bound at
   level alpha on Pr_A[E] / (Pr_A[E] + Pr_B[E]) given the total count) is exact. Only this single
   hypothesis is tested, so no further multiplicity correction is needed and the bound holds at
   the stated confidence overall. (With a sample budget, M leaves 5 standard deviations of the
   Poisson total as slack, so the budget is exceeded with probability < 1e-6.)

The verdict and the search summary are assembled by :func:`audits.audit_verdict.conclude`.

Budget stops. When both a time budget and a sample budget are given, the clock is a hard stop. An audit
whose clock runs out before its sample budget is spent - between requests, or while a request is in
flight (:class:`gtm_core.errors.BudgetStop` from the target: the audit's own deadline, not a failure of
the target) - ends with the bound reached so far, and ``search.budget.stopped`` says where it stopped and
after how many runs (:func:`budget_stop_note`). The bound stays valid: the stopping rule depends on the
clock only, and an interrupted estimation chunk is discarded whole. Only a stop before any pair was
sampled has no bound at all: it raises :class:`~gtm_core.errors.BudgetStop` (``gtm audit``: exit 2).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Protocol

import numpy as np

from gtm_core.errors import BudgetStop, InvalidParameter
from gtm_core.validation import check_nonnegative_int, check_seconds

from .audit_results import AuditResult, FamilyTally
from .audit_scoring import (DETECTION_EVENT, DETECTION_TARGET, Estimation, ScoredCandidate, Selection,
                            fine_runs_needed, first_round_keep_probability, keeps, score_candidate,
                            screen_candidate)
from .audit_verdict import conclude
from .events import EventSpace
from .sampling import AuditSettings, Clock, ProgressBar, SampleBook, Seeds
from .statistics import projected_conditional_bound

VALIDATION_K = 8  # witnesses re-ranked on fresh samples before the estimation phase
VALIDATION_SHAPES = 3  # wide searches re-rank up to this many more: the best pair of each event space the
# others do not cover: a long stream whose leak sits on a rare event ranks low until it has many samples, and the
# refinements of a short strong pair can fill the whole last round (power suite step-noise-reused)
ESTIMATION_MIN_CHUNK = 1000  # the estimation phase re-plans while at least this many runs per input fit
ESTIMATION_CHUNK = 16_000_000  # runs per input of one estimation request group with a sample budget: a
# fixed number (placement-independent: the chunks' Poisson draws are part of the result), large enough that
# 2..32 workers each get whole 10^6-run batches per round trip
TIMED_CHUNK_PER_WORKER = 1_000_000  # with a time budget: runs per input and worker between two re-plans
EXTENDED_SELECTION_SHARE = 0.6  # selection share while nothing is projected above the claim
FIRST_ROUND_SHARE = 0.5  # at most this share of the selection budget goes to the first (coverage) round
MIN_FIRST_ROUND = 50  # runs per input of the first round, at least
FIRST_ROUND_MAX_FACTOR = 64  # ... and at most this many times n0: a leak on an event of probability q is
# seen ~n q times in the first round; at n = n0 = 1000 and q = 3e-3 it is seen fewer than 3 times (the
# exploration threshold) with probability 0.42, so a budget that allows more must buy more
FINE_SHARE = 0.2  # share of the whole budget for the first round of a fine family (pairs of family "fine":
# half-move level spacing, audits.pair_search.fine_candidates), on top of the first round of the others
FINE_EASIEST_EVENT = 1e-2  # the most likely leak event of the narrow planted suite (loss claim + 1) ...
# ... a fine first round must keep with probability DETECTION_TARGET, else it is not run (it would cost its share
# - time the coarse families' halving rounds need - and see nothing): fine_min_runs(); the coverage section then
# lists the family as not sampled, with the runs its share afforded
FINE_EXPLORE_TOP = 32  # screened fine pairs kept by their point estimate alone (besides the always-survive rule)
FINE_PILOT = 8  # candidates spread over the fine family that time its per-request cost (time budget)
DEADLINE_GRACE_SECONDS = 1.5  # how far past --seconds a target's answer is still awaited


class AuditProblem(Protocol):
    """What the engine needs to know about the audited mechanism. Candidates carry ``family`` and
    ``to_dict()``; inputs are hashable sequences. ``initial_samples`` (first-round runs per input)
    overrides the engine's default when the problem's strongest events are rare (None: the default, the
    first round is then sized to the budget). ``explore`` (optional, default False): keep the best pairs
    by the point estimate of their loss as well as by the projected bound in every halving round.
    ``coverage()`` (optional): an :class:`audits.audit_results.SearchCoverage` of what is searched."""

    initial_samples: int | None

    def initial_candidates(self) -> list: ...
    def refine(self, candidate, rng: np.random.Generator) -> list: ...
    def inputs(self, candidate) -> tuple[Any, Any]: ...  # hashable inputs (A, B)
    def events(self, candidate) -> EventSpace: ...
    def sample_codes(self, inp, n: int, seed: int) -> np.ndarray: ...
    def describe_input(self, inp) -> Any: ...


def run_audit(
    problem,
    *,
    epsilon: float,
    seconds: float | None = 60.0,
    max_samples: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    progress: bool = True,
    selection_share: float = 0.4,
    validation_share: float = 0.15,
    n0: int = 1000,
    target_name: str = "target",
    executor=None,
) -> AuditResult:
    """Generic audit (see the module docstring): :func:`select`, :func:`validate`, :func:`estimate`,
    then the conditional test on the pre-registered witness (:func:`audits.audit_verdict.conclude`).

    Raises:
        InvalidParameter: a bad budget or claim (:func:`check_audit_budget`).
    """
    check_audit_budget(epsilon=epsilon, seconds=seconds, max_samples=max_samples, confidence=confidence,
                       seed=seed, n0=n0)
    settings = AuditSettings(epsilon=float(epsilon), seconds=seconds, max_samples=max_samples, seed=int(seed),
                             confidence=confidence, selection_share=selection_share,
                             validation_share=validation_share,
                             n0=int(problem.initial_samples or n0))
    clock = Clock(seconds)
    book = SampleBook(problem, settings, clock, Seeds(seed), executor)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xA0D17]))
    bar = ProgressBar(progress, seconds if seconds is not None else float(max_samples))
    book.on_progress = bar.update  # every batch moves the bar, wherever it ran

    selection = select(problem, book, settings, rng, bar)
    if selection.best is None:  # the clock ran out before the first pair was sampled: no bound at all
        bar.close()
        raise BudgetStop(f"the audit's time budget ({settings.seconds:g} s) ran out before the first pair was "
                         f"sampled ({selection.stopped}): no bound")
    witness, stopped = validate(problem, book, settings, selection, bar)
    estimation = estimate(problem, book, settings, witness, bar, stopped=stopped)
    bar.close()
    result = conclude(problem, book, settings, selection, witness, estimation, target_name)
    if result.search is None:
        return result
    search = result.search
    if selection.first_round_runs_fine:
        searched = {**search.coverage.searched, "fine_first_round": fine_first_round(settings, selection)}
        search = dataclasses.replace(search, coverage=dataclasses.replace(search.coverage, searched=searched))
    if selection.fine_dropped is not None:
        pairs, runs = selection.fine_dropped
        search = dataclasses.replace(search, coverage=search.coverage.with_skipped(
            f"the fine family ({pairs} pairs): not sampled",
            f"its share of the budget ({FINE_SHARE:.0%}) affords {runs} < {fine_min_runs(settings.epsilon)} runs per "
            f"input, the fewest at which even a leak event of probability {FINE_EASIEST_EVENT:g} (loss claim + 1) is "
            f"kept with probability {DETECTION_TARGET:g}"))
    note = budget_stop_note(settings, book, estimation.stopped)
    if note is not None:
        search = dataclasses.replace(search, budget=dataclasses.replace(search.budget, stopped=note))
    return dataclasses.replace(result, search=search)


def fine_min_runs(epsilon: float) -> int:
    """The fewest first-round runs per input for which the fine family is run: those at which an event of
    probability FINE_EASIEST_EVENT and loss epsilon + 1 is kept with probability DETECTION_TARGET
    (:func:`audits.audit_scoring.fine_runs_needed`; 2 250 at epsilon = 1)."""
    return fine_runs_needed(FINE_EASIEST_EVENT, epsilon + 1.0, epsilon, DETECTION_TARGET)


def fine_first_round(settings: AuditSettings, selection: Selection) -> dict:
    """The ``search.coverage.fine_first_round`` record: the fine family's first-round runs per input, and the
    probability (:func:`audits.audit_scoring.first_round_keep_probability`) that a fine pair whose event has
    probability 2e-3 and loss claim + 1 is kept into the next round at that many runs, with the runs that
    probability DETECTION_TARGET needs."""
    q, loss = DETECTION_EVENT[0], settings.epsilon + 1.0
    n = int(selection.first_round_runs_fine)
    return {"runs_per_input": n, "event_probability": q, "event_loss": loss,
            "keep_probability": first_round_keep_probability(n, q, loss, settings.epsilon),
            "runs_needed": fine_runs_needed(q, loss, settings.epsilon, DETECTION_TARGET),
            "target_probability": DETECTION_TARGET}


def budget_stop_note(settings: AuditSettings, book: SampleBook, stopped: str | None) -> str | None:
    """The ``search.budget.stopped`` line: None when the audit ended on its plan (a sample budget spent, or a
    time-only budget used up as planned); else the phase the clock stopped, the runs drawn against the
    sample budget, and that the bound is the one reached so far."""
    if stopped is None:
        return None
    of = f" of the {settings.max_samples:,}-run sample budget" if settings.max_samples is not None else ""
    return (f"budget stop: the audit's time budget ({settings.seconds:g} s) ran out {stopped}, after "
            f"{book.samples:,} runs{of}; the bound is the one reached so far (the stop depends on the clock only)")


def check_audit_budget(*, epsilon: float, seconds: float | None, max_samples: int | None, confidence: float,
                       seed: int, n0: int = 1000) -> None:
    """The engine's arguments: confidence in (0, 1), epsilon finite >= 0, a time budget
    (:func:`gtm_core.validation.check_seconds`) or a sample budget of at least 4 n0 runs (the first
    round, validation and estimation each need n0 per input), a non-negative integer seed.

    Raises:
        InvalidParameter: the first bad argument (named in the message with its value).
    """
    if not (0 < confidence < 1):
        raise InvalidParameter(f"confidence must be in (0, 1), got {confidence!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if seconds is None and max_samples is None:
        raise InvalidParameter("give a time budget (seconds) or a sample budget (max_samples)")
    if seconds is not None:
        check_seconds("seconds", seconds)
    if max_samples is not None and max_samples < 4 * n0:
        raise InvalidParameter(f"max_samples must be >= {4 * n0}, got {max_samples!r}")
    check_nonnegative_int("seed", seed)


# ---------------------------------------------------------------------------
# phase 1: selection
# ---------------------------------------------------------------------------


def first_round_runs(problem, book: SampleBook, settings: AuditSettings, pool: list, n_inputs: int, *,
                     share: float | None = None, pilot: list | None = None) -> int:
    """Runs per input of the first (coverage) round: every candidate must be seen once, so the round
    is sized to FIRST_ROUND_SHARE of the selection budget (or ``share`` of the whole budget, from now; at
    least MIN_FIRST_ROUND runs, at most FIRST_ROUND_MAX_FACTOR * n0).
    With a sample budget this is arithmetic (reproducible); with a time budget the per-request cost
    is measured on a pilot (``pilot``, default the first few candidates; at n0 runs, kept as part of the
    round)."""
    if getattr(problem, "initial_samples", None):  # the problem fixes its first round (rare strong events)
        return int(settings.n0)
    if settings.max_samples is not None:
        budget = (FIRST_ROUND_SHARE * settings.selection_share if share is None else share) * settings.max_samples
        return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, budget / max(n_inputs, 1))))
    pilot = pool[:8] if pilot is None else pilot
    t0 = book.clock.elapsed()
    for c in pilot:
        for inp in problem.inputs(c):
            book.ensure(inp, settings.n0, problem.events(c).n_codes)
    spent = max(book.clock.elapsed() - t0, 1e-6)
    per_request = spent / max(len(_distinct_inputs(problem, pilot)), 1)
    if share is None:
        left = FIRST_ROUND_SHARE * settings.selection_share * settings.seconds - book.clock.elapsed()
    else:
        left = share * settings.seconds - spent
    scale = left / max(per_request * n_inputs, 1e-9)  # per_request includes fixed costs: a larger n costs less
    return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, settings.n0 * scale)))


def select(problem, book: SampleBook, settings: AuditSettings, rng: np.random.Generator,
           bar: ProgressBar) -> Selection:
    """Phase 1: successive halving. The first round sees every candidate (sized to the budget by
    :func:`first_round_runs`); in every later round the survivors are sampled twice as much, the
    best quarter by the projected final bound (exploitation) plus the best quarter by the point
    estimate of the loss (exploration: rare events, seen only a few times, are not dropped before
    they can be ranked) are kept, and the best three by each ranking are refined - until the
    selection share of the budget is spent.

    Steps: the first round's pool and sizes (:func:`_plan_first_round`), then per round the sampling
    (:func:`_selection_round`), the ranking, and the next round's pool (:func:`_next_round`)."""
    first = _plan_first_round(problem, book, settings, rng)
    pool = list(first.pool)
    examined = {id(c): c for c in pool}
    families = _tally_proposed({}, pool)
    runs_grid = first.runs_grid
    rounds, best, scores = 0, None, []
    latest: dict[int, ScoredCandidate] = {}
    while True:
        rounds += 1
        scores, stopped = _selection_round(problem, book, settings, pool, rounds, runs_grid, first, best, families,
                                           latest, bar)
        if stopped is not None and not scores:  # nothing scored in this round: rank the latest scores
            scores = list(latest.values())
        scores.sort(key=lambda s: -s.score)
        if scores:
            best = scores[0]
        if stopped is not None or book.budget_used() >= _selection_limit(settings, best):
            break
        pool, families = _next_round(problem, settings, scores, rng, examined, families)
        runs_grid *= 2
    return Selection(ranked=tuple(scores), best=best, rounds=rounds, pairs_examined=len(examined),
                     first_round_runs=first.runs_grid, first_round_runs_structured=first.runs_structured,
                     families=families, latest=tuple(sorted(latest.values(), key=lambda s: -s.score)),
                     stopped=stopped, first_round_runs_fine=first.runs_fine, fine_dropped=first.fine_dropped)


@dataclasses.dataclass(frozen=True)
class _FirstRoundPlan:
    """The first selection round: its pool in visiting order (random order, cheap pairs first; without the
    fine family when it is dropped) and its runs per input - ``runs_grid`` for the coverage grid,
    ``runs_structured`` for the structured families (a whole multiple of the grid's), ``runs_fine`` for the
    fine family (0: not run); ``fine_dropped`` is (pairs, affordable runs) of a dropped fine family."""

    pool: tuple
    runs_grid: int
    runs_structured: int
    runs_fine: int
    fine_dropped: tuple[int, int] | None

    def runs(self, candidate, runs_grid: int) -> int:
        """Runs per input of ``candidate`` in a round whose grid pairs get ``runs_grid``."""
        if _is_fine(candidate):
            return max(1, int(runs_grid * self.runs_fine / self.runs_grid))
        return runs_grid if _is_grid(candidate) else runs_grid * (self.runs_structured // self.runs_grid)


def _plan_first_round(problem, book: SampleBook, settings: AuditSettings, rng: np.random.Generator) -> _FirstRoundPlan:
    """The first round's pool and sizes (:class:`_FirstRoundPlan`; with a time budget the pilots it times are
    sampled here, as part of the round)."""
    pool = problem.initial_candidates()
    # a time-limited first round must still see every family: visit candidates in random order,
    # cheap (short) ones first
    perm = rng.permutation(len(pool))
    pool = sorted((pool[i] for i in perm), key=lambda c: _cost_class(problem, c))
    fine = [c for c in pool if _is_fine(c)]
    coarse = [c for c in pool if not _is_fine(c)] if fine else pool
    runs_grid = first_round_runs(problem, book, settings, coarse, len(_distinct_inputs(problem, coarse)))
    # the fine family (half-move spacing, thousands of inputs): its own share of the budget, at most what its
    # stated detection needs (fine_runs_needed: a (2e-3, loss claim + 1) event kept with probability 0.9)
    runs_fine = 0
    fine_dropped = None
    if fine:
        spread = fine[:: max(1, len(fine) // FINE_PILOT)][:FINE_PILOT]
        runs_fine = min(fine_runs_needed(DETECTION_EVENT[0], settings.epsilon + 1.0, settings.epsilon,
                                         DETECTION_TARGET),
                        first_round_runs(problem, book, settings, fine, len(_distinct_inputs(problem, fine)),
                                         share=FINE_SHARE, pilot=spread))
        if runs_fine < fine_min_runs(settings.epsilon):  # too thin to see anything: the coarse families get it
            pool = [c for c in pool if not _is_fine(c)]
            fine_dropped = (len(fine), runs_fine)
            runs_fine = 0
    # the coverage grid is thousands of pairs: sized over all inputs, its first round can be thin (a slow
    # target, a long max_T). The structured families (a few hundred pairs, where the classic worst cases
    # sit) are sized over their own inputs, so the grid never starves them
    structured = [c for c in pool if not _is_grid(c) and not _is_fine(c)]
    runs_structured = n_round_structured(runs_grid, max(runs_grid, first_round_runs(
        problem, book, settings, structured, len(_distinct_inputs(problem, structured)))))
    return _FirstRoundPlan(pool=tuple(pool), runs_grid=runs_grid, runs_structured=runs_structured,
                          runs_fine=runs_fine, fine_dropped=fine_dropped)


def _selection_round(problem, book: SampleBook, settings: AuditSettings, pool: list, round_no: int,
                     runs_grid: int, first: _FirstRoundPlan, best, families: dict,
                     latest: dict[int, ScoredCandidate], bar: ProgressBar) -> tuple[list, str | None]:
    """Sample and score the round's pool in order until the selection budget is spent (after at least 8
    pairs): (the round's scores, where the clock stopped it or None). Updates ``families`` (per-family
    tallies) and ``latest`` (every pair's latest score) in place."""
    scores: list[ScoredCandidate] = []
    top_score = -math.inf  # the round's best projected bound so far (progress text)
    for c in pool:
        if book.budget_used() >= _selection_limit(settings, best) and len(scores) >= 8:
            break
        runs = first.runs(c, runs_grid)
        try:
            # the fine family's first round is a screen by the point estimates (thousands of pairs): scored
            # in full from the next round on, if it survives (by exploration or the always-survive rule)
            sc = _sample_and_score(problem, book, settings, c, runs, screen=round_no == 1 and _is_fine(c))
        except BudgetStop:  # the clock stopped a request in flight: the target is gone, stop here
            return scores, f"in selection round {round_no}"
        scores.append(sc)
        name = _family(c)
        families[name] = families.get(name, FamilyTally()).with_score(round_no, sc.score,
                                                                      first_time=id(c) not in latest)
        latest[id(c)] = sc
        top_score = max(top_score, sc.score)
        bar.update(book.progress_done(),
                   f"selection round {round_no}: {len(scores)}/{len(pool)} pairs, n={runs_grid}, "
                   f"best projected bound {top_score:.3f}")
    return scores, None


def _next_round(problem, settings: AuditSettings, scores: list, rng: np.random.Generator, examined: dict,
                families: dict) -> tuple[list, dict]:
    """The next halving round's pool (:func:`next_round_pool`) from the ranked ``scores``, and the family
    tallies with the refinements proposed; ``examined`` gains the refinements (in place)."""
    # exploration survivors only for problems that ask for them (the GTM: leaks on rare events may sit
    # anywhere in the stream space); the SVT problems keep the exploitation-only halving
    # the fine family's screened first round (thousands of pairs, no projected bound) is halved on its own: its
    # pairs survive by the always-survive rule or as one of the FINE_EXPLORE_TOP best by point estimate, so
    # they never crowd the coarse families' survivors out of the next round
    screened = {id(s) for s in scores if _is_fine(s.candidate) and not math.isfinite(s.score)}
    ranked = [s for s in scores if id(s) not in screened]
    by_explore = sorted(ranked, key=lambda s: -s.explore) if getattr(problem, "explore", False) else []
    fresh = [r for s in scores[:3] + by_explore[:3] for r in problem.refine(s.candidate, rng)]
    for r in fresh:
        examined.setdefault(id(r), r)
    families = _tally_proposed(families, fresh)
    kept = sorted((s for s in scores if keeps(s, settings.epsilon)), key=lambda s: -s.keep) if by_explore else []
    fine_top = sorted((s for s in scores if id(s) in screened and math.isfinite(s.explore)),
                      key=lambda s: -s.explore)[:FINE_EXPLORE_TOP]
    pool = next_round_pool(problem, _survivors(ranked, by_explore, max(4, len(ranked) // 4),
                                               kept[: max(4, len(scores) // 4)] + fine_top), fresh)
    return pool, families


def _sample_and_score(problem, book: SampleBook, settings: AuditSettings, candidate, runs: int, *,
                      screen: bool = False) -> ScoredCandidate:
    """Top both inputs of a candidate up to ``runs`` selection samples, then score it (``screen``: by its point
    estimates only, :func:`audits.audit_scoring.screen_candidate`)."""
    a, b = problem.inputs(candidate)
    n_codes = problem.events(candidate).n_codes
    book.ensure(a, runs, n_codes)
    book.ensure(b, runs, n_codes)
    if screen:
        return screen_candidate(problem, book, candidate)
    return score_candidate(problem, book, candidate, settings.alpha)


def _tally_proposed(families: dict, candidates: list) -> dict:
    """The per-family tallies after ``candidates`` were proposed (first-seen order of the names)."""
    out = dict(families)
    for c in candidates:
        out[_family(c)] = out.get(_family(c), FamilyTally()).with_proposed()
    return out


def next_round_pool(problem, survivors: list, fresh: list) -> list:
    """The order a halving round visits its pairs in. A wide search (``problem.explore``: the GTM's coverage
    grid) samples the refinements first: when the budget ends inside a round, the lowest-ranked survivors
    go unsampled, not the refinements of the best pairs (at max-T 50 the survivors of the ~8k-pair grid
    cost as much as the whole first round, and no refinement would ever be sampled).
    The SVT problems keep the survivors first (small pools; their benchmark was measured so)."""
    return fresh + survivors if getattr(problem, "explore", False) else survivors + fresh


def _survivors(scores: list, by_explore: list, keep: int, kept: list = ()) -> list:
    """The best ``keep`` pairs by the projected bound, then the best ``keep`` by the point estimate
    (exploration; only finite estimates), then the pairs of ``kept`` (the always-survive rule,
    :func:`audits.audit_scoring.keeps`, best first, and the fine family's best screened pairs), without repeats."""
    survivors, seen = [], set()
    for s in scores[:keep] + [s for s in by_explore[:keep] if math.isfinite(s.explore)] + list(kept):
        if id(s.candidate) not in seen:
            seen.add(id(s.candidate))
            survivors.append(s.candidate)
    return survivors


def _selection_limit(settings: AuditSettings, best) -> float:
    """Share of the budget the selection may use: ``selection_share``, extended up to
    EXTENDED_SELECTION_SHARE while no candidate is projected to exceed the claim (more search is then
    worth more than a tighter final bound on a pair that cannot refute the claim). The final test is
    on fresh samples, so this data-dependent split does not affect its validity."""
    if best is not None and best.score > settings.epsilon:
        return settings.selection_share
    return max(settings.selection_share, EXTENDED_SELECTION_SHARE)


def n_round_structured(n_grid: int, n_structured: int) -> int:
    """First-round runs per input of the structured families: a whole multiple of the grid's (so both double
    together in later rounds), at least the grid's."""
    return n_grid * max(1, n_structured // max(n_grid, 1))


def _distinct_inputs(problem, candidates: list) -> set:
    return {x for c in candidates for x in problem.inputs(c)}


def _cost_class(problem, c) -> int:
    a, _ = problem.inputs(c)
    n = len(a)
    return 0 if n <= 5 else 1 if n <= 20 else 2


def _is_fine(c) -> bool:
    """A pair of the fine family (not refined): sized with its own first-round share (FINE_SHARE)."""
    return str(getattr(c, "family", "")) == "fine"


def _is_grid(c) -> bool:
    """A pair of the coverage grid (not refined): sized with the whole grid in the first round."""
    return str(getattr(c, "family", "")) == "grid"


def _family(c) -> str:
    """The family a candidate is tallied under: its base family, ``+refined`` for refinements."""
    family = str(getattr(c, "family", "candidate"))
    return family.split("+")[0] + ("+refined" if "+refined" in str(getattr(c, "family", "")) else "")


# ---------------------------------------------------------------------------
# phase 2: validation
# ---------------------------------------------------------------------------


def validate(problem, book: SampleBook, settings: AuditSettings, selection: Selection,
             bar: ProgressBar) -> tuple[ScoredCandidate, str | None]:
    """Phase 2: re-rank the top witnesses (distinct pairs, up to VALIDATION_K, each with its alternative
    events) on fresh samples - this removes the winner's curse of the selection, whose accumulated
    samples favour lucky candidates. Returns the witness to pre-register and where the clock stopped the
    audit (``selection.stopped``, or validation itself; None when it did not)."""
    top = validation_pool(problem, selection)
    if len(top) <= 1 or selection.stopped is not None:
        return selection.best, selection.stopped
    validated = []
    for sc in top:
        a, b = problem.inputs(sc.candidate)
        events = problem.events(sc.candidate)
        if settings.max_samples is None:
            runs = int(settings.validation_share * settings.seconds / len(top)
                       / max(book.seconds_per_run(a, b), 1e-9))
        else:
            runs = int(settings.validation_share * settings.max_samples / len(top) / 2)
        runs = max(settings.n0, runs)
        try:
            fresh_a, fresh_b = book.draw_many([(a, runs), (b, runs)], events.n_codes)
        except BudgetStop:
            return (max(validated, key=lambda x: x[0])[1] if validated else selection.best), "in validation"
        for name, row in sc.alternatives or ((sc.event, sc.membership),):
            hits_a, hits_b = int(fresh_a[row].sum()), int(fresh_b[row].sum())
            bound = float(projected_conditional_bound(hits_a, runs, hits_b, runs, book.final_n(a, b),
                                                      settings.alpha, z=1.0))
            validated.append((bound, ScoredCandidate(sc.score, sc.candidate, name, row)))
        bar.update(book.progress_done(), f"validation {len(validated)}/{len(top)}")
    validated.sort(key=lambda x: -x[0])
    return validated[0][1], None


def validation_pool(problem, selection: Selection) -> list:
    """The pairs validation re-ranks: the best of the last round by score (distinct input pairs, up to
    VALIDATION_K). A wide search (``problem.explore``) adds up to VALIDATION_SHAPES more: the best pair (by
    its most recent score, any round) of each event space the others do not cover - for the GTM, each
    stream length: the loss of a long stream's rare event is bounded by its sample count until it has many
    samples, so it ranks below the refinements of a short pair that fill the last round.
    Validation samples are fresh, so which pairs are re-ranked does not affect the final test's validity."""
    diverse = VALIDATION_SHAPES if getattr(problem, "explore", False) else 0
    top, seen_inputs = [], set()
    for sc in selection.ranked:
        if len(top) >= VALIDATION_K:
            break
        key = problem.inputs(sc.candidate)
        if key not in seen_inputs:
            seen_inputs.add(key)
            top.append(sc)
    shapes = {problem.events(sc.candidate).n_codes for sc in top}
    for sc in selection.latest if diverse else ():
        if len(top) >= VALIDATION_K + diverse:
            break
        key, shape = problem.inputs(sc.candidate), problem.events(sc.candidate).n_codes
        if shape not in shapes and key not in seen_inputs and math.isfinite(sc.score):
            shapes.add(shape)
            seen_inputs.add(key)
            top.append(sc)
    return top


# ---------------------------------------------------------------------------
# phase 3: estimation
# ---------------------------------------------------------------------------


def estimate(problem, book: SampleBook, settings: AuditSettings, witness: ScoredCandidate,
             bar: ProgressBar, *, stopped: str | None = None) -> Estimation:
    """Phase 3: fresh samples of the witness pair only, each input run a Poisson(m) number of times per
    chunk (counts from their own seeded stream, never from the outputs), until the planned mean M
    per input is reached or the clock stops (whole chunks only: a chunk the clock interrupts in flight
    is discarded). ``stopped``: where an earlier phase's clock stop happened (no sampling then).
    The returned ``stopped`` names the clock stop, if any, that cut the audit short of its sample budget."""
    a, b = problem.inputs(witness.candidate)
    events = problem.events(witness.candidate)
    planned = book.final_n(a, b)
    counts_rng = np.random.default_rng(np.random.SeedSequence([int(settings.seed), 0x9015]))
    hist_a = np.zeros(events.n_codes, dtype=np.int64)
    hist_b = np.zeros(events.n_codes, dtype=np.int64)
    runs_mean = runs_a = runs_b = 0  # runs_mean = planned Poisson mean M per input (sum of the chunks' means)
    phase_seconds = 0.0
    replanned = False
    while stopped is None and runs_mean < planned:
        if runs_mean > 0 and book.clock.left() <= 0:
            if settings.max_samples is not None:
                stopped = "in estimation, before the planned runs"
            break  # hard time budget: the stopping rule depends on the clock only (whole chunks)
        chunk = max(1000, min(planned // 8 if not replanned else planned, estimation_chunk(settings, book.executor)))
        chunk_mean = min(chunk, planned - runs_mean)
        draws_a, draws_b = int(counts_rng.poisson(chunk_mean)), int(counts_rng.poisson(chunk_mean))
        t0 = time.monotonic()
        # both inputs at once (parallel on workers)
        try:
            chunk_a, chunk_b = book.draw_many([(a, draws_a), (b, draws_b)], events.n_codes)
        except BudgetStop:  # the clock stopped this chunk in flight: discard it whole
            stopped = "in estimation (a chunk in flight discarded)"
            break
        hist_a += chunk_a
        hist_b += chunk_b
        phase_seconds += time.monotonic() - t0
        runs_mean += chunk_mean
        runs_a += draws_a
        runs_b += draws_b
        if settings.max_samples is None:
            # re-plan after every chunk from the speed of this phase's own requests (small selection
            # requests overstate the per-run cost), so a slow target still uses its whole budget; this
            # uses timing only, never the samples' values (the stopping rule stays data-independent)
            replanned = True
            per_run = phase_seconds / max(runs_a + runs_b, 1) * 2
            extra = int(max(book.clock.left(), 0.0) * 0.9 / max(per_run, 1e-12))
            if extra >= ESTIMATION_MIN_CHUNK:
                planned = max(planned, runs_mean + extra)
        bar.update(book.progress_done(), f"estimation {runs_mean}/{planned} runs per stream")
    return Estimation(hist_a=hist_a, hist_b=hist_b, n_a=runs_a, n_b=runs_b, runs_mean=runs_mean, stopped=stopped)


def estimation_chunk(settings: AuditSettings, executor) -> int:
    """Largest request group (runs per input) of the estimation phase. With a sample budget it is the fixed
    :data:`ESTIMATION_CHUNK` (the result must not depend on where it ran); with a time budget it scales with
    the workers (the result is not reproducible anyway, and the phase re-plans between groups)."""
    if settings.max_samples is not None:
        return ESTIMATION_CHUNK
    return TIMED_CHUNK_PER_WORKER * max(1, int(getattr(executor, "workers", 1)))
