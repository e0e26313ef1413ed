"""Phase 1 of the audit engine (:mod:`audits.audit_engine`): selection by successive halving.

The first round samples every candidate pair (runs per input sized to the budget,
:func:`first_round_runs`; the fine family on its own share, :data:`FINE_SHARE`, or not at all when that
share is too thin, :func:`fine_min_runs`); each later round samples the survivors twice as much, ranks
them by the bound the final phase would report and by the point estimate of their loss, keeps the best
quarter of each ranking and refines the best few (:func:`select`). The result is an
:class:`audits.audit_scoring.Selection`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from gtm_core.errors import BudgetStop

from .audit_results import FamilyTally
from .audit_scoring import (DETECTION_EVENT, DETECTION_TARGET, ScoredCandidate, Selection, fine_runs_needed,
                            first_round_keep_probability, keeps, score_candidate, screen_candidate)
from .early_stop import is_flagrant
from .sampling import AuditSettings, ProgressBar, SampleBook

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
REFINE_TOP = 3  # pairs refined per search lane (search_lane) and ranking (score, point estimate) each round
FINE_PILOT = 24  # candidates spread over the fine family that time its per-request cost (time budget) ...
PILOT_SECOND_SIZE = 4  # ... at n0 runs per input, then topped up to this many times n0 (request_cost_model)

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
    _top_up(problem, book, pilot, settings.n0)
    spent = max(book.clock.elapsed() - t0, 1e-6)
    per_request = spent / max(len(_distinct_inputs(problem, pilot)), 1)
    if share is None:
        left = FIRST_ROUND_SHARE * settings.selection_share * settings.seconds - book.clock.elapsed()
        scale = left / max(per_request * n_inputs, 1e-9)  # per_request includes fixed costs: a larger n costs less
        return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, settings.n0 * scale)))
    # an own share (the fine family: thousands of cheap requests, where the fixed cost per request is most of
    # the pilot's n0 runs): time the pilot at a second size too and fit cost(n) = fixed + per_run * n
    # (request_cost_model), so the share buys the runs it affords - proportional scaling from n0 alone
    # undercounts them by the fixed cost's share (2.4x on length-3 streams of the planted target)
    t1 = book.clock.elapsed()
    _top_up(problem, book, pilot, PILOT_SECOND_SIZE * settings.n0)
    fixed, per_run = request_cost_model(spent, book.clock.elapsed() - t1, len(_distinct_inputs(problem, pilot)),
                                        settings.n0, PILOT_SECOND_SIZE * settings.n0)
    left = share * settings.seconds - (book.clock.elapsed() - t0)
    # every input at ``runs`` costs n_inputs * cost(runs) <= left (the pilot's runs are not credited: conservative)
    runs = (left / max(n_inputs, 1) - fixed) / per_run if per_run > 0 else math.inf
    return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, runs)))


def request_cost_model(seconds_first: float, seconds_second: float, inputs: int, n_first: int,
                       n_second: int) -> tuple[float, float]:
    """(fixed seconds per request, seconds per run) of cost(n) = fixed + per_run * n, from a pilot that took
    ``seconds_first`` to draw n_first runs of each of ``inputs`` inputs (one request each) and then
    ``seconds_second`` to top them up to n_second (one more request each, n_second > 2 n_first): per input,
    first = fixed + per_run n_first and second = fixed + per_run (n_second - n_first), so per_run =
    (second - first) / (n_second - 2 n_first). Timing noise that makes either negative falls back to no fixed
    cost and the first request's average rate."""
    k = max(inputs, 1)
    first, second = seconds_first / k, seconds_second / k
    per_run = (second - first) / max(n_second - 2 * n_first, 1)
    fixed = first - per_run * n_first
    if per_run <= 0 or fixed < 0:
        return 0.0, first / max(n_first, 1)
    return fixed, per_run


def _top_up(problem, book: SampleBook, candidates: list, n: int) -> None:
    for c in candidates:
        for inp in problem.inputs(c):
            book.ensure(inp, n, problem.events(c).n_codes)


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
    flagrant = None
    while True:
        rounds += 1
        scores, stopped, flagrant = _selection_round(problem, book, settings, pool, rounds, runs_grid, first, best,
                                                     families, latest, bar)
        if rounds == 1 and flagrant is None:
            scores, flagrant = _score_fine_survivors(problem, book, settings, scores, latest, families)
        if stopped is not None and not scores:  # nothing scored in this round: rank the latest scores
            scores = list(latest.values())
        scores.sort(key=lambda s: -s.score)
        if scores:
            best = scores[0] if flagrant is None else flagrant
        if flagrant is not None or stopped is not None or book.budget_used() >= _selection_limit(settings, best):
            break
        pool, families = _next_round(problem, settings, scores, rng, examined, families)
        runs_grid *= 2
    return Selection(ranked=tuple(scores), best=best, rounds=rounds, pairs_examined=len(examined),
                     first_round_runs=first.runs_grid, first_round_runs_structured=first.runs_structured,
                     families=families, latest=tuple(sorted(latest.values(), key=lambda s: -s.score)),
                     stopped=stopped, first_round_runs_fine=first.runs_fine, fine_dropped=first.fine_dropped,
                     ended_early=flagrant is not None)


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
                     latest: dict[int, ScoredCandidate], bar: ProgressBar) -> tuple[list, str | None, Any]:
    """Sample and score the round's pool in order until the selection budget is spent (after at least 8
    pairs): (the round's scores, where the clock stopped it or None, the flagrant pair that ended it or None:
    with early verdicts, :func:`_flagrant`). Updates ``families`` (per-family tallies) and ``latest`` (every
    pair's latest score) in place."""
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
            return scores, f"in selection round {round_no}", None
        scores.append(sc)
        name = _family(c)
        families[name] = families.get(name, FamilyTally()).with_score(round_no, sc.score,
                                                                      first_time=id(c) not in latest)
        latest[id(c)] = sc
        top_score = max(top_score, sc.score)
        bar.update(book.progress_done(),
                   f"selection round {round_no}: {len(scores)}/{len(pool)} pairs, n={runs_grid}, "
                   f"best projected bound {top_score:.3f}")
        if settings.early_stop and _flagrant(problem, book, settings, sc, len(pool)):
            return scores, None, sc
    return scores, None, None


