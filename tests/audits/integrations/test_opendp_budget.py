"""The wall budget of an OpenDP audit (audits/integrations/opendp_budget.py): ``seconds=S`` ends within
``S * 1.02 + 1`` wall seconds, on a fast measurement, on an approximate-DP claim, and on a measurement that
slows down tenfold mid-audit (a load spike); and the confirmation's pooled counts.

These are budget tests, not speed tests: each asserts an upper bound on the wall time the audit takes,
which the deadlines enforce whatever the machine's load (a draw in flight is the only overrun: a few ms).
Statistics: the verdict of the load-spike audit is a no-violation claim at alpha = 0.001 (seed 3).
"""

import time

import numpy as np
import pytest
import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_audit import MeasurementTarget, audit_measurement
from audits.integrations.opendp_budget import Confirmation, plan_deadlines, pooled_result, wall_bound
from audits.integrations.opendp_catalogue import count_by_laplace_threshold
from gtm_core.errors import BudgetStop

dp.enable_features("contrib", "honest-but-curious")

BUDGET = 3.0


def _timed(measurement, **kw):
    t0 = time.monotonic()
    result = audit_measurement(measurement, seconds=BUDGET, **kw)
    return result, time.monotonic() - t0


def test_pure_audit_ends_within_its_budget():
    result, wall = _timed(dp.m.make_randomized_response_bool(0.75), seed=1, confidence=0.999)
    assert wall <= wall_bound(BUDGET), wall
    d = result.to_dict()
    assert d["budget"] == {"seconds": BUDGET, "wall_bound": wall_bound(BUDGET)}
    conf = d["confirmation"]
    assert conf["chunks"] >= 1 and conf["runs_a"] > 0  # the confirmation used the time the engine left
    assert d["witness"]["runs_mean"] >= conf["runs_mean"]


def test_approximate_claim_ends_within_its_budget():
    _, wall = _timed(count_by_laplace_threshold(), seed=1)
    assert wall <= wall_bound(BUDGET), wall


def test_load_spike_mid_audit_still_ends_within_its_budget():
    """The measurement's draws become 10x slower after 2000 calls (a load spike after the pilot timed
    it): the deadlines still stop every phase in time."""
    rr = dp.m.make_randomized_response_bool(0.75)
    calls = [0]

    def slowing(x):
        calls[0] += 1
        if calls[0] > 2000:
            time.sleep(0.002)
        return rr(x)

    m = dp.m.make_user_measurement(dp.atom_domain(T=bool), dp.discrete_distance(), dp.max_divergence(),
                                   function=slowing, privacy_map=rr.map, TO=bool)
    result, wall = _timed(m, seed=3, confidence=0.999)
    assert calls[0] > 2000 and wall <= wall_bound(BUDGET), (calls[0], wall)
    assert result.verdict == "no-violation-found"


def test_target_refuses_a_request_past_its_deadline():
    target = MeasurementTarget(dp.m.make_randomized_response_bool(0.75))
    target.outputs(True, 50)
    target.set_deadline(time.monotonic() + 0.05)
    try:
        target.outputs(True, 10**9)  # predicted to take minutes: refused before any draw
    except BudgetStop:
        pass
    else:
        raise AssertionError("a request past the deadline was not refused")
    assert target.draws == 50
    target.set_deadline(time.monotonic() - 1)
    try:
        target.outputs(True, 1)
    except BudgetStop:
        pass
    else:
        raise AssertionError("a draw after the deadline was not refused")


def test_deadlines_leave_the_reserve():
    d = plan_deadlines(100.0, 60.0)
    assert d.pilot == pytest.approx(106.0) and 100.0 + 60.0 - d.end == pytest.approx(0.01 * 60 + 0.1)
    assert d.engine(110.0) == pytest.approx(110.0 + 0.5 * (d.end - 110.0))


def test_pooled_result_adds_the_confirmation_counts():
    """The bound is the conditional test on the estimation's plus the confirmation's counts."""
    rr = dp.m.make_randomized_response_bool(0.75)
    result = audit_measurement(rr, seconds=2, seed=2, max_samples=4000, confidence=0.999)  # no confirmation
    fa = result.pure.result
    assert result.confirmation is None
    w = fa.witness
    conf = Confirmation(runs_mean=10_000, runs_a=10_000, runs_b=10_000, hits_a=7_500, hits_b=2_500, chunks=1,
                        seconds=1.0, engine_bound=fa.epsilon_lower_bound, stopped="test")
    pooled = pooled_result(fa, conf)
    assert pooled.witness.count_a == w.count_a + 7_500 and pooled.witness.n_b == w.n_b + 10_000
    assert pooled.witness.runs_mean == w.runs_mean + 10_000
    assert pooled.samples == fa.samples + 20_000
    share = (w.count_a + 7_500) / (w.count_a + w.count_b + 10_000)
    assert pooled.epsilon_lower_bound < np.log(share / (1 - share))  # a lower confidence bound


class _SlowLookingTarget:
    """A target that reports 0.05 s per draw (as a GTM run might) but answers at once."""

    def __init__(self):
        self.deadline = None

    def set_deadline(self, deadline):
        self.deadline = deadline

    def seconds_per_draw(self):
        return 0.05


class _InstantProblem:
    class codebook:
        n_codes = 2

    def sample_codes(self, key, n, seed):
        return np.zeros(int(n), dtype=np.int64)  # every run in the witness event (code 0)


def test_confirmation_of_a_slow_measurement_still_draws_small_chunks():
    """With 3 s left and 0.1 s per pair of runs, a quarter of the time left affords fewer than MIN_CHUNK_RUNS
    runs: the confirmation used to stop at once ("the time left fits no chunk"), leaving the time unused; it
    now draws chunks of MIN_CHUNK_RUNS runs while they fit (chunk sizes from timing only)."""
    from dataclasses import replace

    from audits.integrations.opendp_budget import MIN_CHUNK_RUNS, chunk_seconds, confirm_witness

    assert chunk_seconds(3.0, 0.1) == pytest.approx(MIN_CHUNK_RUNS * 0.1)
    assert chunk_seconds(1.0, 0.1) == pytest.approx(1.0)  # never more than the time left
    assert chunk_seconds(100.0, 1e-4) == pytest.approx(5.0)  # fast measurements: CHUNK_SECONDS as before
    rr = dp.m.make_randomized_response_bool(0.75)
    result = audit_measurement(rr, seconds=2, seed=2, max_samples=4000, confidence=0.999).pure.result
    result = replace(result, witness=replace(result.witness, event_codes=(0,)))
    _, conf = confirm_witness(_InstantProblem(), result, _SlowLookingTarget(), deadline=time.monotonic() + 3.0, seed=1)
    assert conf.chunks >= 1 and conf.runs_mean >= MIN_CHUNK_RUNS and conf.hits_a == conf.runs_a
