"""The wall budget of an OpenDP audit, and its confirmation phase (docs/opendp.md, "Budget").

The rule (:func:`wall_bound`): ``audit_measurement(..., seconds=S)`` returns within
``S * (1 + SLACK_SHARE) + SLACK_SECONDS`` wall seconds at any load. How it holds:

* every phase has a deadline (:func:`plan_deadlines`): the pilot stops by ``PILOT_SHARE * S``; the
  engine (:func:`audits.audit_engine.run_audit`: selection, validation, estimation) by
  ``ENGINE_SHARE`` of what is left; the confirmation by ``S - reserve``
  (``reserve = RESERVE_SHARE * S + RESERVE_SECONDS``, kept for the verdict and the report);
* the measurement target refuses a request whose predicted time (its draws times the measured
  seconds per draw) would pass the phase's deadline, and stops a request in flight at it
  (:class:`gtm_core.errors.BudgetStop`; the engine then discards the chunk whole), so a phase ends at
  most one draw after its deadline;
* the confirmation (:func:`confirm_witness`) draws in chunks sized from the measured throughput (a
  quarter of the time left, at most :data:`CHUNK_SECONDS`, but at least :data:`MIN_CHUNK_RUNS` runs while
  they fit: :func:`chunk_seconds`) and stops between chunks.

Why a confirmation phase: the engine's selection may use up to 60% of its budget while no pair is
projected above the claim (:mod:`audits.audit_selection`: more search is worth more than a tighter
bound on a pair that cannot refute the claim) - on a mechanism that attains its claim it always does,
so its estimation phase gets a third of the engine's budget. The confirmation spends the rest of the
audit's time on fresh samples of the engine's one pre-registered witness (pair, event, direction).

Validity: the witness is fixed before the engine's estimation phase; each confirmation chunk runs
each input a Poisson(m) number of times, m fixed from timing alone before the chunk is drawn (from
the audit's own seeded generator, independent of the outputs). The estimation's and the
confirmation's event counts are then independent Poisson variables with equal means per input, so
their sums are Poisson with the summed mean, and the conditional test of
:func:`audits.statistics.conditional_loss_lower_bound` on the pooled counts is exact - one test of
one hypothesis, at the stated confidence (the engine's own bound on its estimation samples alone is
recorded, not tested). The stopping rule depends on the clock only; a chunk the deadline stops in
flight is discarded whole. A chunk is refused on its total n_A + n_B only: given the total, each run
is A's or B's with probability 1/2 whatever the total's law, so (hits of A, hits of B) given their sum
stay binomial with the ratio tested - the refusal does not bias the test.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from gtm_core.errors import BudgetStop

from ..audit_results import NO_VIOLATION, VIOLATION
from ..finite import canonical
from ..statistics import conditional_loss_lower_bound, garwood_interval

SLACK_SHARE = 0.02  # the budget holds to S * (1 + SLACK_SHARE) + SLACK_SECONDS
SLACK_SECONDS = 1.0
PILOT_SHARE = 0.1  # the pilot (output coding) ends by this share of the budget
ENGINE_SHARE = 0.5  # the engine's share of the time left after the pilot (the rest: the confirmation)
RESERVE_SHARE = 0.01  # kept after the confirmation for the verdict and the report
RESERVE_SECONDS = 0.1
CHUNK_SECONDS = 5.0  # a confirmation chunk takes at most this long (the throughput is re-measured after it)
MIN_CHUNK_RUNS = 20  # runs per input of the smallest confirmation chunk worth drawing


def wall_bound(seconds: float) -> float:
    """The wall time an audit with budget ``seconds`` ends within (module docstring)."""
    return seconds * (1 + SLACK_SHARE) + SLACK_SECONDS


@dataclass(frozen=True)
class Deadlines:
    """Absolute deadlines (``time.monotonic()`` seconds) of an audit's phases."""

    start: float
    pilot: float
    end: float  # the confirmation's (and the audit's sampling) deadline: S - reserve

    def engine(self, now: float) -> float:
        """The engine's deadline, once the pilot ended at ``now``."""
        return now + ENGINE_SHARE * max(self.end - now, 0.0)


def plan_deadlines(start: float, seconds: float) -> Deadlines:
    """The phases' deadlines of an audit started at ``start`` with a budget of ``seconds``."""
    reserve = min(RESERVE_SHARE * seconds + RESERVE_SECONDS, 0.1 * seconds)
    return Deadlines(start=start, pilot=start + PILOT_SHARE * seconds, end=start + seconds - reserve)


@dataclass(frozen=True)
class Confirmation:
    """What the confirmation phase drew: its chunks' summed Poisson mean per input, the runs and witness
    hits per input, the engine's estimation-only bound (recorded, not tested), and where it stopped."""

    runs_mean: int
    runs_a: int
    runs_b: int
    hits_a: int
    hits_b: int
    chunks: int
    seconds: float
    engine_bound: float
    stopped: str

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["engine_bound_not_tested"] = d.pop("engine_bound")
        return d