def _score_fine_survivors(problem, book: SampleBook, settings: AuditSettings, scores: list,
                          latest: dict[int, ScoredCandidate], families: dict) -> tuple[list, Any]:
    """The screened fine pairs that will survive the first round (:func:`audits.audit_scoring.keeps`, or one of
    the FINE_EXPLORE_TOP best by point estimate) scored in full on the samples they already have - no new runs.
    A screened pair has no projected bound, so without this it can only be ranked once the next round reaches
    it, and a round cut by the budget may never do: a band one move wide, seen 39 to 1 on 10 500 runs, then
    never becomes the selection's best. Returns (the round's scores with these replaced, the flagrant pair
    among them with early verdicts, else None); ``latest`` and ``families`` are updated in place."""
    screened = [s for s in scores if _is_fine(s.candidate) and not math.isfinite(s.score)]
    if not screened:
        return scores, None
    top = sorted((s for s in screened if math.isfinite(s.explore)), key=lambda s: -s.explore)[:FINE_EXPLORE_TOP]
    chosen = {id(s) for s in top} | {id(s) for s in screened if keeps(s, settings.epsilon)}
    out, flagrant = [], None
    for s in scores:
        if id(s) in chosen:
            s = score_candidate(problem, book, s.candidate, settings.alpha)
            latest[id(s.candidate)] = s
            families["fine"] = families.get("fine", FamilyTally()).with_score(1, s.score, first_time=False)
            if flagrant is None and settings.early_stop and _flagrant(problem, book, settings, s, len(scores)):
                flagrant = s
        out.append(s)
    return out, flagrant


def _flagrant(problem, book: SampleBook, settings: AuditSettings, sc: ScoredCandidate, pool_size: int) -> bool:
    """Early verdicts: the scored pair's event is flagrant on its selection samples
    (:func:`audits.early_stop.is_flagrant`, Bonferroni over the round's pairs and the pair's events and level
    sets)."""
    if not math.isfinite(sc.score):
        return False
    a, b = problem.inputs(sc.candidate)
    events = problem.events(sc.candidate)
    return is_flagrant(int(book.hist[a][sc.membership].sum()), book.nsel[a], int(book.hist[b][sc.membership].sum()),
                       book.nsel[b], settings.alpha, pool_size * (len(events) + events.n_codes), settings.epsilon)


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
    # refined: the best REFINE_TOP of each search lane (search_lane) by score and by point estimate - the fine
    # family's thousands of pairs (and their refinements) are a lane of their own, so the maxima of their noisy
    # first-round scores (tight pairs of a correct mechanism) cannot take every refinement slot from the coarse
    # families' best pairs (wide planted seed 23: benchmarks/results/planted-lanes-preregistration.md)
    fresh = [r for s in refinement_parents(scores, by_explore) for r in problem.refine(s.candidate, rng)]
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


def search_lane(c) -> str:
    """The search lane of a candidate pair: ``"fine"`` for the fine family and its refinements, ``"coarse"``
    for every other family. Refinement slots (the selection's halving rounds) and validation slots
    (:func:`audits.audit_engine.validation_pool`) are shared out per lane."""
    return "fine" if str(getattr(c, "family", "")).split("+")[0] == "fine" else "coarse"


def refinement_parents(scores: list, by_explore: list) -> list:
    """The pairs whose refinements the next round samples: per search lane (:func:`search_lane`, coarse first),
    the REFINE_TOP best by score then the REFINE_TOP best by point estimate (``by_explore``), as the rule before
    the lanes did over all pairs (a pair in both is refined twice: with no fine family the rounds are those of
    that rule, draw for draw). A fine pair without a score (screened, or too few hits) is not refined by score."""
    out = []
    for lane in ("coarse", "fine"):
        by_score = [s for s in scores if search_lane(s.candidate) == lane
                    and (lane == "coarse" or math.isfinite(s.score))][:REFINE_TOP]
        out += by_score + [s for s in by_explore if search_lane(s.candidate) == lane][:REFINE_TOP]
    return out


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
