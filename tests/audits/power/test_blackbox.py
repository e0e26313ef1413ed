"""The black-box evaluator's audit through finite-output targets: the correct evaluator is not flagged,
a privacy-breaking variant is (power companion); the full power suite and the >= 100-audit calibration
are the slow tests (and benchmarks/bench_blackbox_power.py). Confidence 0.999 in the default tests
(false alarm <= 1e-3 per seeded test)."""

import statistics
from collections import Counter

import numpy as np
import pytest

from audits.power.blackbox import (VARIANTS, audit_evaluator, candidate_pairs, crossing_sizes, evaluator_target,
                             variant_evaluator)
from audits.statistics import cp_interval
from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig
from gtm_core.blackbox.exact import search_loss
from gtm_core.errors import InvalidParameter


def median_grid(T):
    return min(4, max(0, round(statistics.median(T)))) if T else 0


@pytest.fixture(scope="module")
def base():
    return BlackBoxEvaluator(EvaluatorConfig(2.0, 0.1, tuple([x] for x in range(5))), median_grid,
                             depth_method="monotone")


def test_target_protocol_shape(base):
    t = evaluator_target(base)
    c = t.sample({"dataset": [1] * 26}, 1000, 0)
    assert sum(c.values()) == 1000 and set(c) <= set(base.codes)
    with pytest.raises(InvalidParameter):
        t.sample([1, 2], 10, 0)


def test_candidate_pairs_are_neighbours(base):
    pairs = candidate_pairs(range(5), crossing_sizes(base.params), np.random.default_rng(0))
    assert len(pairs) > 50
    for a, b in pairs:
        diff = Counter(a["dataset"]) - Counter(b["dataset"])
        assert sum(diff.values()) == 1 and not (Counter(b["dataset"]) - Counter(a["dataset"]))


def test_correct_not_flagged_and_no_size_noise_flagged(base):
    ok = audit_evaluator(base, range(5), seconds=None, max_samples=600_000, seed=0, confidence=0.999)
    assert ok.verdict == "no-violation-found"
    bad = audit_evaluator(variant_evaluator(base, "no-size-noise"), range(5), seconds=None, max_samples=600_000,
                          seed=0, confidence=0.999)
    assert bad.violation and bad.epsilon_lower_bound > 2.2


@pytest.mark.slow
def test_power_suite_and_calibration(base):
    """Every variant whose exact loss exceeds 1.1 eps (P >= 1e-3) is flagged within 60 s; the variants that
    keep pure DP and the correct evaluator are not; 100 seeded audits of the correct evaluator give a
    false-alarm rate <= alpha = 0.05 (its 95% Clopper-Pearson interval is reported by the benchmark)."""
    data = [tuple([a] * n) for n in crossing_sizes(base.params) for a in range(5)]
    for name in VARIANTS:
        ev = variant_evaluator(base, name)
        exact = search_loss(ev, data, min_probability=1e-3).best
        res = audit_evaluator(ev, range(5), seconds=60, seed=0)
        if exact.loss_lower >= 1.1 * 2.0:
            assert res.violation, name
        if exact.certified_at_most(2.0):
            assert not res.violation, name
    alarms = sum(audit_evaluator(base, range(5), seconds=None, max_samples=300_000, seed=1000 + s).violation
                 for s in range(100))
    lo, hi = cp_interval(alarms, 100, 0.05)
    assert alarms / 100 <= 0.05 or lo <= 0.05


# -- Algorithm 2 (approximate DP) ---------------------------------------------------------------------

def _approx_base():
    from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
    from gtm_core.blackbox.approx.params import ApproxConstants
    from gtm_core.blackbox.functions import median_on

    grid = [0, 1, 2, 3]
    cfg = ApproxConfig(0.9, 0.1, 0.1, tuple([g] for g in grid), ApproxConstants(C=1e-5))
    return ApproxEvaluator(cfg, median_on(grid, empty=0))


