"""The statistical DP auditor.

``audit(target, epsilon=..., eps_t=..., seconds=...)`` searches neighbouring Bernoulli streams
(:mod:`audits.search`), compares halting-time distributions on events (:mod:`audits.events`) and
reports, at the stated confidence, a lower bound on the deployment's privacy loss
(:mod:`audits.statistics`). The verdict is ``violation`` when the bound exceeds the claimed
epsilon, else ``no-violation-found``.

Three phases (:func:`select`, :func:`validate`, :func:`estimate`), on disjoint samples:

1. *Selection* (a share of the budget): successive halving over the candidate pairs. The first
   round samples every pair (runs per input sized to the budget, :func:`first_round_runs`); in each
   later round the survivors are sampled twice as much, ranked by the bound the final phase would
   report (exploitation) and by the point estimate of their loss (exploration), the best quarter
   of each ranking survive, and the best few of each are refined (:func:`audits.search.refine`;
   the refinements are sampled first in the next round).
   While no pair is projected above the claim the selection may use EXTENDED_SELECTION_SHARE of
   the budget. The JSON's ``search`` section lists the families tried (pairs proposed / sampled),
   the searched region and every skipped region with its reason (:func:`audits.search.coverage`),
   and ``search.budget`` whether the budget could give a meaningful bound.
2. *Validation*: the top pairs and their best events re-ranked on fresh samples (removes the
   winner's curse); for the GTM also the best pair of each stream length the top pairs do not
   cover, from any round (:func:`validation_pool`). The output is one pre-registered witness: a pair, an event and a direction.
3. *Estimation*: fresh samples of the witness pair only. The planned number of runs M per input
   is fixed before sampling (from the measured throughput and the remaining budget); each input
   is run a Poisson(M) number of times (drawn from the audit's seeded generator, independent of
   the outputs), so the event counts are independent Poisson variables and the *conditional
   test* of :func:`audits.statistics.conditional_loss_lower_bound` (one Clopper-Pearson bound at
   level alpha on Pr_A[E] / (Pr_A[E] + Pr_B[E]) given the total count) is exact. Only this single
   hypothesis is tested, so no further multiplicity correction is needed and the bound holds at
   the stated confidence overall. (With a sample budget, M leaves 5 standard deviations of the
   Poisson total as slack, so the budget is exceeded with probability < 1e-6.)

The engine (:func:`run_audit`) is generic over an :class:`AuditProblem` - the GTM problem here,
the Sparse Vector problems of :mod:`audits.power.svt` - so the same statistics audit both.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.validation import check_nonnegative

from . import search as S
from .events import EventSpace, halting_events, outcome_codes
from .sampling import AuditSettings, Clock, ProgressBar, SampleBook, Seeds
from .statistics import conditional_loss_lower_bound, event_estimates, garwood_interval, projected_conditional_bound
from .targets import Target

VIOLATION, NO_VIOLATION = "violation", "no-violation-found"
SELECTION_Z = 1.5  # pessimism (in standard errors) of the selection-phase ranking
VALIDATION_K = 8  # witnesses re-ranked on fresh samples before the estimation phase
VALIDATION_SHAPES = 3  # wide searches re-rank up to this many more: the best pair of each event space the
# others do not cover: a long stream whose leak sits on a rare event ranks low until it has many samples, and the
# refinements of a short strong pair can fill the whole last round (issue 20, power suite step-noise-reused)
VALIDATION_EVENTS = 3  # events per witness candidate re-ranked in validation
MIN_COUNT = 10  # an event needs this many selection hits on its likely side to be ranked
EXPLORE_MIN_COUNT = 3  # ... and this many to be ranked by its point estimate (exploration)
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
# exploration threshold) with probability 0.42, so a budget that allows more must buy more (issue 20)


class AuditProblem(Protocol):
    """What the engine needs to know about the audited mechanism. Candidates carry ``family`` and
    ``to_dict()``; inputs are hashable sequences. ``initial_samples`` (first-round runs per input)
    overrides the engine's default when the problem's strongest events are rare (None: the default, the
    first round is then sized to the budget). ``explore`` (optional, default False): keep the best pairs
    by the point estimate of their loss as well as by the projected bound in every halving round."""

    initial_samples: int | None

    def initial_candidates(self) -> list: ...
    def refine(self, candidate, rng: np.random.Generator) -> list: ...
    def inputs(self, candidate) -> tuple[Any, Any]: ...  # hashable inputs (A, B)
    def events(self, candidate) -> EventSpace: ...
    def sample_codes(self, inp, n: int, seed: int) -> np.ndarray: ...
    def describe_input(self, inp) -> Any: ...


@dataclass(frozen=True)
class AuditWitness:
    """The pre-registered (pair, event, direction) and its final-phase estimates."""

    input_a: Any
    input_b: Any
    event: str
    family: str
    count_a: int
    n_a: int
    count_b: int
    n_b: int
    probability_a: float
    probability_a_lower: float
    probability_b: float
    probability_b_upper: float
    event_codes: tuple = ()
    runs_mean: int = 0  # planned Poisson mean M of the runs per input
    loss_bound: float = float("-inf")  # the conditional test's lower bound on ln(P[E] / P'[E])

    def to_dict(self) -> dict:
        return {
            "event_codes": list(self.event_codes),
            "runs_mean": self.runs_mean,
            "loss_bound": self.loss_bound,
            "statistic": "poisson-conditional",
            "p": self.input_a,
            "p_prime": self.input_b,
            "event": self.event,
            "family": self.family,
            "probability": {"estimate": self.probability_a, "lower": self.probability_a_lower,
                            "count": self.count_a, "n": self.n_a},
            "probability_prime": {"estimate": self.probability_b, "upper": self.probability_b_upper,
                                  "count": self.count_b, "n": self.n_b},
        }


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit (scipy-style result object).

    Attributes:
        verdict: ``"violation"`` (the lower bound exceeds the claim) or ``"no-violation-found"``.
        epsilon_claimed: the epsilon the deployment claims.
        epsilon_lower_bound: lower bound on the deployment's privacy loss, valid with
            probability ``confidence`` (``-inf`` when no event could be estimated).
        confidence: the confidence level of the bound.
        witness: the pair of streams, the event and its estimated probabilities (or None).
        samples: total runs requested from the target.
        seconds: wall-clock time the audit took.
        seed: the audit's seed.
        target: a description of the audited target.
        per_event: losses of the events examined in the last phase, with their intervals.
        search: statistics of the search (candidates, rounds).
        method: the statistical method, in words.
    """

    verdict: str
    epsilon_claimed: float
    epsilon_lower_bound: float
    confidence: float
    witness: AuditWitness | None
    samples: int
    seconds: float
    seed: int
    target: str
    per_event: list = field(default_factory=list)
    search: dict = field(default_factory=dict)
    method: str = ""

    @property
    def violation(self) -> bool:
        return self.verdict == VIOLATION

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "epsilon_claimed": self.epsilon_claimed,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "confidence": self.confidence,
            "witness": None if self.witness is None else self.witness.to_dict(),
            "samples": self.samples,
            "seconds": self.seconds,
            "seed": self.seed,
            "target": self.target,
            "per_event": [e.to_dict() for e in self.per_event],
            "search": self.search,
            "method": self.method,
        }

    def __repr__(self) -> str:
        return (f"AuditResult(verdict={self.verdict!r}, epsilon_claimed={self.epsilon_claimed:g}, "
                f"epsilon_lower_bound={self.epsilon_lower_bound:.4f}, confidence={self.confidence:g}, "
                f"samples={self.samples}, seconds={self.seconds:.1f})")


