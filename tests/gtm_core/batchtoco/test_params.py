"""Section 7.3's formulas: float64 vs mpmath, the certified C_omega, the [co] validation, erratum E1."""

import math

import mpmath
import pytest
from flint import arb, ctx

from gtm_core.batchtoco import params as P
from gtm_core.errors import ConfigError, InvalidParameter
from gtm_core.formulas import step_failure_probability

C_OMEGA_GOLDEN = "0.29518242807572503059133439351496802216405042114099"


def test_omega_normaliser_enclosure_is_tight_and_contains_the_mpmath_value():
    ball = P.omega_normaliser_enclosure(40)
    old = ctx.prec
    try:
        ctx.prec = 200
        assert float(ball.rad()) < 1e-40
        mp = P.omega_normaliser(dps=45)
        assert ball.overlaps(arb(mpmath.nstr(mp, 45), 1e-43))
        assert ball.overlaps(arb(C_OMEGA_GOLDEN, 1e-49))
    finally:
        ctx.prec = old


def test_omega_weights_sum_below_one_and_tail_matches():
    s = math.fsum(P.omega_weight(k) for k in range(1, 20001))
    # the tail beyond K is ~ C_omega / ln(K): positive and below C_omega/ln(K) * 1.1
    assert 0 < 1 - s < P.omega_normaliser() / math.log(20001) * 1.1


@pytest.mark.parametrize("fn,args", [
    (P.omega_weight, (7,)),
    (P.threshold_level, (5, "0.3")),
    (P.privacy_scale, (1, 2)),
    (P.delta_scale, ("0.25",)),
    (P.noise_range_constant, (1, 2)),
    (P.co_rejection_threshold, ("0.45", 2, 1, 2)),
    (P.checkpoint_privacy, (3, "0.9", 1, 2)),
    (P.checkpoint_failure, (3, "0.05", "0.25")),
    (P.stopping_probability, (3, "0.03", "0.05", "0.25")),
    (P.step_privacy, (3, 17, "0.9", "0.05", 1, 2, "0.25")),
    (P.step_privacy_as_printed, (3, 17, "0.9", "0.05", 1, 2)),
    (P.test_slack, ("0.001", "0.03")),
    (P.checkpoint_quality_loss, (4, "0.001", "0.03", "0.05")),
])
def test_float_and_mpmath_agree(fn, args):
    f = fn(*[float(a) if isinstance(a, str) else a for a in args])
    m = fn(*args, dps=40)
    assert abs(f - float(m)) <= 1e-13 * abs(float(m))


def test_derived_constants_match_section_7_3():
    assert P.privacy_scale(1, 2) == pytest.approx(1 / 6, rel=1e-15)
    assert P.delta_scale(1 / 3) == pytest.approx(1 + 9 * math.e**3, rel=1e-15)
    assert P.noise_range_constant(1, 2) == pytest.approx(math.e**2, rel=1e-15)
    c = P.COConfig()
    assert c.p_bar == pytest.approx(0.45 / (2 * math.e**2), rel=1e-14)
    assert c.batch_failure == pytest.approx(0.1)
    assert P.threshold_select_iterations(0.01, 0.5) == math.ceil(max(100 * math.log(4), 1 + 100 / math.e))
    assert P.selection_draw_cap(2, 0.03, 0.05) == math.ceil(2 / 0.03 * math.log(1 / (P.omega_weight(2) * 0.05)))


def test_step_delta_is_the_minimum():
    pb = 0.03
    small = P.step_delta(2, 0.001, pb, 0.05, 1e-9, 1 / 3)
    assert small == pytest.approx(pb * P.omega_weight(2) ** 2 * 0.05 * 1e-9 / P.delta_scale(1 / 3))
    big = P.step_delta(2, 1e-6, pb, 0.05, 0.5, 1 / 3)
    assert big == pytest.approx(pb / 2 * 1e-6)


def test_planning_step_is_the_dyadic_block_end():
    assert [P.planning_step(j) for j in (1, 2, 3, 4, 7, 8, 1000)] == [1, 3, 3, 7, 7, 15, 1023]


def test_erratum_e1_printed_step_privacy_breaks_instance_budget():
    """Erratum E1: Algorithm 3's eps(l, t) (global beta) gives GTM_l an ex-post loss above Lemma 38's
    share (1 + C_H/C_1) eps(l); the proof-supported eps(l, j) meets it exactly."""
    c = P.COConfig()
    with mpmath.workdps(40):
        for level, t, j in ((5, 5, 1), (3, 3, 1), (8, 40, 2)):
            el = P.checkpoint_privacy(level, c.epsilon, c.c_1, c.c_h, dps=40)
            share = (1 + mpmath.mpf(c.c_h) / c.c_1) * el
            beta_j = step_failure_probability(j, P.checkpoint_failure(level, c.beta, c.c_beta, dps=40), dps=40)
            printed = P.step_privacy_as_printed(level, t, c.epsilon, c.beta, c.c_1, c.c_h, dps=40)
            assert el + c.c_h * printed * mpmath.log(4 / beta_j) > share
            fixed = P.step_privacy(level, j, c.epsilon, c.beta, c.c_1, c.c_h, c.c_beta, dps=40)
            assert abs(el + c.c_h * fixed * mpmath.log(4 / beta_j) - share) < mpmath.mpf(10) ** -35


@pytest.mark.parametrize("field,value,match", [
    ("epsilon", 1.0, "epsilon must be in \\(0, 1\\)"),
    ("epsilon", 0.0, "epsilon must be > 0"),
    ("p_star", 0.6, "p_star must be in \\(0, 1/2\\]"),
    ("kappa", 0.0, "kappa must be > 0"),
    ("kappa", -1.0, "kappa must be > 0"),
    ("gamma", 1.0, "gamma must be in \\(1, 2\\]"),
    ("beta", 0.4, "beta must be in \\(0, 1/e\\)"),
    ("c_beta", 0.5, "c_beta must be in \\(0, 1/3\\]"),
    ("delta", 1.0, "delta must be in \\[0, 1\\)"),
    ("problem", "tsp", "problem must be one of"),
    ("k", 0, "k must be a positive integer"),
    ("seed", -1, "seed must be a non-negative integer"),
])
def test_config_validation_names_field_and_value(field, value, match):
    with pytest.raises(InvalidParameter, match=match):
        P.COConfig(**{field: value})


def test_config_from_toml(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[co]\nepsilon = 0.5\nk = 2\n")
    assert P.COConfig.load(f) == P.COConfig(epsilon=0.5, k=2)
    f.write_text("[co]\nepsilon = 0.5\nbogus = 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        P.COConfig.load(f)
    f.write_text("[gtm]\nepsilon = 0.5\n")
    with pytest.raises(ConfigError, match="missing table \\[co\\]"):
        P.COConfig.load(f)
    with pytest.raises(ConfigError, match="not found"):
        P.COConfig.load(tmp_path / "nope.toml")
