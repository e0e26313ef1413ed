"""OpenDP measurements as GTM input mechanisms: eps_t from the privacy map, pure-DP measures only
(approximate ones with their delta), non-boolean outputs refused with a typed error."""

import math

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp import (  # noqa: E402
    NonBooleanOutput,
    OpenDPMechanism,
    from_measurement,
    privacy_parameters,
    stream_parameters,
    step_with,
)
from gtm_core import GTMConfig, make_plan  # noqa: E402
from gtm_core.errors import InvalidParameter, MechanismError, UnsupportedConfiguration  # noqa: E402
from gtm_core.reference import GTMRun  # noqa: E402

dp.enable_features("contrib")


def _counting_space():
    return dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance()


def test_randomized_response_eps_from_the_privacy_map():
    rr = dp.m.make_randomized_response_bool(0.75)
    m = from_measurement(rr)
    assert m.eps_t == pytest.approx(math.log(3), rel=1e-12)
    assert m.eps_t >= math.log(3)  # OpenDP rounds its map conservatively
    assert m.delta_t == 0.0
    assert m(True) in (1, -1) and m.evaluations == 1


def test_post_processed_scorer_is_supported():
    dp.enable_features("honest-but-curious")
    scorer = _counting_space() >> dp.t.then_count() >> dp.m.then_laplace(scale=2.0) \
        >> dp.new_function(lambda c: c > 10, TO=bool)
    m = from_measurement(scorer, d_in=1, probe=[True] * 3)
    assert m.eps_t == pytest.approx(0.5)
    assert m(([True] * 40)) in (1, -1)


def test_non_boolean_output_is_refused_with_a_typed_error():
    count = _counting_space() >> dp.t.then_count() >> dp.m.then_laplace(scale=2.0)
    with pytest.raises(NonBooleanOutput, match="not a bool"):
        from_measurement(count, probe=[True, False])
    lazy = from_measurement(count)
    with pytest.raises(NonBooleanOutput) as exc:
        lazy([True])
    assert isinstance(exc.value, MechanismError)


def test_non_pure_measures_are_refused():
    gauss = _counting_space() >> dp.t.then_count() >> dp.m.then_gaussian(scale=2.0)
    with pytest.raises(UnsupportedConfiguration, match="MaxDivergence"):
        privacy_parameters(gauss)
    with pytest.raises(InvalidParameter):
        privacy_parameters(lambda x: True)


def test_approximate_measure_gives_eps_and_delta():
    rr = dp.m.make_randomized_response_bool(0.75)
    approx = dp.c.make_approximate(rr)
    eps, delta = privacy_parameters(approx)
    assert eps == pytest.approx(math.log(3)) and delta == 0.0


def test_stream_parameters_and_planned_eps_must_cover_the_measurement():
    rr = from_measurement(dp.m.make_randomized_response_bool(0.75))
    assert stream_parameters([rr, rr]) == {"eps_t": rr.eps_t, "delta_t": 0.0}
    cfg = GTMConfig.from_dict({"gtm": {"epsilon": 20.0, "theta": 1.0, "gamma": 2.0, "beta": 0.2},
                               "stream": {"p_star": 0.6, "horizon": 3, "eps_t": 0.5}})
    run = GTMRun(make_plan(cfg), seed=1)
    with pytest.raises(UnsupportedConfiguration, match="privacy map"):
        step_with(run, rr, True)
    assert run.t == 1  # refused before any evaluation


def test_gtm_halts_on_an_opendp_mechanism_above_threshold():
    """Randomized response with p_true = 0.75 on data True has Pr[+1] = 0.75 >= p* = 0.6: Theorem 21
    makes the GTM halt at step 1 with probability >= 1 - beta. Seeded (seed 1), so deterministic here."""
    rr = from_measurement(dp.m.make_randomized_response_bool(0.75))
    cfg = GTMConfig.from_dict({"gtm": {"epsilon": 20.0, "theta": 1.0, "gamma": 2.0, "beta": 0.2},
                               "stream": {"p_star": 0.6, "horizon": 3, **stream_parameters([rr])}})
    run = GTMRun(make_plan(cfg), seed=1)
    assert step_with(run, rr, True) is True
    assert run.halted_at == 1 and rr.evaluations > 0
    assert isinstance(rr, OpenDPMechanism) and "eps_t" in repr(rr)