# ---------------------------------------------------------------------------
# the GTM problem
# ---------------------------------------------------------------------------


class GTMProblem:
    """Neighbouring Bernoulli streams for a GTM target; outputs are halting times."""

    initial_samples = None  # the engine's default
    explore = True  # keep the best pairs by point estimate too (rare-event leaks, issue 20)

    def __init__(self, target: Target, eps_t, *, max_T: int = 50, oracle_plan=None, oracle_seconds: float = 10.0,
                 extra_candidates=(), oracle_attempts: int | None = None, map_starts=None):
        self.target, self.eps_t = target, eps_t
        limit = target.max_T if target.max_T is not None else max_T
        if not isinstance(eps_t, (int, float)):  # a per-step list covers steps 1..len: never reused beyond
            limit = min(limit, len(eps_t))
        self.max_T = int(min(max_T, limit))
        self.oracle_plan = oracle_plan
        self.oracle_seconds = oracle_seconds
        self.oracle_attempts = oracle_attempts  # a count (reproducible) instead of the seconds, when given
        self.map_starts = map_starts  # where the exact search's starts run (an executor's map_ordered)
        self.extra = list(extra_candidates)
        self._events: dict[int, EventSpace] = {}

    def __getstate__(self):
        # shipped to Dask workers with every batch: the mapper (bound to the client's executor) stays here,
        # the workers only sample
        return {**self.__dict__, "map_starts": None}

    def initial_candidates(self):
        cands = S.initial_candidates(self.eps_t, self.max_T)
        if self.oracle_plan is not None:
            cands = S.oracle_candidates(self.oracle_plan, self.eps_t, self.max_T, horizon=min(3, self.max_T),
                                        seconds=self.oracle_seconds, max_attempts=self.oracle_attempts,
                                        map_starts=self.map_starts) + cands
        return self.extra + cands

    def refine(self, candidate, rng):
        return S.refine(candidate, self.eps_t, self.max_T, rng)

    def coverage(self) -> dict:
        """The searched region and what is skipped, with reasons (:func:`audits.search.coverage`)."""
        return S.coverage(self.eps_t, self.max_T)

    def inputs(self, candidate):
        return candidate.p, candidate.p_prime

    def events(self, candidate):
        T = candidate.T
        if T not in self._events:
            self._events[T] = halting_events(T, stops=True)  # budget stops are outcomes (docs/protocol.md)
        return self._events[T]

    def sample_codes(self, inp, n, seed):
        # a budget stop (-t, docs/protocol.md) is an outcome of its own: event code T + t
        return outcome_codes(self.target.sample(list(inp), int(n), int(seed)).halt, len(inp))

    def describe_input(self, inp):
        return [float(x) for x in inp]


