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

The verdict and the search summary are assembled by :func:`audits.audit_verdict.conclude`; the selection
phase, its sizes and its constants are :mod:`audits.audit_selection` (re-exported here).

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

from .audit_results import AuditResult
from .audit_scoring import DETECTION_TARGET, Estimation, ScoredCandidate, Selection
from .audit_selection import (FINE_EASIEST_EVENT, FINE_SHARE, FIRST_ROUND_MAX_FACTOR, MIN_FIRST_ROUND, fine_first_round,
                              fine_min_runs, first_round_runs, search_lane, select)
from .audit_verdict import conclude
from .early_stop import Look, first_look_runs, take_look
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
DEADLINE_GRACE_SECONDS = 1.5  # how far past --seconds a target's answer is still awaited

# the names of the selection phase (audits.audit_selection) callers and tests read from the engine
__all__ = ["AuditProblem", "DEADLINE_GRACE_SECONDS", "ESTIMATION_CHUNK", "ESTIMATION_MIN_CHUNK", "FINE_EASIEST_EVENT",
           "FINE_SHARE", "FIRST_ROUND_MAX_FACTOR", "MIN_FIRST_ROUND", "TIMED_CHUNK_PER_WORKER", "VALIDATION_K",
           "VALIDATION_SHAPES", "budget_stop_note", "check_audit_budget", "estimate", "estimation_chunk",
           "fine_first_round", "fine_min_runs", "first_round_runs", "run_audit",
           "select", "validate", "validation_pool"]


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
    early_stop: bool = False,
) -> AuditResult:
    """Generic audit (see the module docstring): :func:`select`, :func:`validate`, :func:`estimate`,
    then the conditional test on the pre-registered witness (:func:`audits.audit_verdict.conclude`).
    ``early_stop``: early verdicts (:mod:`audits.early_stop`: interim looks at the witness at levels summing
    with the final one's to alpha; a flagrant pair ends the selection); off, the fixed-sample test at alpha.

    Raises:
        InvalidParameter: a bad budget or claim (:func:`check_audit_budget`).
    """
    check_audit_budget(epsilon=epsilon, seconds=seconds, max_samples=max_samples, confidence=confidence,
                       seed=seed, n0=n0)
    settings = AuditSettings(epsilon=float(epsilon), seconds=seconds, max_samples=max_samples, seed=int(seed),
                             confidence=confidence, selection_share=selection_share,
                             validation_share=validation_share,
                             n0=int(problem.initial_samples or n0), early_stop=bool(early_stop))
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
# phase 2: validation
# ---------------------------------------------------------------------------


def validate(problem, book: SampleBook, settings: AuditSettings, selection: Selection,
             bar: ProgressBar) -> tuple[ScoredCandidate, str | None]:
    """Phase 2: re-rank the top witnesses (distinct pairs, up to VALIDATION_K, each with its alternative
    events) on fresh samples - this removes the winner's curse of the selection, whose accumulated
    samples favour lucky candidates. Returns the witness to pre-register and where the clock stopped the
    audit (``selection.stopped``, or validation itself; None when it did not)."""
    top = validation_pool(problem, selection)
    if len(top) <= 1 or selection.stopped is not None or selection.ended_early:  # a flagrant pair is the witness
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
    VALIDATION_K, at most half of them from one search lane - :func:`audits.audit_selection.search_lane`, the
    fine family or the others - while the other lane has scored pairs). A wide search (``problem.explore``)
    adds up to VALIDATION_SHAPES more: the best pair (by its most recent score, any round) of each event space
    the others do not cover - for the GTM, each stream length: the loss of a long stream's rare event is
    bounded by its sample count until it has many samples, so it ranks below the refinements of a short pair
    that fill the last round.
    Validation samples are fresh, so which pairs are re-ranked does not affect the final test's validity."""
    diverse = VALIDATION_SHAPES if getattr(problem, "explore", False) else 0
    top, seen_inputs = [], set()
    # at most half the slots per search lane while the other lane has candidates (then the rest, by score): the
    # fine family's many near-claim pairs must not push the coarse families' best out of validation, nor the
    # reverse
    lanes = {search_lane(sc.candidate) for sc in selection.ranked}
    per_lane = {lane: 0 for lane in lanes}
    cap = VALIDATION_K // 2 if len(lanes) > 1 else VALIDATION_K
    for capped in (True, False):
        for sc in selection.ranked:
            if len(top) >= VALIDATION_K:
                break
            key, lane = problem.inputs(sc.candidate), search_lane(sc.candidate)
            if key not in seen_inputs and (not capped or (per_lane[lane] < cap and math.isfinite(sc.score))):
                seen_inputs.add(key)
                per_lane[lane] += 1
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
    The returned ``stopped`` names the clock stop, if any, that cut the audit short of its sample budget.
    With early verdicts (``settings.early_stop``) the chunks double from :func:`audits.early_stop.first_look_runs`
    and every chunk but the last is a look (:func:`audits.early_stop.take_look`); the phase ends at the first
    look whose bound clears the claim."""
    a, b = problem.inputs(witness.candidate)
    events = problem.events(witness.candidate)
    planned = book.final_n(a, b)
    counts_rng = np.random.default_rng(np.random.SeedSequence([int(settings.seed), 0x9015]))
    hist_a = np.zeros(events.n_codes, dtype=np.int64)
    hist_b = np.zeros(events.n_codes, dtype=np.int64)
    runs_mean = runs_a = runs_b = 0  # runs_mean = planned Poisson mean M per input (sum of the chunks' means)
    phase_seconds = 0.0
    replanned = False
    looks: list[Look] = []
    while stopped is None and runs_mean < planned:
        if runs_mean > 0 and book.clock.left() <= 0:
            if settings.max_samples is not None:
                stopped = "in estimation, before the planned runs"
            break  # hard time budget: the stopping rule depends on the clock only (whole chunks)
        chunk = max(1000, min(planned // 8 if not replanned else planned, estimation_chunk(settings, book.executor)))
        if settings.early_stop:  # looks at doubling runs: 1/256 of the plan, then the runs so far again
            chunk = min(max(runs_mean, first_look_runs(planned, ESTIMATION_MIN_CHUNK)),
                        estimation_chunk(settings, book.executor))
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
        if settings.early_stop and runs_mean < planned:
            looks.append(take_look(len(looks) + 1, runs_mean, int(hist_a[witness.membership].sum()),
                                   int(hist_b[witness.membership].sum()), settings.alpha, book.samples,
                                   book.clock.elapsed()))
            if looks[-1].bound > settings.epsilon:
                break  # the early verdict: this look's bound clears the claim
        bar.update(book.progress_done(), f"estimation {runs_mean}/{planned} runs per stream")
    early = looks[-1] if looks and looks[-1].bound > settings.epsilon else None
    return Estimation(hist_a=hist_a, hist_b=hist_b, n_a=runs_a, n_b=runs_b, runs_mean=runs_mean, stopped=stopped,
                      looks=tuple(looks), early=early)


def estimation_chunk(settings: AuditSettings, executor) -> int:
    """Largest request group (runs per input) of the estimation phase. With a sample budget it is the fixed
    :data:`ESTIMATION_CHUNK` (the result must not depend on where it ran); with a time budget it scales with
    the workers (the result is not reproducible anyway, and the phase re-plans between groups)."""
    if settings.max_samples is not None:
        return ESTIMATION_CHUNK
    return TIMED_CHUNK_PER_WORKER * max(1, int(getattr(executor, "workers", 1)))
