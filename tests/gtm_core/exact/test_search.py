"""Worst-case search (gtm_core/exact/search.py): stays within epsilon on correct plans, finds
violations (with witness streams) on plans with deliberately wrong noise scales."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.exact import check_neighbouring
from gtm_core.exact.search import (StartEvaluation, exact_loss, perturbed_plan, random_start, structured_starts,
                                   worst_case_search)


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def _assert_witness_is_neighbouring(plan, r):
    eps = [plan.step(t).eps_t for t in range(1, len(r.p) + 1)]
    check_neighbouring(list(r.p), list(r.p_prime), eps)


@pytest.mark.slow
def test_correct_plan_stays_within_epsilon_and_is_nearly_tight(plan):
    r = worst_case_search(plan, horizon=3, seconds=20, seed=3)
    _assert_witness_is_neighbouring(plan, r)
    assert not r.exceeds_epsilon and not r.exceeds_claim
    assert r.loss <= plan.epsilon
    # the halting bound 1/tau1 + 2/tau2 = epsilon is approached (Lemma 17 is tight)
    assert r.loss > 0.99 * plan.epsilon


def test_tau2_four_times_too_small_is_caught(plan):
    broken = perturbed_plan(plan, tau2_factor=0.25)
    r = worst_case_search(broken, horizon=2, seconds=3, seed=4)
    _assert_witness_is_neighbouring(plan, r)
    assert r.exceeds_epsilon
    assert r.transcript == "halt"
    # the exact loss approaches the broken plan's own Lemma 17 bound 1/tau1 + 8/tau2
    assert r.loss <= 1 / plan.tau1 + 8 / plan.step(1).tau2
    assert r.loss > plan.epsilon + 1.0
    assert "p  =" in r.describe()


@pytest.mark.slow
def test_eta1_three_times_too_concentrated_is_caught(plan):
    broken = perturbed_plan(plan, tau1_factor=1 / 3)
    r = worst_case_search(broken, horizon=3, seconds=20, seed=5)
    _assert_witness_is_neighbouring(plan, r)
    assert r.exceeds_epsilon
    assert r.loss <= 3 / plan.tau1 + 2 / plan.step(1).tau2


def test_exact_loss_at_the_tight_construction(plan):
    """Fast companion of the searches: at the Lemma 17 tight construction the exact loss is
    just below epsilon for the correct plan and above it when eta_1 is 3x too concentrated."""
    e = math.exp(plan.step(1).eps_t)
    p = [0.5244, 1e-6]
    q = [0.5244 / e * (1 + 1e-12), 1e-6 * e * (1 - 1e-12)]
    loss, kind, t, _ = exact_loss(plan, p, q, dps=12, objective="epsilon")
    assert kind == "halt" and t == 2 and 0.999 * plan.epsilon < loss <= plan.epsilon
    broken = perturbed_plan(plan, tau1_factor=1 / 3)
    loss, kind, t, _ = exact_loss(broken, p, q, dps=12, objective="epsilon")
    assert kind == "halt" and loss > plan.epsilon + 0.5


def test_search_rejects_bad_arguments(plan):
    with pytest.raises(InvalidParameter, match="horizon"):
        worst_case_search(plan, horizon=0, seconds=1)
    with pytest.raises(InvalidParameter, match="seconds"):
        worst_case_search(plan, horizon=1, seconds=0)
    with pytest.raises(InvalidParameter, match="tau2_factor"):
        perturbed_plan(plan, tau2_factor=-1)
    with pytest.raises(InvalidParameter, match="objective"):
        worst_case_search(plan, horizon=1, seconds=1, objective="nope")


def test_perturbed_plan_keeps_the_claim(plan):
    b = perturbed_plan(plan, tau1_factor=0.5, tau2_factor=0.25)
    assert b.tau1 == plan.tau1 * 0.5 and b.step(3).tau2 == plan.step(3).tau2 * 0.25
    assert b.claimed_loss(2, True) == plan.claimed_loss(2, True)
    assert b.epsilon == plan.epsilon and math.isclose(b.mu1, plan.mu1)


# -- the starts are mappable: same result whatever evaluates them -----------------------

def test_search_result_does_not_depend_on_the_mapper_or_the_chunk_size(plan):
    """A fake mapper that evaluates each chunk in reverse order (results handed back in order), and
    odd chunk sizes, give the default in-order search's result exactly; it saw every start once."""
    ref = worst_case_search(plan, horizon=2, seconds=120, seed=7, max_attempts=40)
    seen = []

    def reversed_map(fn, items):
        items = list(items)
        seen.extend(items)
        return [fn(x) for x in reversed(items)][::-1]

    got = worst_case_search(plan, horizon=2, seconds=120, seed=7, max_attempts=40, map_starts=reversed_map, chunk=3)
    same = ("p", "p_prime", "transcript", "t", "loss", "loss_error", "claimed", "evaluations", "attempts", "complete")
    assert {k: getattr(got, k) for k in same} == {k: getattr(ref, k) for k in same}
    n_structured = len(structured_starts(plan, 2))
    # 40 attempts: 16 structured (40 %), then random starts up to 22 (55 %), the rest refines the best
    assert seen == [("structured", i) for i in range(16)] + [("random", i) for i in range(22 - 16)]
    assert n_structured >= 16


def test_a_start_is_a_pure_function_of_seed_and_index(plan):
    import pickle

    u, v = random_start(3, 11, 4)
    u2, v2 = random_start(3, 11, 4)
    assert np.array_equal(u, u2) and np.array_equal(v, v2) and 1 <= len(u) <= 3 and np.all(np.abs(v) >= 0.5)
    assert not np.array_equal(random_start(3, 11, 5)[0][:1], u[:1])
    task = StartEvaluation(plan, 2, 11, 10, "epsilon")
    again = pickle.loads(pickle.dumps(task))  # what a Dask worker receives
    a, b = task(("random", 3)), again(("random", 3))
    assert a.score == b.score and np.array_equal(a.u, b.u) and a.cpu_seconds >= 0