def chunk_seconds(left: float, per_pair: float) -> float:
    """Seconds of the next confirmation chunk when ``left`` seconds remain and a run of both inputs takes
    ``per_pair``: a quarter of the time left, at most :data:`CHUNK_SECONDS` - but never fewer than
    :data:`MIN_CHUNK_RUNS` runs while they fit in the time left, so a slow measurement (a GTM run, tens to
    hundreds of milliseconds) still spends its confirmation time in small chunks. Timing only: the chunk
    sizes never depend on the outputs."""
    return min(left, max(min(0.25 * left, CHUNK_SECONDS), MIN_CHUNK_RUNS * per_pair))


def confirm_witness(problem, result, target, *, deadline: float, seed: int):
    """Fresh Poisson chunks of ``result``'s witness until ``deadline``, pooled with the engine's
    estimation counts (module docstring): (the result with the pooled bound and verdict, the
    :class:`Confirmation`). ``problem`` is the engine's finite problem, ``target`` its measurement target
    (``seconds_per_draw``, ``set_deadline``)."""
    w = result.witness
    t0 = time.monotonic()
    if w is None:
        return result, Confirmation(0, 0, 0, 0, 0, 0, 0.0, result.epsilon_lower_bound, "no witness")
    ka, kb = canonical(w.input_a), canonical(w.input_b)
    member = np.zeros(problem.codebook.n_codes, dtype=bool)
    member[list(w.event_codes)] = True
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xC0F1]))
    target.set_deadline(deadline)
    runs_mean = runs_a = runs_b = hits_a = hits_b = chunks = 0
    stopped = "the time left fits no chunk"
    while True:
        left = deadline - time.monotonic()
        per_pair = 2 * max(target.seconds_per_draw(), 1e-7)
        m = int(chunk_seconds(left, per_pair) / per_pair)
        if m < MIN_CHUNK_RUNS:
            break
        na, nb = int(rng.poisson(m)), int(rng.poisson(m))
        seeds = rng.integers(0, 2**32, size=2)
        if time.monotonic() + (na + nb) * per_pair / 2 > deadline:  # on n_A + n_B only (module docstring)
            break
        try:
            ca = problem.sample_codes(ka, na, int(seeds[0]))
            cb = problem.sample_codes(kb, nb, int(seeds[1]))
        except BudgetStop:
            stopped = "a chunk in flight discarded at the deadline"
            break
        hits_a += int(member[ca].sum())
        hits_b += int(member[cb].sum())
        runs_mean, runs_a, runs_b, chunks = runs_mean + m, runs_a + na, runs_b + nb, chunks + 1
    conf = Confirmation(runs_mean, runs_a, runs_b, hits_a, hits_b, chunks, time.monotonic() - t0,
                        result.epsilon_lower_bound, stopped)
    return pooled_result(result, conf), conf


def pooled_result(result, conf: Confirmation):
    """``result`` with its witness counts, bound and verdict recomputed on the estimation's plus the
    confirmation's counts (the conditional test, as :func:`audits.audit_verdict.conclude` computes it)."""
    w = result.witness
    alpha = 1 - result.confidence
    ka, kb = w.count_a + conf.hits_a, w.count_b + conf.hits_b
    na, nb, mean = w.n_a + conf.runs_a, w.n_b + conf.runs_b, w.runs_mean + conf.runs_mean
    bound = float(conditional_loss_lower_bound(ka, kb, alpha))
    lower_a, _ = garwood_interval(ka, alpha / 2)
    _, upper_b = garwood_interval(kb, alpha / 2)
    witness = dataclasses.replace(
        w, count_a=ka, n_a=na, count_b=kb, n_b=nb, probability_a=ka / max(na, 1),
        probability_a_lower=min(float(lower_a) / max(mean, 1), 1.0), probability_b=kb / max(nb, 1),
        probability_b_upper=min(float(upper_b) / max(mean, 1), 1.0), runs_mean=int(mean), loss_bound=bound)
    reported = max(bound, 0.0) if np.isfinite(bound) else 0.0
    search = result.search
    if search is not None:
        reach = float(conditional_loss_lower_bound(ka + kb, 0, alpha))
        meaningful = bool(reach > result.epsilon_claimed)
        search = dataclasses.replace(search, budget=dataclasses.replace(
            search.budget, samples_used=search.budget.samples_used + conf.runs_a + conf.runs_b,
            final_runs_per_input=int(mean), best_reachable_bound=reach if np.isfinite(reach) else None,
            meaningful=meaningful, warning=None if meaningful else (
                f"budget too small for a meaningful bound: with {int(mean)} runs per input (estimation and "
                f"confirmation) the witness event got {ka + kb} hits, so the best bound reachable was "
                f"{reach if np.isfinite(reach) else float('-inf'):.3f} <= claimed epsilon {result.epsilon_claimed:g}")))
    return dataclasses.replace(
        result, witness=witness, search=search, epsilon_lower_bound=float(reported),
        samples=result.samples + conf.runs_a + conf.runs_b,
        verdict=VIOLATION if bound > result.epsilon_claimed else NO_VIOLATION,
        method=result.method + " Confirmation (audits/integrations/opendp_budget.py): the witness's estimation counts "
        "pooled with fresh Poisson chunks of the same pair until the deadline; the test is on the pooled counts.")
