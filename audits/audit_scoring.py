"""Scoring a candidate pair in the selection phase, and the values the three phases hand on.

:func:`score_candidate` ranks a pair by the bound the estimation phase is projected to report on
its best event (:func:`audits.statistics.projected_conditional_bound`), over the problem's events
and over likelihood-ratio level sets (Neyman-Pearson optimal events) built on a hold-out half of
the selection samples. :class:`ScoredCandidate`, :class:`Selection` and :class:`Estimation` are
the phases' outcomes (:mod:`audits.audit_engine`).
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Selection:
    """Outcome of the successive-halving selection: the last round's ranking (best first).

    ``families`` maps each family name to its :class:`audits.audit_results.FamilyTally`."""

    ranked: tuple[ScoredCandidate, ...]
    best: ScoredCandidate
    rounds: int
    pairs_examined: int
    first_round_runs: int = 0  # runs per input of the first (coverage) round
    first_round_runs_structured: int = 0  # ... of the structured (non-grid) families' pairs
    families: Any = None  # name -> FamilyTally (None: not recorded)
    latest: tuple = ()  # every scored pair's most recent score (all rounds), best first


@dataclass(frozen=True)
class Estimation:
    """Outcome of the estimation phase: the witness pair's histograms on fresh, Poissonised runs."""

    hist_a: np.ndarray
    hist_b: np.ndarray
    n_a: int  # runs drawn for input A
    n_b: int
    runs_mean: int  # planned Poisson mean M of the runs per input


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
    best = ScoredCandidate(float(projected[top]), candidate, events.names[top], events.membership[top],
                           alternatives, explore)
    level_set = best_level_set(events, hist_a, hist_b, book.half[a], book.half[b], final_runs, alpha)
    if level_set is not None and level_set[0] > best.score:
        bound, name, row = level_set
        best = ScoredCandidate(bound, candidate, name, row, ((name, row),) + alternatives, explore)
    return best


def exploration_score(hits_a: np.ndarray, runs_a: int, hits_b: np.ndarray, runs_b: int) -> float:
    """The smoothed point estimate of ln(P_A[E] / P_B[E]) of the best event seen at least
    EXPLORE_MIN_COUNT times on its likely side (no pessimism: rare events are not dropped before
    they have been sampled enough to be ranked by the projected bound)."""
    with np.errstate(divide="ignore"):
        point = np.log((hits_a + 0.5) / (runs_a + 1.0)) - np.log((hits_b + 0.5) / (runs_b + 1.0))
    point = np.where(hits_a >= EXPLORE_MIN_COUNT, point, -np.inf)
    return float(point.max()) if point.size else -math.inf


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


def _norm_isf(x: float) -> float:
    from scipy import stats

    return float(stats.norm.isf(x))


def _codes_label(codes, events: EventSpace) -> str:
    labels = [events.label(c) for c in sorted(int(c) for c in codes)]
    if len(labels) <= 8:
        return ",".join(labels)
    return ",".join(labels[:8]) + f",... {len(labels)} codes"