# ---------------------------------------------------------------------------
# the engine: selection -> validation -> estimation
# ---------------------------------------------------------------------------


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
    """Outcome of the successive-halving selection: the last round's ranking (best first)."""

    ranked: tuple[ScoredCandidate, ...]
    best: ScoredCandidate
    rounds: int
    pairs_examined: int
    first_round_runs: int = 0  # runs per input of the first (coverage) round
    first_round_runs_structured: int = 0  # ... of the structured (non-grid) families' pairs
    families: dict = field(default_factory=dict)  # per family: pairs proposed, scored, best score, runs
    latest: tuple = ()  # every scored pair's most recent score (all rounds), best first


@dataclass(frozen=True)
class Estimation:
    """Outcome of the estimation phase: the witness pair's histograms on fresh, Poissonised runs."""

    hist_a: np.ndarray
    hist_b: np.ndarray
    n_a: int  # runs drawn for input A
    n_b: int
    runs_mean: int  # planned Poisson mean M of the runs per input


def score_candidate(problem, book: SampleBook, c, alpha: float) -> ScoredCandidate:
    """Best projected final bound of candidate c over its events and its likelihood-ratio level sets."""
    a, b = problem.inputs(c)
    ev = problem.events(c)
    ha, hb = book.hist[a], book.hist[b]
    nf = book.final_n(a, b)
    ka_all = ev.counts(ha)
    # pessimism grows with the number of events ranked at once (the max of many noisy
    # estimates is biased upwards): about one standard normal quantile of 1/#events
    z_events = max(SELECTION_Z, float(_norm_isf(1.0 / max(len(ev), 2))))
    proj = projected_conditional_bound(ka_all, book.nsel[a], ev.counts(hb), book.nsel[b], nf, alpha, z=z_events)
    proj = np.where(ka_all >= MIN_COUNT, proj, -np.inf)  # too few hits to rank at all
    order_ev = np.argsort(-proj)[:VALIDATION_EVENTS]
    alts = tuple((ev.names[k], ev.membership[k]) for k in order_ev if np.isfinite(proj[k]))
    i = int(order_ev[0])
    kb_all = ev.counts(hb)
    # exploration score: the smoothed point estimate of ln(P_A[E] / P_B[E]) of the best event seen at
    # least EXPLORE_MIN_COUNT times on its likely side (no pessimism: rare events are not dropped
    # before they have been sampled enough to be ranked by the projected bound)
    with np.errstate(divide="ignore"):
        point = np.log((ka_all + 0.5) / (book.nsel[a] + 1.0)) - np.log((kb_all + 0.5) / (book.nsel[b] + 1.0))
    point = np.where(ka_all >= EXPLORE_MIN_COUNT, point, -np.inf)
    explore = float(point.max()) if point.size else -math.inf
    best = ScoredCandidate(float(proj[i]), c, ev.names[i], ev.membership[i], alts, explore)
    # likelihood-ratio level sets {codes: P_A/P_B >= tau} (Neyman-Pearson optimal events):
    # codes ordered on the even-numbered selection samples, sets scored on the odd-numbered
    # ones (a hold-out inside the selection phase, so the ranking does not chase noise)
    oa, ob = book.half[a], book.half[b]
    ea, eb = ha - oa, hb - ob
    ratio = (ea + 0.5) / (eb + 0.5)
    order = np.argsort(-ratio, kind="stable")
    ca, cb = np.cumsum(oa[order]), np.cumsum(ob[order])
    lp = projected_conditional_bound(ca, max(int(oa.sum()), 1), cb, max(int(ob.sum()), 1), nf, alpha,
                                     z=SELECTION_Z)
    lp = np.where(ca >= MIN_COUNT / 2, lp, -np.inf)
    j = int(np.argmax(lp))
    if lp[j] > best.score:
        row = np.zeros(ev.n_codes, dtype=bool)
        row[order[: j + 1]] = True
        name = f"level-set({_codes_label(order[: j + 1], ev)})"
        best = ScoredCandidate(float(lp[j]), c, name, row, ((name, row),) + alts, explore)
    return best


