"""`tune` and the frontier (gtm_core.planners.horizon_tune): its values, its refusals, and (slow) the
design it chooses for the median cell (tests/gtm_core/planners/horizon_cases.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gtm_core.errors import InvalidParameter
from gtm_core.planners.horizon import certificate
from gtm_core.planners.horizon_problem import NotAchievable, config_of
from gtm_core.planners.horizon_tune import FrontierPoint, TuneRequest, TuneResult, frontier, tune
from tests.gtm_core.planners.horizon_cases import DESIGN, MEDIAN


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of p_bar and max_evaluations"),
    ({"p_bar": 0.001, "max_evaluations": 10.0}, "exactly one of"),
    ({"p_bar": 0.5}, "p_bar must be in \\(0, p_star=0.5\\), got 0.5"),
    ({"max_evaluations": 0.0}, "max_evaluations must be > 0, got 0.0"),
])
def test_bad_requests_are_typed_errors(kwargs, message):
    with pytest.raises(InvalidParameter, match=message):
        tune(MEDIAN, **kwargs)


def test_result_is_a_frozen_value_with_its_serialised_form():
    cfg = config_of(MEDIAN, DESIGN)
    point = FrontierPoint(p_bar=DESIGN.p_bar, s=1, c=2, theta=DESIGN.theta, rho=DESIGN.rho,
                          expected_evaluations=4555.0, certified=True, failure_upper=0.0487)
    result = TuneResult(config=cfg, design=DESIGN, certificate=certificate(cfg), expected_evaluations=4555.0,
                        frontier=(point,), request=TuneRequest(p_bar=DESIGN.p_bar), seconds=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.seconds = 2.0
    d = json.loads(json.dumps(result.to_dict()))
    assert list(d) == ["config", "design", "certificate", "expected_evaluations", "frontier", "request", "seconds"]
    assert d["request"] == {"p_bar": DESIGN.p_bar, "max_evaluations": None}
    assert d["certificate"] == certificate(cfg).to_dict()
    assert list(d["frontier"][0]) == ["p_bar", "s", "c", "theta", "rho", "expected_evaluations", "certified",
                                      "failure_upper"]
    assert FrontierPoint.from_dict(d["frontier"][0]) == point
    assert TuneRequest.from_dict(d["request"]) == result.request


@pytest.mark.slow
def test_tune_reproduces_the_median_design_and_certifies_it():
    """The search is deterministic: at theorem21's claimed p_bar it chooses the shared design (whose rho
    is the chosen one printed to 10 digits)."""
    result = tune(MEDIAN, p_bar=DESIGN.p_bar)
    d = result.design
    assert (d.s, d.c, d.p_bar, d.theta) == (DESIGN.s, DESIGN.c, DESIGN.p_bar, DESIGN.theta)
    assert d.rho == pytest.approx(DESIGN.rho, rel=1e-9)
    assert result.certificate.certified and result.certificate.failure_upper <= MEDIAN.beta
    assert result.request == TuneRequest(p_bar=DESIGN.p_bar)


@pytest.mark.slow
def test_budget_request_fits_and_unreachable_requests_say_the_best():
    result = tune(MEDIAN, max_evaluations=5000.0)
    assert result.expected_evaluations <= 5000.0 and result.certificate.certified
    with pytest.raises(NotAchievable) as exc:
        tune(MEDIAN, p_bar=0.3)
    assert 0 < exc.value.best["p_bar"] < 0.3


@pytest.mark.slow
def test_frontier_points_carry_their_certificates():
    points = frontier(MEDIAN, p_bars=[DESIGN.p_bar / 4, DESIGN.p_bar])
    assert [p.p_bar for p in points] == [DESIGN.p_bar / 4, DESIGN.p_bar]
    assert all(p.certified and p.failure_upper <= MEDIAN.beta for p in points)
    assert points[0].expected_evaluations <= points[1].expected_evaluations
