"""Scoring a candidate pair in the selection phase, and the values the three phases hand on.

:func:`score_candidate` ranks a pair by the bound the estimation phase is projected to report on
its best event (:func:`audits.statistics.projected_conditional_bound`), over the problem's events
and over likelihood-ratio level sets (Neyman-Pearson optimal events) built on a hold-out half of
the selection samples. :class:`ScoredCandidate`, :class:`Selection` and :class:`Estimation` are
the phases' outcomes (:mod:`audits.audit_engine`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .events import EventSpace
from .sampling import SampleBook
from .statistics import projected_conditional_bound

SELECTION_Z = 1.5  # pessimism (in standard errors) of the selection-phase ranking
VALIDATION_EVENTS = 3  # events per witness candidate re-ranked in validation
MIN_COUNT = 10  # an event needs this many selection hits on its likely side to be ranked
EXPLORE_MIN_COUNT = 3  # ... and this many to be ranked by its point estimate (exploration)
KEEP_MARGIN = 0.25  # a pair whose point estimate on an event with >= MIN_COUNT hits exceeds the claim by this
# much always survives a halving round (:func:`keeps`; :func:`first_round_keep_probability` is its chance)
DETECTION_EVENT = (2e-3, 2.0)  # (event probability, loss) the fine family's first round is sized for, claim 1:
DETECTION_TARGET = 0.9  # ... kept into the next round with at least this probability


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate pair with the event (and direction) it would be audited on, ranked by ``score``:
    the bound the estimation phase is projected to report. ``alternatives`` are further
    (name, membership) events worth re-ranking in validation."""

    score: float
    candidate: Any
    event: str
    membership: np.ndarray
    alternatives: tuple = ()
    explore: float = -math.inf  # point estimate of the best event's loss (smoothed), for exploration
    keep: float = -math.inf  # ... over the events with >= MIN_COUNT hits (the always-survive rule, :func:`keeps`)


@dataclass(frozen=True)
class Selection:
    """Outcome of the successive-halving selection: the last round's ranking (best first).

    ``families`` maps each family name to its :class:`audits.audit_results.FamilyTally`."""

    ranked: tuple[ScoredCandidate, ...]
    best: ScoredCandidate | None
    rounds: int
    pairs_examined: int
    first_round_runs: int = 0  # runs per input of the first (coverage) round
    first_round_runs_structured: int = 0  # ... of the structured (non-grid) families' pairs
    first_round_runs_fine: int = 0  # ... of the fine family's pairs (0: no fine family)
    fine_dropped: tuple | None = None  # (pairs, affordable runs) of a fine family too thin to run (None: it ran)
    families: Any = None  # name -> FamilyTally (None: not recorded)
    latest: tuple = ()  # every scored pair's most recent score (all rounds), best first
    stopped: str | None = None  # where the audit's clock stopped a request in flight (None: it did not)
    ended_early: bool = False  # a flagrant pair ended the selection (audits.early_stop.is_flagrant; it is ``best``)


@dataclass(frozen=True)
class Estimation:
    """Outcome of the estimation phase: the witness pair's histograms on fresh, Poissonised runs."""

    hist_a: np.ndarray
    hist_b: np.ndarray
    n_a: int  # runs drawn for input A
    n_b: int
    runs_mean: int  # planned Poisson mean M of the runs per input
    stopped: str | None = None  # where the clock stopped the audit short of its sample budget (None: it did not)
    looks: tuple = ()  # the interim looks at the witness (audits.early_stop.Look; early verdicts only)
    early: Any = None  # the look whose bound cleared the claim (None: no early verdict)