def first_round_runs(problem, book: SampleBook, settings: AuditSettings, pool: list, n_inputs: int) -> int:
    """Runs per input of the first (coverage) round: every candidate must be seen once, so the round
    is sized to FIRST_ROUND_SHARE of the selection budget (at least MIN_FIRST_ROUND runs, at most
    FIRST_ROUND_MAX_FACTOR * n0).
    With a sample budget this is arithmetic (reproducible); with a time budget the per-request cost
    is measured on a pilot of the first few inputs (at n0 runs, kept as part of the round)."""
    if getattr(problem, "initial_samples", None):  # the problem fixes its first round (rare strong events)
        return int(settings.n0)
    if settings.max_samples is not None:
        share = FIRST_ROUND_SHARE * settings.selection_share * settings.max_samples
        return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, share / max(n_inputs, 1))))
    pilot = pool[:8]
    t0 = book.clock.elapsed()
    for c in pilot:
        for inp in problem.inputs(c):
            book.ensure(inp, settings.n0, problem.events(c).n_codes)
    spent = max(book.clock.elapsed() - t0, 1e-6)
    per_request = spent / max(len({x for c in pilot for x in problem.inputs(c)}), 1)
    left = FIRST_ROUND_SHARE * settings.selection_share * settings.seconds - book.clock.elapsed()
    scale = left / max(per_request * n_inputs, 1e-9)  # per_request includes fixed costs: a larger n costs less
    return int(min(FIRST_ROUND_MAX_FACTOR * settings.n0, max(MIN_FIRST_ROUND, settings.n0 * scale)))


