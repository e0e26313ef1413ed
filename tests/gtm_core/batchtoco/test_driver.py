"""Algorithm 3 end to end on a bundled stream."""

import numpy as np
import pytest

from audits.power.batchtoco import SAMPLED_VARIANTS, variant
from gtm_core.batchtoco.driver import BatchToCO, run_stream
from gtm_core.batchtoco.implementation import ALGORITHM3
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import CoverageProblem, MaxCutProblem
from gtm_core.batchtoco.streams import bundled_stream
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration


def test_outputs_change_only_at_checkpoints_and_levels_increase():
    s = bundled_stream("florentine_families")
    recs = run_stream(COConfig(k=2), CoverageProblem(15, 2), s.edges, np.random.default_rng(0))
    assert [r.t for r in recs] == list(range(1, 21))
    for prev, r in zip(recs, recs[1:]):
        if not r.checkpoint or not r.selected:
            assert np.array_equal(np.asarray(r.solution), np.asarray(prev.solution))
    levels = [r.level for r in recs if r.checkpoint]
    assert levels == list(range(2, 2 + len(levels)))
    assert all(r.batch_calls <= r.call_bound for r in recs)
    assert all(r.eps_t > 0 for r in recs)


def test_seeded_runs_are_reproducible_and_maxcut_runs():
    s = bundled_stream("florentine_families")
    a = run_stream(COConfig(problem="maxcut"), MaxCutProblem(15), s.edges, np.random.default_rng(3))
    b = run_stream(COConfig(problem="maxcut"), MaxCutProblem(15), s.edges, np.random.default_rng(3))
    assert [int(r.solution) for r in a] == [int(r.solution) for r in b]


@pytest.mark.parametrize("name", SAMPLED_VARIANTS)
def test_injected_implementations_run(name):
    s = bundled_stream("florentine_families")
    recs = run_stream(COConfig(k=1), CoverageProblem(15, 1), s.edges[:8], np.random.default_rng(1),
                      implementation=variant(name))
    assert len(recs) == 8


def test_the_default_implementation_is_algorithm3_and_the_correct_variant_draws_the_same():
    s = bundled_stream("florentine_families")
    cfg, edges = COConfig(k=1), s.edges[:12]
    a = run_stream(cfg, CoverageProblem(15, 1), edges, np.random.default_rng(4))
    b = run_stream(cfg, CoverageProblem(15, 1), edges, np.random.default_rng(4), implementation=variant("correct"))
    c = run_stream(cfg, CoverageProblem(15, 1), edges, np.random.default_rng(4), implementation=ALGORITHM3)

    def seen(recs):
        return [(r.t, np.asarray(r.solution).tolist(), r.checkpoint, r.selected, r.level, r.eps_t, r.batch_calls)
                for r in recs]

    assert seen(a) == seen(b) == seen(c)


def test_bad_arguments():
    with pytest.raises(UnsupportedConfiguration, match="reused instance noise"):
        BatchToCO(COConfig(), CoverageProblem(5, 1), np.random.default_rng(0), implementation=variant("reused_gtm"))
    with pytest.raises(InvalidParameter, match="config must be a COConfig"):
        BatchToCO({}, CoverageProblem(5, 1), np.random.default_rng(0))


def test_the_evaluation_budget_is_reported_not_enforced(monkeypatch):
    """A refusing budget breaks GTM_l's pure epsilon-DP (docs/deployment.md, "The evaluation budget and
    the privacy claim"); BatchToCO runs Algorithm 1 as stated. With every budget set to 0 the earlier
    driver refused the first GTM step with N > 0 (EvaluationBudgetExceeded); now the run completes and
    the budget only shows up as the reported call bound."""
    import dataclasses

    from gtm_core.batchtoco.gtm_instance import InstancePlan

    real = InstancePlan.step
    monkeypatch.setattr(InstancePlan, "step", lambda self, j: dataclasses.replace(real(self, j), evaluation_budget=0))
    s = bundled_stream("florentine_families")
    recs = run_stream(COConfig(k=2), CoverageProblem(15, 2), s.edges, np.random.default_rng(0))
    assert [r.t for r in recs] == list(range(1, 21))
    assert any(r.batch_calls > r.call_bound for r in recs[1:])  # N_t > B_t happened and was not refused
