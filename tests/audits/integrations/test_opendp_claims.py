"""The claim an OpenDP measurement's privacy map makes, read by output measure (no sampling)."""

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_claims import read_claim
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

dp.enable_features("contrib", "honest-but-curious")

BOOLS = (dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance())


def _laplace_count(scale=1.0):
    return BOOLS >> dp.t.then_count() >> dp.m.then_laplace(scale)


def test_claims_by_output_measure():
    rr = dp.m.make_randomized_response_bool(0.75)
    pure = read_claim(rr)
    assert pure.kind == "pure" and pure.points[0].epsilon == rr.map(1)
    assert read_claim(dp.c.make_approximate(rr)).kind == "pure"  # delta = 0: the pure test
    fixed = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.c.make_pureDP_to_zCDP(rr)), 1e-3)
    approx = read_claim(fixed)
    assert approx.kind == "approximate" and approx.points[0].delta == 1e-3
    gauss = BOOLS >> dp.t.then_count() >> dp.m.then_gaussian(1.0)
    z = read_claim(gauss)
    assert z.kind == "zcdp" and z.rho == gauss.map(1) and "make_zCDP_to_approxDP" in z.how
    profile = dp.c.make_zCDP_to_approxDP(gauss).map(1)
    for point in z.points:  # points on the curve rho implies, at the documented delta levels
        assert profile.delta(point.epsilon) == pytest.approx(point.delta, rel=1e-6)
    curve = read_claim(dp.c.make_zCDP_to_approxDP(gauss))
    assert curve.kind == "curve" and [p.delta for p in curve.points] == [p.delta for p in z.points]


def test_approximate_zcdp_claim_adds_its_delta_to_the_implied_curve():
    counts = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    m = dp.m.make_gaussian_threshold(counts, dp.l02inf_distance(dp.absolute_distance(T=int)), 1.0, threshold=3)
    claim = read_claim(m, (1, 1, 1))
    rho, delta = m.map((1, 1, 1))
    profile, extra = dp.c.make_zCDP_to_approxDP(m).map((1, 1, 1))
    assert claim.kind == "zcdp" and claim.rho == rho and extra == delta
    for point in claim.points:
        assert point.delta - delta == pytest.approx(profile.delta(point.epsilon), rel=1e-6)


def test_unsupported_measure_and_bad_d_in_are_typed_errors():
    renyi = dp.m.make_user_measurement(*BOOLS, dp.renyi_divergence(), function=lambda x: 1,
                                       privacy_map=lambda d: (lambda alpha: 1.0))
    with pytest.raises(UnsupportedConfiguration, match="not supported"):
        read_claim(renyi)
    with pytest.raises(InvalidParameter, match="d_in"):
        read_claim(_laplace_count(), d_in=-1)
    with pytest.raises(InvalidParameter, match="Measurement"):
        read_claim(lambda x: x)