def select(problem, book: SampleBook, settings: AuditSettings, rng: np.random.Generator,
           bar: ProgressBar) -> Selection:
    """Phase 1: successive halving. The first round sees every candidate (sized to the budget by
    :func:`first_round_runs`); in every later round the survivors are sampled twice as much, the
    best quarter by the projected final bound (exploitation) plus the best quarter by the point
    estimate of the loss (exploration: rare events, seen only a few times, are not dropped before
    they can be ranked) are kept, and the best three by each ranking are refined - until the
    selection share of the budget is spent."""
    pool = problem.initial_candidates()
    # a time-limited first round must still see every family: visit candidates in random order,
    # cheap (short) ones first
    perm = rng.permutation(len(pool))
    pool = sorted((pool[i] for i in perm), key=lambda c: _cost_class(problem, c))
    examined = {id(c): c for c in pool}
    n_inputs = len({x for c in pool for x in problem.inputs(c)})
    n_round = first_round_runs(problem, book, settings, pool, n_inputs)
    first_n = n_round
    # the coverage grid is thousands of pairs: sized over all inputs, its first round can be thin (a slow
    # target, a long max_T). The structured families (a few hundred pairs, where the classic worst cases
    # sit) are sized over their own inputs, so the grid never starves them (issue 20: "GTM power results
    # unchanged or better")
    structured = [c for c in pool if not _is_grid(c)]
    n_structured = max(n_round, first_round_runs(problem, book, settings, structured,
                                                 len({x for c in structured for x in problem.inputs(c)})))
    fam: dict[str, dict] = {}
    for c in pool:
        fam.setdefault(_family(c), {"proposed": 0, "scored": 0, "last_round": 0, "best_score": -math.inf})
        fam[_family(c)]["proposed"] += 1
    rounds = 0
    best = None
    scores: list[ScoredCandidate] = []
    scored_ids: set[int] = set()
    latest: dict[int, ScoredCandidate] = {}
    while True:
        rounds += 1
        scores = []
        for c in pool:
            if book.budget_used() >= _selection_limit(settings, best) and len(scores) >= 8:
                break
            a, b = problem.inputs(c)
            n_codes = problem.events(c).n_codes
            n_c = n_round if _is_grid(c) else n_round * (n_round_structured(first_n, n_structured) // first_n)
            book.ensure(a, n_c, n_codes)
            book.ensure(b, n_c, n_codes)
            sc = score_candidate(problem, book, c, settings.alpha)
            scores.append(sc)
            latest[id(c)] = sc
            f = fam.setdefault(_family(c), {"proposed": 0, "scored": 0, "last_round": 0, "best_score": -math.inf})
            if id(c) not in scored_ids:
                scored_ids.add(id(c))
                f["scored"] += 1
            f["last_round"] = rounds
            f["best_score"] = max(f["best_score"], sc.score)
            bar.update(book.progress_done(),
                       f"selection round {rounds}: {len(scores)}/{len(pool)} pairs, n={n_round}, "
                       f"best projected bound {max(s.score for s in scores):.3f}")
        scores.sort(key=lambda s: -s.score)
        if scores:
            best = scores[0]
        if book.budget_used() >= _selection_limit(settings, best):
            break
        # exploration survivors only for problems that ask for them (the GTM: leaks on rare events may sit
        # anywhere in the stream space); the SVT problems keep the exploitation-only halving
        by_explore = sorted(scores, key=lambda s: -s.explore) if getattr(problem, "explore", False) else []
        fresh = []
        for s in scores[:3] + by_explore[:3]:
            for r in problem.refine(s.candidate, rng):
                examined.setdefault(id(r), r)
                fam.setdefault(_family(r), {"proposed": 0, "scored": 0, "last_round": 0, "best_score": -math.inf})
                fam[_family(r)]["proposed"] += 1
                fresh.append(r)
        pool = next_round_pool(problem, _survivors(scores, by_explore, max(4, len(scores) // 4)), fresh)
        n_round *= 2
    return Selection(ranked=tuple(scores), best=best, rounds=rounds, pairs_examined=len(examined),
                     first_round_runs=first_n, first_round_runs_structured=n_round_structured(first_n, n_structured),
                     families=fam, latest=tuple(sorted(latest.values(), key=lambda s: -s.score)))


def next_round_pool(problem, survivors: list, fresh: list) -> list:
    """The order a halving round visits its pairs in. A wide search (``problem.explore``: the GTM's coverage
    grid) samples the refinements first: when the budget ends inside a round, the lowest-ranked survivors
    go unsampled, not the refinements of the best pairs (at max-T 50 the survivors of the ~8k-pair grid
    cost as much as the whole first round, and no refinement was ever sampled - issue 20, power suite).
    The SVT problems keep the survivors first (small pools; their benchmark was measured so)."""
    return fresh + survivors if getattr(problem, "explore", False) else survivors + fresh


def _survivors(scores: list, by_explore: list, keep: int) -> list:
    """The best ``keep`` pairs by the projected bound, then the best ``keep`` by the point estimate
    (exploration; only finite estimates), without repeats."""
    survivors, seen = [], set()
    for s in scores[:keep] + [s for s in by_explore[:keep] if math.isfinite(s.explore)]:
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


def _is_grid(c) -> bool:
    """A pair of the coverage grid (not refined): sized with the whole grid in the first round."""
    return str(getattr(c, "family", "")) == "grid"


def _family(c) -> str:
    return str(getattr(c, "family", "candidate")).split("+")[0] + ("+refined" if "+refined" in str(
        getattr(c, "family", "")) else "")


def validate(problem, book: SampleBook, settings: AuditSettings, selection: Selection,
             bar: ProgressBar) -> ScoredCandidate:
    """Phase 2: re-rank the top witnesses (distinct pairs, up to VALIDATION_K, each with its alternative
    events) on fresh samples - this removes the winner's curse of the selection, whose accumulated
    samples favour lucky candidates. Returns the witness to pre-register."""
    top = validation_pool(problem, selection)
    if len(top) <= 1:
        return selection.best
    validated = []
    for sc in top:
        a, b = problem.inputs(sc.candidate)
        ev = problem.events(sc.candidate)
        if settings.max_samples is None:
            nv = int(settings.validation_share * settings.seconds / len(top) / max(book.seconds_per_run(a, b), 1e-9))
        else:
            nv = int(settings.validation_share * settings.max_samples / len(top) / 2)
        nv = max(settings.n0, nv)
        ha_v, hb_v = book.draw_many([(a, nv), (b, nv)], ev.n_codes)
        for name, row in sc.alternatives or ((sc.event, sc.membership),):
            ka_v, kb_v = int(ha_v[row].sum()), int(hb_v[row].sum())
            v = float(projected_conditional_bound(ka_v, nv, kb_v, nv, book.final_n(a, b), settings.alpha, z=1.0))
            validated.append((v, ScoredCandidate(sc.score, sc.candidate, name, row)))
        bar.update(book.progress_done(), f"validation {len(validated)}/{len(top)}")
    validated.sort(key=lambda x: -x[0])
    return validated[0][1]


def validation_pool(problem, selection: Selection) -> list:
    """The pairs validation re-ranks: the best of the last round by score (distinct input pairs, up to
    VALIDATION_K). A wide search (``problem.explore``) adds up to VALIDATION_SHAPES more: the best pair (by
    its most recent score, any round) of each event space the others do not cover - for the GTM, each
    stream length: the loss of a long stream's rare event is bounded by its sample count until it has many
    samples, so it ranks below the refinements of a short pair that fill the last round (issue 20).
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


def estimate(problem, book: SampleBook, settings: AuditSettings, witness: ScoredCandidate,
             bar: ProgressBar) -> Estimation:
    """Phase 3: fresh samples of the witness pair only, each input run a Poisson(m) number of times per
    chunk (counts from their own seeded stream, never from the outputs), until the planned mean M
    per input is reached or the clock stops (whole chunks only)."""
    a, b = problem.inputs(witness.candidate)
    ev = problem.events(witness.candidate)
    n_final = book.final_n(a, b)
    counts_rng = np.random.default_rng(np.random.SeedSequence([int(settings.seed), 0x9015]))
    ha = np.zeros(ev.n_codes, dtype=np.int64)
    hb = np.zeros(ev.n_codes, dtype=np.int64)
    M = na = nb = 0  # M = planned mean of the runs per input (sum of the chunks' Poisson means)
    final_secs = 0.0
    replanned = False
    while M < n_final:
        if M > 0 and book.clock.left() <= 0:
            break  # hard time budget: the stopping rule depends on the clock only (whole chunks)
        chunk = max(1000, min(n_final // 8 if not replanned else n_final, estimation_chunk(settings, book.executor)))
        m = min(chunk, n_final - M)
        ma, mb = int(counts_rng.poisson(m)), int(counts_rng.poisson(m))
        t0 = time.monotonic()
        da, db = book.draw_many([(a, ma), (b, mb)], ev.n_codes)  # both inputs at once (parallel on workers)
        ha += da
        hb += db
        final_secs += time.monotonic() - t0
        M += m
        na += ma
        nb += mb
        if settings.max_samples is None:
            # re-plan after every chunk from the speed of this phase's own requests (small selection
            # requests overstate the per-run cost), so a slow target still uses its whole budget; this
            # uses timing only, never the samples' values (the stopping rule stays data-independent)
            replanned = True
            per_run = final_secs / max(na + nb, 1) * 2
            extra = int(max(book.clock.left(), 0.0) * 0.9 / max(per_run, 1e-12))
            if extra >= ESTIMATION_MIN_CHUNK:
                n_final = max(n_final, M + extra)
        bar.update(book.progress_done(), f"estimation {M}/{n_final} runs per stream")
    return Estimation(hist_a=ha, hist_b=hb, n_a=na, n_b=nb, runs_mean=M)


def estimation_chunk(settings: AuditSettings, executor) -> int:
    """Largest request group (runs per input) of the estimation phase. With a sample budget it is the fixed
    :data:`ESTIMATION_CHUNK` (the result must not depend on where it ran); with a time budget it scales with
    the workers (the result is not reproducible anyway, and the phase re-plans between groups)."""
    if settings.max_samples is not None:
        return ESTIMATION_CHUNK
    return TIMED_CHUNK_PER_WORKER * max(1, int(getattr(executor, "workers", 1)))


METHOD = ("two-phase: successive-halving selection, then one pre-registered witness on fresh samples; "
          "Poisson(M) runs per input and the conditional test (one-sided Clopper-Pearson at alpha on "
          "P[E] / (P[E] + P'[E]) given the total count)")


TIMING_KEYS = ("seconds", "execution")  # where and how long an audit ran: not part of its result
BUDGET_TIMING_KEYS = ("seconds_used", "time_share_used")


def without_timings(doc: dict) -> dict:
    """An audit's JSON (``AuditResult.to_dict()``) without what depends on where and how fast it ran:
    two runs with the same seed and sample budget agree on everything that is left."""
    out = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    if isinstance(out.get("search"), dict) and isinstance(out["search"].get("budget"), dict):
        budget = {k: v for k, v in out["search"]["budget"].items() if k not in BUDGET_TIMING_KEYS}
        out["search"] = {**out["search"], "budget": budget}
    return out


DEADLINE_GRACE_SECONDS = 1.5  # how far past --seconds a target's answer is still awaited


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
    then the conditional test on the pre-registered witness."""
    if not (0 < confidence < 1):
        raise InvalidParameter(f"confidence must be in (0, 1), got {confidence!r}")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    if seconds is None and max_samples is None:
        raise InvalidParameter("give a time budget (seconds) or a sample budget (max_samples)")
    if seconds is not None and not seconds > 0:
        raise InvalidParameter(f"seconds must be > 0, got {seconds!r}")
    if max_samples is not None and max_samples < 4 * n0:
        raise InvalidParameter(f"max_samples must be >= {4 * n0}, got {max_samples!r}")
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
    witness = validate(problem, book, settings, selection, bar)
    est = estimate(problem, book, settings, witness, bar)
    bar.close()
    return _result(problem, book, settings, selection, witness, est, target_name)


def _result(problem, book: SampleBook, settings: AuditSettings, selection: Selection, chosen: ScoredCandidate,
            est: Estimation, target_name: str) -> AuditResult:
    """The conditional test on the witness event, the per-event estimates and the verdict."""
    alpha = settings.alpha
    a, b = problem.inputs(chosen.candidate)
    ev = problem.events(chosen.candidate)
    k_a, k_b = int(est.hist_a[chosen.membership].sum()), int(est.hist_b[chosen.membership].sum())
    bound = float(conditional_loss_lower_bound(k_a, k_b, alpha))
    lo_a, _ = garwood_interval(k_a, alpha / 2)
    _, hi_b = garwood_interval(k_b, alpha / 2)
    M, na, nb = est.runs_mean, est.n_a, est.n_b
    witness = AuditWitness(
        input_a=problem.describe_input(a), input_b=problem.describe_input(b), event=chosen.event,
        family=chosen.candidate.family, count_a=k_a, n_a=na, count_b=k_b, n_b=nb,
        probability_a=k_a / max(na, 1), probability_a_lower=min(float(lo_a) / M, 1.0),
        probability_b=k_b / max(nb, 1), probability_b_upper=min(float(hi_b) / M, 1.0),
        event_codes=tuple(int(x) for x in np.nonzero(chosen.membership)[0]), runs_mean=int(M), loss_bound=bound,
    )
    per_event = event_estimates(ev.names, ev.counts(est.hist_a), na, ev.counts(est.hist_b), nb, alpha)
    bound_reported = max(bound, 0.0) if math.isfinite(bound) else 0.0
    verdict = VIOLATION if bound > settings.epsilon else NO_VIOLATION
    top = [{"score": sc.score, "event": sc.event, "pair": sc.candidate.to_dict()} for sc in selection.ranked[:5]]
    families = {name: {**f, "best_score": f["best_score"] if math.isfinite(f["best_score"]) else None,
                       "not_visited": f["proposed"] - f["scored"]}
                for name, f in sorted(selection.families.items())}
    coverage = problem.coverage() if hasattr(problem, "coverage") else {}
    unvisited = sum(f["not_visited"] for name, f in families.items() if not name.endswith("+refined"))
    if unvisited:
        coverage = {**coverage, "skipped": list(coverage.get("skipped", [])) + [
            {"region": f"{unvisited} proposed pairs never sampled", "reason": "the selection budget ran out during "
             "the first round (see families.*.not_visited)"}]}
    budget = budget_assessment(settings, book, k_a, k_b, M, alpha)
    return AuditResult(
        verdict=verdict, epsilon_claimed=settings.epsilon, epsilon_lower_bound=float(bound_reported),
        confidence=settings.confidence, witness=witness, samples=int(book.samples), seconds=book.clock.elapsed(),
        seed=settings.seed, target=target_name, per_event=per_event,
        search={"rounds": selection.rounds, "pairs_examined": selection.pairs_examined, "selection_top": top,
                "projected_bound": chosen.score, "final_runs_per_stream": na,
                "first_round_runs_per_input": selection.first_round_runs,
                "first_round_runs_per_input_structured": selection.first_round_runs_structured, "families": families,
                "coverage": coverage, "budget": budget},
        method=METHOD,
    )


def budget_assessment(settings: AuditSettings, book: SampleBook, k_a: int, k_b: int, runs_mean: int,
                      alpha: float) -> dict:
    """How much of the budget was used, and whether it was large enough for a meaningful bound.

    ``best_reachable_bound``: the largest bound the conditional test could have reported on the
    witness event with the hits it got, had all of them fallen on the first input
    (:func:`audits.statistics.conditional_loss_lower_bound` of (k_A + k_B, 0)) - a property of the
    budget, not of the deployment. Below the claimed epsilon, no violation could have been found on
    this event however large the true loss: the JSON then carries a warning."""
    reach = float(conditional_loss_lower_bound(int(k_a) + int(k_b), 0, alpha))
    out = {"seconds": settings.seconds, "max_samples": settings.max_samples, "samples_used": int(book.samples),
           "seconds_used": book.clock.elapsed(),
           "time_share_used": (book.clock.elapsed() / settings.seconds) if settings.seconds else None,
           "final_runs_per_input": int(runs_mean),
           "best_reachable_bound": reach if math.isfinite(reach) else None,
           "meaningful": bool(reach > settings.epsilon), "warning": None}
    if not reach > settings.epsilon:
        out["warning"] = (f"budget too small for a meaningful bound: with {int(runs_mean)} runs per input the witness "
                          f"event got {int(k_a) + int(k_b)} hits, so the best bound reachable was "
                          f"{reach if math.isfinite(reach) else float('-inf'):.3f} <= claimed epsilon "
                          f"{settings.epsilon:g}")
    return out


def _norm_isf(x: float) -> float:
    from scipy import stats

    return float(stats.norm.isf(x))


def _cost_class(problem, c) -> int:
    a, _ = problem.inputs(c)
    n = len(a)
    return 0 if n <= 5 else 1 if n <= 20 else 2


def _codes_label(codes, ev: EventSpace) -> str:
    labels = [ev.label(c) for c in sorted(int(c) for c in codes)]
    if len(labels) <= 8:
        return ",".join(labels)
    return ",".join(labels[:8]) + f",... {len(labels)} codes"


def audit(
    target: Target,
    *,
    epsilon: float,
    eps_t,
    seconds: float | None = 60.0,
    seed: int = 0,
    confidence: float = 0.95,
    progress: bool = True,
    max_samples: int | None = None,
    max_T: int = 50,
    oracle_plan=None,
    oracle_seconds: float | None = None,
    extra_candidates: Sequence = (),
    executor=None,
) -> AuditResult:
    """Audit a GTM deployment for a claimed epsilon, given its inputs' privacy eps_t.

    The auditor searches pairs of neighbouring Bernoulli streams p, p' (every step's odds within
    a factor e^eps_t, in both directions), samples the target's halting times on both, and
    reports a lower bound on the privacy loss ln(Pr[E | p] / Pr[E | p']) of one pre-registered
    event E that holds with probability ``confidence``.

    Args:
        target: the deployment to audit, any :class:`audits.targets.Target`
            (:class:`~audits.targets.SimulatorTarget`, :class:`~audits.targets.ReferenceTarget`,
            :class:`~audits.targets.CallableTarget`, :class:`~audits.targets.SubprocessTarget`).
        epsilon: the output privacy the deployment claims (pure epsilon-DP); the verdict is
            ``"violation"`` when the lower bound exceeds it.
        eps_t: the privacy of the input mechanisms M_t: a number for every step, or a list
            with one number per step 1..L (the audit then builds streams of at most L steps,
            never guessing eps_t beyond the list); each >= 0 as in a configuration (a step
            with eps_t = 0 has identical neighbours), not all 0. It decides which streams count
            as neighbours.
        seconds: wall-clock budget in seconds for the whole audit (selection and estimation),
            or ``None`` to stop on ``max_samples`` only (then the result depends only on ``seed``).
        seed: seed of the audit's own generator; every request to the target carries a seed
            derived from it.
        confidence: probability that the reported lower bound is below the true loss.
        progress: show a progress bar on stderr (only drawn on a terminal by the CLI).
        max_samples: total number of runs to request from the target (None = no limit).
        max_T: longest stream (number of steps) to try (at most the length of a list ``eps_t``).
        oracle_plan: when the audited deployment is one of ours with this plan, the exact
            engine's worst-case search (:func:`gtm_core.exact.worst_case_search`) proposes
            candidate pairs first (for ``oracle_seconds``, default 10% of the
            budget).
        oracle_seconds: time given to that search.
        extra_candidates: additional candidate stream pairs to consider first.
        executor: where the runs are computed (:mod:`audits.execution`; default in-process) - the
            result does not depend on it.

    Returns:
        AuditResult: ``verdict``, ``epsilon_claimed``, ``epsilon_lower_bound``, ``confidence``,
        the ``witness`` (streams, event, both probabilities and their intervals), ``samples``
        and ``seconds``; ``to_dict()`` is the JSON form of ``gtm audit --json``.

    Raises:
        InvalidParameter: a bad argument (named in the message).
        TargetError: the target crashed, hung or answered something malformed (never a verdict).

    Example:
        >>> from gtm_core import GTMConfig, make_plan
        >>> from audits.targets import SimulatorTarget
        >>> plan = make_plan(GTMConfig.load("examples/default.toml"))
        >>> result = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None,
        ...                max_samples=40_000, seed=0, progress=False)
        >>> result.verdict, result.epsilon_lower_bound <= 1.0
        ('no-violation-found', True)
    """
    check_eps_t(eps_t)
    if oracle_seconds is None:
        oracle_seconds = 0.1 * seconds if seconds is not None else 10.0
    if seconds is not None:
        # a hard budget: no answer is awaited past it (plus a grace for the final bookkeeping)
        target.set_deadline(time.monotonic() + seconds + DEADLINE_GRACE_SECONDS)
    # with a sample budget the exact search's effort is a count too (S.ORACLE_ATTEMPTS_PER_SECOND per second of
    # oracle_seconds, CPU time capped at S.ORACLE_TIME_CAP_FACTOR times it), so the proposal - and the whole
    # audit - is a function of the seed wherever it runs
    attempts = None
    if seconds is None:
        attempts = max(20, int(oracle_seconds * S.ORACLE_ATTEMPTS_PER_SECOND))
        oracle_seconds = oracle_seconds * S.ORACLE_TIME_CAP_FACTOR
    problem = GTMProblem(target, eps_t, max_T=max_T, oracle_plan=oracle_plan, oracle_seconds=oracle_seconds,
                         extra_candidates=extra_candidates, oracle_attempts=attempts,
                         map_starts=None if executor is None else executor.map_ordered)
    return run_audit(problem, epsilon=epsilon, seconds=seconds, max_samples=max_samples, seed=seed,
                     confidence=confidence, progress=progress, target_name=target.describe(), executor=executor)


def check_eps_t(eps_t):
    """The inputs' privacy: a number or a non-empty list, every value checked as the configuration checks
    it (finite, >= 0; :func:`gtm_core.validation.check_nonnegative`), and not 0 at every step (neighbours
    would all be identical: nothing to audit)."""
    vals = [eps_t] if isinstance(eps_t, (int, float)) else list(eps_t)
    if not vals:
        raise InvalidParameter(f"eps_t must be a number or a non-empty list of them, got {eps_t!r}")
    for v in vals:
        check_nonnegative("eps_t", v)
    if not any(v > 0 for v in vals):
        raise InvalidParameter(f"eps_t is 0 at every step: neighbouring streams are identical, nothing to audit "
                               f"(got {eps_t!r})")


def claimed_epsilon(plan) -> float:
    """The privacy loss a deployment of ``plan`` claims: epsilon, or for the ex-post parameterization
    (Theorem 23) the largest claimed loss of a halting transcript up to the horizon."""
    if plan.parameterization != "theorem23":
        return float(plan.epsilon)
    return max(plan.claimed_loss(t, True) for t in range(1, plan.horizon + 1))


def audit_parameters(config: GTMConfig) -> tuple[float, float | list[float]]:
    """(claimed epsilon, eps_t) of the deployment a configuration describes - what ``gtm audit --config``
    and the certificate's audit witness audit against."""
    eps_t = config.stream.eps_t
    return claimed_epsilon(make_plan(config)), (list(eps_t) if isinstance(eps_t, tuple) else float(eps_t))