def test_search_rejects_a_bad_seed_or_chunk(plan):
    with pytest.raises(InvalidParameter, match="seed"):
        worst_case_search(plan, horizon=1, seconds=1, seed=-1)
    with pytest.raises(InvalidParameter, match="chunk"):
        worst_case_search(plan, horizon=1, seconds=1, chunk=0)


@pytest.mark.slow
def test_search_on_two_dask_worker_processes_gives_the_in_process_result(plan):
    """The starts mapped on a local Dask cluster of 2 worker processes: the same result as in-process."""
    distributed = pytest.importorskip("distributed")
    ref = worst_case_search(plan, horizon=3, seconds=600, seed=5, max_attempts=120)
    # the scheduler's HTTP server on a free port (its default 8787 may be taken: a warning, an error here)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        def dask_map(fn, items):
            return client.gather(client.map(fn, list(items), pure=False))

        got = worst_case_search(plan, horizon=3, seconds=600, seed=5, max_attempts=120, map_starts=dask_map, chunk=64)
    same = ("p", "p_prime", "transcript", "t", "loss", "loss_error", "claimed", "evaluations", "attempts", "complete")
    assert {k: getattr(got, k) for k in same} == {k: getattr(ref, k) for k in same}
    assert got.seconds > 0.5 * ref.seconds  # the workers' CPU time is charged to the budget


def _capped(horizon: int = 10):
    return make_plan(GTMConfig.from_dict({
        "gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05,
                "evaluation_budget": "refuse"},
        "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": horizon}}))


def test_perturbed_plan_of_a_capped_plan_keeps_its_budget_and_delta():
    base = _capped()
    broken = perturbed_plan(base, tau2_factor=0.5)
    sp = base.step(1)
    assert broken.enforced_budget(sp) == base.enforced_budget(sp) == sp.evaluation_budget
    assert broken.privacy_delta() == base.privacy_delta() > 0 and not broken.pure
    assert broken.worst_claimed_loss() == base.worst_claimed_loss()


def test_delta_starts_lead_with_tiny_success_probabilities_at_both_ends(plan):
    from gtm_core.exact.search import DELTA_LAST, delta_starts

    starts = delta_starts(_capped(), 2)
    lead = starts[: 2 * len(DELTA_LAST)]
    assert all(len(u) == 1 for u, _ in lead)
    assert {float(v[0]) for _, v in lead} == {1.0, -1.0}
    rest = structured_starts(_capped(), 2)
    assert len(starts) == len(lead) + len(rest)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(starts[len(lead):], rest))
    with pytest.raises(InvalidParameter, match="delta"):
        worst_case_search(plan, horizon=1, seconds=1, objective="deltas")


@pytest.mark.slow  # four capped-law attempts and a final evaluation: about a minute
def test_delta_search_finds_the_truncations_delta_on_the_capped_plan():
    cap = _capped()
    r = worst_case_search(cap, horizon=1, seconds=600, seed=1, max_attempts=4, objective="delta", dps=8,
                          final_dps=12)
    assert r.objective == "delta" and r.complete and r.attempts == 4
    assert r.delta_eps == 1.0 and r.claimed == pytest.approx(cap.privacy_delta())
    assert 3e-4 < r.loss <= r.delta_upper < r.claimed  # a real delta, below the claim
    assert not r.exceeds_claim and "delta" in r.describe()
    _assert_witness_is_neighbouring(cap, r)
    # against the uncapped plan's claim (delta = 0) the same search flags the capped law
    uncapped_claim = type("Claim0", (), {})()
    for name in ("step", "tau1", "mu1", "horizon", "epsilon", "enforced_budget", "worst_claimed_loss"):
        setattr(uncapped_claim, name, getattr(cap, name))
    uncapped_claim.privacy_delta = lambda: 0.0
    r0 = worst_case_search(uncapped_claim, horizon=1, seconds=600, seed=1, max_attempts=2, objective="delta",
                           dps=8, final_dps=12)
    assert r0.exceeds_claim


def test_final_delta_escalates_its_panels_only_when_the_cheap_bound_does_not_decide(monkeypatch):
    """The final re-evaluation of a delta witness: with the score's panel cap first; again with the full
    cap only when that upper bound is above DELTA_DECIDED_FRACTION x the claim (laws faked: the rule only)."""
    from flint import arb

    from gtm_core.exact import search as S

    calls = []
    monkeypatch.setattr(S, "transcript_distribution", lambda plan, p, *, dps, max_panels: calls.append(max_panels))
    monkeypatch.setattr(S, "hockey_stick_delta", lambda a, b, e: (1e-5, 1e-9))
    monkeypatch.setattr(S, "hockey_stick_delta_ball", lambda a, b, e: arb(1e-5))

    def plan_claiming(delta):
        return type("P", (), {"privacy_delta": lambda self: delta, "worst_claimed_loss": lambda self: 1.0})()

    top = S.final_delta(plan_claiming(1e-3), [1e-7], [1.1e-7], dps=12)
    assert calls == [S.DELTA_SCORE_PANELS] * 2 and top["delta_upper"] >= 1e-5 and top["claimed"] == 1e-3
    calls.clear()
    top = S.final_delta(plan_claiming(1.5e-5), [1e-7], [1.1e-7], dps=12)  # 1e-5 > 0.5 x 1.5e-5: not decided
    assert calls == [S.DELTA_SCORE_PANELS] * 2 + [S.DELTA_FINAL_PANELS[-1]] * 2