def test_approx_audit_correct_within_claim_and_power_companion():
    """audit_finite_delta at (0.9, 0.1), confidence 0.95, seed 0, pairs searched by candidate_pairs:
    Algorithm 2 is not flagged (its exact delta on the selected pair is <= 0.1, tests/gtm_core/blackbox/approx/
    test_exact.py); the noiseless GAP-MAX variant is flagged (power companion, same seed and budget)."""
    from audits.power.blackbox import approx_variant_evaluator, audit_approx_evaluator

    base = _approx_base()
    ok = audit_approx_evaluator(base, [0, 1, 2, 3], seed=0)
    assert ok.verdict != "violation" and ok.delta_lower_bound <= 0.1
    bad = audit_approx_evaluator(approx_variant_evaluator(base, "gap-max-no-noise"), [0, 1, 2, 3], seed=0)
    assert bad.verdict == "violation" and bad.delta_lower_bound > 0.1


def test_approx_audit_d3_correct_within_claim_and_power_companion():
    """d = 3 (|Y| = 5, |Y~| = 9, f = center-3d, C = 1e-8): audit_finite_delta at (0.9, 0.1), confidence
    0.95, seed 0, pairs searched by candidate_pairs over the records {(1,0,0), (1,1,1)} at sizes 8..11:
    Algorithm 2 is not flagged (exact delta <= 0.0026 on every pair of sizes 8..9, tests/gtm_core/blackbox/
    approx/test_exact.py); the noiseless GAP-MAX variant is flagged (power companion, same seed and budget)."""
    from audits.power.blackbox import approx_variant_evaluator, audit_approx_evaluator
    from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
    from gtm_core.blackbox.approx.params import ApproxConstants
    from gtm_core.blackbox.functions import center_3d_on

    Y = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)]
    base = ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(Y), ApproxConstants(C=1e-8)), center_3d_on(Y))
    uni, sizes = [Y[1], Y[4]], range(8, 12)
    ok = audit_approx_evaluator(base, uni, seed=0, sizes=sizes)
    assert ok.verdict != "violation" and ok.delta_lower_bound <= 0.1
    bad = audit_approx_evaluator(approx_variant_evaluator(base, "gap-max-no-noise"), uni, seed=0, sizes=sizes)
    assert bad.verdict == "violation" and bad.delta_lower_bound > 0.1


def test_approx_audit_d2_correct_within_claim_and_power_companion():
    """d = 2 (Y = unit square, |Y~| = 5, f = Tukey center, C = 1e-7): audit_finite_delta at (0.9, 0.1),
    confidence 0.95, seed 0, pairs searched by candidate_pairs over the records {(1,0), (1,1)} at sizes 6..10:
    Algorithm 2 is not flagged (exact delta <= 0.047 on every pair of those sizes, tests/gtm_core/blackbox/
    approx/test_exact.py); the noiseless GAP-MAX variant is flagged (power companion, same seed and budget)."""
    from audits.power.blackbox import approx_variant_evaluator, audit_approx_evaluator
    from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
    from gtm_core.blackbox.approx.params import ApproxConstants
    from gtm_core.blackbox.functions import tukey_center_on

    Y = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
    base = ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(Y), ApproxConstants(C=1e-7)), tukey_center_on(Y))
    uni, sizes = [Y[1], Y[3]], range(6, 11)
    ok = audit_approx_evaluator(base, uni, seed=0, sizes=sizes)
    assert ok.verdict != "violation" and ok.delta_lower_bound <= 0.1
    bad = audit_approx_evaluator(approx_variant_evaluator(base, "gap-max-no-noise"), uni, seed=0, sizes=sizes)
    assert bad.verdict == "violation" and bad.delta_lower_bound > 0.1


def test_approx_audit_instances_are_the_witness_instances():
    """benchmarks/bench_blackbox_approx_audit.py audits exactly the instances of the tests above and of
    tests/gtm_core/blackbox/approx/test_exact.py: (|Y~|, H, K) = (4, 2, .), (5, 3, 4), (9, 3, 5)."""
    from audits.power.blackbox import approx_audit_instances

    inst = approx_audit_instances()
    assert sorted(inst) == [1, 2, 3]
    assert inst[1][0].params.M == 4 and inst[1][0].config.constants.C == 1e-5
    assert (inst[2][0].params.M, inst[2][0].params.H, inst[2][0].params.K) == (5, 3, 4)
    assert (inst[3][0].params.M, inst[3][0].params.H, inst[3][0].params.K) == (9, 3, 5)
    assert list(inst[2][2]) == list(range(6, 11)) and list(inst[3][2]) == list(range(8, 12))