def score_candidate(problem, book: SampleBook, candidate, alpha: float) -> ScoredCandidate:
    """Best projected final bound of a candidate over its events and its likelihood-ratio level sets."""
    a, b = problem.inputs(candidate)
    events = problem.events(candidate)
    hist_a, hist_b = book.hist[a], book.hist[b]
    final_runs = book.final_n(a, b)
    hits_a, hits_b = events.counts(hist_a), events.counts(hist_b)
    # pessimism grows with the number of events ranked at once (the max of many noisy
    # estimates is biased upwards): about one standard normal quantile of 1/#events
    z_events = max(SELECTION_Z, float(_norm_isf(1.0 / max(len(events), 2))))
    projected = projected_conditional_bound(hits_a, book.nsel[a], hits_b, book.nsel[b], final_runs, alpha,
                                            z=z_events)
    projected = np.where(hits_a >= MIN_COUNT, projected, -np.inf)  # too few hits to rank at all
    ranked_events = np.argsort(-projected)[:VALIDATION_EVENTS]
    alternatives = tuple((events.names[k], events.membership[k]) for k in ranked_events if np.isfinite(projected[k]))
    top = int(ranked_events[0])
    explore = exploration_score(hits_a, book.nsel[a], hits_b, book.nsel[b])
    keep = exploration_score(hits_a, book.nsel[a], hits_b, book.nsel[b], min_count=MIN_COUNT)
    best = ScoredCandidate(float(projected[top]), candidate, events.names[top], events.membership[top],
                           alternatives, explore, keep)
    level_set = best_level_set(events, hist_a, hist_b, book.half[a], book.half[b], final_runs, alpha)
    if level_set is not None and level_set[0] > best.score:
        bound, name, row = level_set
        best = ScoredCandidate(bound, candidate, name, row, ((name, row),) + alternatives, explore, keep)
    return best


def screen_candidate(problem, book: SampleBook, candidate) -> ScoredCandidate:
    """A cheap first look at a pair: its point estimates only (``explore`` and ``keep`` as in
    :func:`score_candidate`, the event of the best estimate), no projected bound (``score`` = -inf, so the pair
    is never the selection's best before it is scored in full). The fine family's first round uses it:
    thousands of pairs, each ranked into the next round by exploration or :func:`keeps`."""
    a, b = problem.inputs(candidate)
    events = problem.events(candidate)
    hits_a, hits_b = events.counts(book.hist[a]), events.counts(book.hist[b])
    explore = exploration_score(hits_a, book.nsel[a], hits_b, book.nsel[b])
    keep = exploration_score(hits_a, book.nsel[a], hits_b, book.nsel[b], min_count=MIN_COUNT)
    with np.errstate(divide="ignore"):
        point = np.where(hits_a >= EXPLORE_MIN_COUNT, np.log(hits_a + 0.5) - np.log(hits_b + 0.5), -np.inf)
    top = int(np.argmax(point)) if point.size else 0
    return ScoredCandidate(-math.inf, candidate, events.names[top], events.membership[top], (), explore, keep)


def exploration_score(hits_a: np.ndarray, runs_a: int, hits_b: np.ndarray, runs_b: int, *,
                      min_count: int = EXPLORE_MIN_COUNT) -> float:
    """The smoothed point estimate ln((k_A + 1/2) / (n_A + 1)) - ln((k_B + 1/2) / (n_B + 1)) of the best event
    seen at least ``min_count`` times on its likely side (no pessimism: rare events are not dropped before
    they have been sampled enough to be ranked by the projected bound)."""
    with np.errstate(divide="ignore"):
        point = np.log((hits_a + 0.5) / (runs_a + 1.0)) - np.log((hits_b + 0.5) / (runs_b + 1.0))
    point = np.where(hits_a >= min_count, point, -np.inf)
    return float(point.max()) if point.size else -math.inf


def keeps(scored: ScoredCandidate, epsilon: float) -> bool:
    """The always-survive rule of a halving round: the point estimate on some event with at least MIN_COUNT
    hits (``scored.keep``) exceeds the claim by KEEP_MARGIN."""
    return scored.keep >= epsilon + KEEP_MARGIN


