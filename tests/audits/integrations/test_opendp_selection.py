"""OpenDP's make_select_private_candidate against our Liu-Talwar selection on the same scorer (G-tests).

Statistics: alpha = 0.01, our side seeded (seeds stated per test), OpenDP's stopping coins unseeded
(its CSPRNG), n = 1500 runs per side. The equality test has a power companion (a perturbed baseline
rejected at the same level and size)."""

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_selection import compare_output_laws, compensated_stop_probability, g_test
from gtm_core.baselines.liu_talwar_selection import LiuTalwarSelection
from gtm_core.errors import InvalidParameter

dp.enable_features("contrib", "honest-but-curious")
DESIGN = dict(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=4, gamma=0.3)
N, ALPHA = 1500, 0.01


def test_same_law_once_openDP_stops_with_gamma_and_a_perturbed_baseline_is_rejected():
    ours = LiuTalwarSelection(**DESIGN)
    stop = compensated_stop_probability(0.3)
    same = compare_output_laws(ours, 0.5, N, seed=2, alpha=ALPHA, stop_probability=stop)
    assert not same.rejected, same.to_dict()
    perturbed = LiuTalwarSelection(**DESIGN, stop_rate=0.2)  # our side stops with 0.2, OpenDP's with 0.3
    assert compare_output_laws(perturbed, 0.5, N, seed=3, alpha=ALPHA, stop_probability=stop).rejected


def test_openDP_as_documented_does_not_stop_with_its_stop_probability():
    """OpenDP 0.16 called with stop_probability = 0.3 stops with 0.94 (seed 1)."""
    result = compare_output_laws(LiuTalwarSelection(**DESIGN), 0.5, N, seed=1, alpha=ALPHA)
    assert result.rejected and result.counts_b[None] > result.counts_a[None]


def test_g_test_statistic():
    assert g_test([1, 2, None] * 50, [None, 2, 1] * 50, 0.01).p_value == pytest.approx(1.0)
    assert g_test([1] * 100, [2] * 100, 0.01).rejected
    with pytest.raises(InvalidParameter, match="alpha"):
        g_test([1], [1], 1.5)
