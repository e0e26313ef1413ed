"""Liu-Talwar private selection on the testing task: the calibration (Type II at p*, p_bar exact), the
law against simulation, and OpenDP 0.16's stopping model.

Statistics: simulations are seeded (numpy); tolerances are 5 standard errors (a false failure below
1e-6); the G-test of the sampler against the exact law is at alpha = 0.01 with a power companion.
"""

import math

import numpy as np
import pytest
from scipy import stats

from gtm_core.baselines.liu_talwar_selection import (
    LiuTalwarSelection,
    OpenDPSelection,
    opendp_effective_stop_probability,
    rejection_threshold,
    score_tail,
    selection_halt_probability,
)
from gtm_core.errors import InvalidParameter


def test_calibration_meets_type_ii_and_p_bar_is_exact():
    for p_star in (0.1, 0.5, 0.9):
        s = LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=p_star, beta=0.05)
        assert s.k == 5
        assert s.halt_probability(p_star) >= 0.95 - 1e-12
        p_bar = s.claimed_p_bar(1)
        assert s.halt_probability(p_bar) == pytest.approx(0.05, rel=1e-9)
        assert all(s._p_bar_for(t) <= p_bar for t in range(1, s.k + 1))  # tau maximises p_bar


def test_law_matches_simulation():
    s = LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=4, gamma=0.3)
    n = 200_000
    r = s.simulate(np.full(3, 0.4), n, np.random.default_rng(0))
    q = float(score_tail(0.4, 5, 4))
    ph = selection_halt_probability(q, 0.3)
    assert abs(r.halt.mean() - ph) < 5 * math.sqrt(ph * (1 - ph) / n)
    assert r.evaluations.mean() == pytest.approx(5 / (q + 0.3 * (1 - q)), rel=0.02)


def test_sampler_output_law_g_test_with_power_companion():
    """Goodness of fit of sample_outputs to output_law: alpha = 0.01, seed 3, n = 20000; the companion
    (the law of a selection stopping with 0.25 instead of 0.3) is rejected at the same level."""
    s = LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=4, gamma=0.3)
    out = s.sample_outputs(0.5, 20_000, np.random.default_rng(3))
    keys = [None, 4, 5]
    observed = np.array([sum(o == k if k is not None else o is None for o in out) for k in keys], dtype=float)

    def p_value(law):
        expected = np.array([law[k] for k in keys]) * observed.sum()
        g = 2 * float(np.sum(observed * np.log(observed / expected)))
        return stats.chi2.sf(g, len(keys) - 1)

    assert p_value(s.output_law(0.5)) >= 0.01
    wrong = LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=4, gamma=0.3, stop_rate=0.25)
    assert p_value(wrong.output_law(0.5)) < 0.01


def test_opendp_stopping_model():
    """OpenDP 0.16 stops with 1 - e^(1 / ln(1 - g)) (its sampler's law at the rate it computes)."""
    assert opendp_effective_stop_probability(0.25) == pytest.approx(1 - math.exp(1 / math.log(0.75)), rel=1e-12)
    for g in (0.05, 0.3, 0.7):  # an involution: passing the effective value back stops with g
        assert opendp_effective_stop_probability(opendp_effective_stop_probability(g)) == pytest.approx(g, rel=1e-9)
    o = OpenDPSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05)
    assert o.halt_probability(0.5) < 0.95 <= LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5,
                                                               beta=0.05).halt_probability(0.5)


def test_bad_parameters_are_typed_errors():
    with pytest.raises(InvalidParameter, match="eps_1"):
        LiuTalwarSelection(epsilon=1.0, eps_1=0.6, p_star=0.5, beta=0.05)
    with pytest.raises(InvalidParameter, match="tau"):
        LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, tau=6)
    with pytest.raises(InvalidParameter, match="gamma"):
        LiuTalwarSelection(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05, gamma=0.0)
    with pytest.raises(InvalidParameter, match="stop_probability"):
        opendp_effective_stop_probability(1.0)
    assert rejection_threshold(5, 5, 1.0, 0.05) == pytest.approx(0.05 ** (1 / 5), rel=1e-12)