def first_round_keep_probability(n: int, q: float, loss: float, epsilon: float) -> float:
    """Probability that a pair whose event E has Pr_A[E] = q and Pr_B[E] = q e^{-loss}, sampled n times per
    input, is kept by :func:`keeps` on that event: the exact sum over k_A ~ Binomial(n, q), k_B ~ Binomial(n,
    q e^{-loss}) (independent) of 1[k_A >= MIN_COUNT and ln((k_A + 1/2) / (k_B + 1/2)) >= epsilon +
    KEEP_MARGIN]. A lower bound on the chance that the pair is ranked into the next round (the rule looks at
    the best event, so any other event only adds)."""
    from scipy import stats

    if n <= 0:
        return 0.0
    q_b = q * math.exp(-loss)
    top_a = int(stats.binom.isf(1e-12, n, q)) + 2
    k_a = np.arange(MIN_COUNT, max(top_a, MIN_COUNT + 1))
    p_a = stats.binom.pmf(k_a, n, q)
    # k_B <= (k_A + 1/2) e^{-(epsilon + margin)} - 1/2
    limit = np.floor((k_a + 0.5) * math.exp(-(epsilon + KEEP_MARGIN)) - 0.5 + 1e-12)
    p_b = np.where(limit >= 0, stats.binom.cdf(limit, n, q_b), 0.0)
    return float(np.sum(p_a * p_b))


@functools.lru_cache(maxsize=256)
def fine_runs_needed(q: float = DETECTION_EVENT[0], loss: float = DETECTION_EVENT[1], epsilon: float = 1.0,
                     probability: float = DETECTION_TARGET, *, step: int = 250, limit: int = 10_000_000) -> int:
    """The fewest first-round runs per input (a multiple of ``step``) at which
    :func:`first_round_keep_probability` reaches ``probability`` (``limit`` when it never does below it)."""
    lo, hi = 1, limit // step
    if first_round_keep_probability(hi * step, q, loss, epsilon) < probability:
        return limit
    while lo < hi:  # the probability grows with n (more hits, a sharper ratio) on this grid: bisect
        mid = (lo + hi) // 2
        if first_round_keep_probability(mid * step, q, loss, epsilon) >= probability:
            hi = mid
        else:
            lo = mid + 1
    return lo * step


def best_level_set(events: EventSpace, hist_a: np.ndarray, hist_b: np.ndarray, odd_a: np.ndarray,
                   odd_b: np.ndarray, final_runs: int, alpha: float) -> tuple[float, str, np.ndarray] | None:
    """The best likelihood-ratio level set {codes: P_A/P_B >= tau} (Neyman-Pearson optimal events):
    codes ordered on the even-numbered selection samples, sets scored on the odd-numbered ones
    (``odd_a``, ``odd_b``: a hold-out inside the selection phase, so the ranking does not chase noise).
    Returns (projected bound, name, membership row), or None when no set has a finite bound."""
    even_a, even_b = hist_a - odd_a, hist_b - odd_b
    ratio = (even_a + 0.5) / (even_b + 0.5)
    order = np.argsort(-ratio, kind="stable")
    cumulative_a, cumulative_b = np.cumsum(odd_a[order]), np.cumsum(odd_b[order])
    bounds = projected_conditional_bound(cumulative_a, max(int(odd_a.sum()), 1), cumulative_b,
                                         max(int(odd_b.sum()), 1), final_runs, alpha, z=SELECTION_Z)
    bounds = np.where(cumulative_a >= MIN_COUNT / 2, bounds, -np.inf)
    last = int(np.argmax(bounds))
    if not bounds[last] > -math.inf:
        return None
    row = np.zeros(events.n_codes, dtype=bool)
    row[order[: last + 1]] = True
    return float(bounds[last]), f"level-set({_codes_label(order[: last + 1], events)})", row


@functools.lru_cache(maxsize=1024)
def _norm_isf(x: float) -> float:
    from scipy import stats

    return float(stats.norm.isf(x))


def _codes_label(codes, events: EventSpace) -> str:
    labels = [events.label(c) for c in sorted(int(c) for c in codes)]
    if len(labels) <= 8:
        return ",".join(labels)
    return ",".join(labels[:8]) + f",... {len(labels)} codes"
