"""Auditing OpenDP measurements against their own privacy maps: claims by output measure, neighbours
from the domain and metric, finite output codes, and the power companions (a map smaller than the
true loss is flagged; correct mechanisms are not, and their bound approaches the claim).

Statistics: OpenDP's noise cannot be seeded, so the verdicts are random even with a fixed audit seed.
Tests that expect *no* violation on a mechanism whose loss equals its claim use confidence 0.999
(alpha = 0.001: a false alarm in at most 1 run in 1000); tests that expect a violation use 0.95 on a
mechanism whose true loss is twice its claim. Audit seeds are stated in each test (SEED_CORRECT below).
"""


import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_audit import audit_measurement
from audits.integrations.opendp_claims import read_claim
from audits.integrations.opendp_coding import Bins, OutputCoder
from audits.integrations.opendp_neighbours import neighbouring_pairs, user_pairs
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

dp.enable_features("contrib", "honest-but-curious")

# The engine's estimation phase draws the runs per input as Poisson(M) from the audit seed: with seed 4
# the first pair of draws is balanced (seeds 0 and 1 give the witness's first input 0.9 and 2.3 standard
# deviations more runs, which raises the false-alarm rate *given that seed* on a tight mechanism).
SEED_CORRECT = 4

BOOLS = (dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance())


def _laplace_count(scale=1.0):
    return BOOLS >> dp.t.then_count() >> dp.m.then_laplace(scale)


def _halved_claim():
    """Broken on purpose: a Laplace count of scale 1 (true loss 1) declaring a map of eps / 2."""
    true = _laplace_count(1.0)
    return dp.m.make_user_measurement(*BOOLS, dp.max_divergence(), function=lambda x: true(x),
                                      privacy_map=lambda d: 0.5 * d, TO=int)


# --- claims ----------------------------------------------------------------------------------------


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


def test_unsupported_measure_and_bad_d_in_are_typed_errors():
    renyi = dp.m.make_user_measurement(*BOOLS, dp.renyi_divergence(), function=lambda x: 1,
                                       privacy_map=lambda d: (lambda alpha: 1.0))
    with pytest.raises(UnsupportedConfiguration, match="not supported"):
        read_claim(renyi)
    with pytest.raises(InvalidParameter, match="d_in"):
        read_claim(_laplace_count(), d_in=-1)
    with pytest.raises(InvalidParameter, match="Measurement"):
        read_claim(lambda x: x)


# --- neighbours ------------------------------------------------------------------------------------


def test_symmetric_distance_neighbours_cover_empty_unique_and_bounds():
    ints = dp.vector_domain(dp.atom_domain(T=int, bounds=(0, 10))), dp.symmetric_distance()
    pairs = neighbouring_pairs(*ints)
    shapes = {(tuple(p.input), tuple(p.input_prime)) for p in pairs}
    assert ((), (10,)) in shapes and ((), (0,)) in shapes  # empty vs a record at either bound
    assert ((0,) * 5, (0,) * 5 + (10,)) in shapes  # a record whose value appears nowhere else
    for p in pairs:  # every pair is in the domain and at symmetric distance 1
        assert ints[0].member(p.input) and ints[0].member(p.input_prime)
        assert abs(len(p.input) - len(p.input_prime)) == 1
    two = neighbouring_pairs(*ints, d_in=2)
    assert all(abs(len(p.input) - len(p.input_prime)) == 2 for p in two)


def test_change_one_discrete_absolute_and_vector_metrics():
    sized = dp.vector_domain(dp.atom_domain(T=int, bounds=(0, 10)), size=5), dp.change_one_distance()
    for p in neighbouring_pairs(*sized):
        assert len(p.input) == len(p.input_prime) == 5
        assert sum(a != b for a, b in zip(p.input, p.input_prime)) == 1
    rr_pairs = neighbouring_pairs(dp.atom_domain(T=bool), dp.discrete_distance())
    assert [(p.input, p.input_prime) for p in rr_pairs] == [(True, False)]
    absolute = neighbouring_pairs(dp.atom_domain(T=int), dp.absolute_distance(T=int))
    assert all(abs(p.input - p.input_prime) == 1 for p in absolute)
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3)
    for metric, norm in ((dp.l1_distance(T=float), lambda d: sum(map(abs, d))),
                         (dp.linf_distance(T=float), lambda d: max(map(abs, d)))):
        for p in neighbouring_pairs(vec, metric, d_in=2.0):
            assert norm([a - b for a, b in zip(p.input, p.input_prime)]) == pytest.approx(2.0)
    with pytest.raises(UnsupportedConfiguration, match="give pairs"):
        neighbouring_pairs(dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int)), dp.l1_distance(T=int))


def test_user_pairs_must_be_in_the_domain():
    ints = dp.vector_domain(dp.atom_domain(T=int, bounds=(0, 10)))
    assert user_pairs(ints, [[[1, 2], [1]]])[0].label == "given pair 0"
    with pytest.raises(InvalidParameter, match="not a member"):
        user_pairs(ints, [[[1, 20], [1]]])
    with pytest.raises(InvalidParameter, match="pair"):
        user_pairs(ints, [[1, 2, 3]])


# --- output codes ----------------------------------------------------------------------------------


def test_output_codes():
    assert OutputCoder.fit([True, False]).code(True) == "True"
    ints = OutputCoder.fit([3, 4, 5, 4])
    assert [ints.code(v) for v in (2, 3, 4, 5, 9)] == ["b0", "b0", "b1", "b2", "b2"] and ints.ordered == 3
    floats = OutputCoder.fit([float(i) for i in range(1000)], bins=4)
    assert len(floats.bins.edges) == 3 and floats.code(-5.0) == "b0" and floats.code(1e9) == "b3"
    released = OutputCoder.fit([{"a": 1.0, "b": 2.0}, {"a": 3.0}, {"a": 2.0, "z": 9.0}])
    assert released.code({"z": 9.0, "a": 1.0}).startswith("{a:") and ",z:" in released.code({"z": 9.0, "a": 1.0})
    pairs = OutputCoder.fit([(1, "x"), (2, "y")])
    assert pairs.code((1, "x")) == "(b0,x)"
    assert Bins(()).code(float("nan")) == "nan"
    with pytest.raises(UnsupportedConfiguration, match="finitely"):
        OutputCoder.fit([object()])


# --- power companions ------------------------------------------------------------------------------


def test_map_smaller_than_the_true_loss_is_flagged():
    """Laplace count of scale 1 declaring eps = 0.5 (true loss 1): flagged at alpha = 0.05, seed 0."""
    result = audit_measurement(_halved_claim(), seconds=12, seed=0)
    assert result.verdict == "violation" and result.epsilon_lower_bound > 0.5
    d = result.to_dict()
    assert d["claim"]["kind"] == "pure" and d["witness"]["input"] != d["witness"]["input_prime"]
    assert {"verdict", "epsilon_claimed", "epsilon_lower_bound", "confidence", "witness", "samples", "seconds"} <= set(d)
    assert "<html" in result.report_html()


def test_correct_randomized_response_is_not_flagged():
    """eps = ln 3 exactly (tight): alpha = 0.001, seed 4."""
    rr = dp.m.make_randomized_response_bool(0.75)
    result = audit_measurement(rr, seconds=6, seed=SEED_CORRECT, confidence=0.999)
    assert result.verdict == "no-violation-found"
    assert 0 < result.epsilon_lower_bound <= rr.map(1)


def test_zcdp_claim_is_audited_on_its_implied_curve():
    """A Gaussian count (rho-zCDP) against the (eps, delta(eps)) points rho implies; alpha = 0.001, seed 4."""
    gauss = BOOLS >> dp.t.then_count() >> dp.m.then_gaussian(1.0)
    result = audit_measurement(gauss, seconds=8, seed=SEED_CORRECT, confidence=0.999)
    assert result.verdict == "no-violation-found" and len(result.points) == len(result.claim.points)
    d = result.to_dict()
    assert d["delta_lower_bound"] <= d["delta_claimed"] and d["claim"]["rho"] == gauss.map(1)


@pytest.mark.slow
@pytest.mark.parametrize("name, share", [("randomized-response", 0.9), ("laplace-count", 0.75)])
def test_correct_mechanisms_bound_approaches_the_claim_within_60s(name, share):
    """alpha = 0.05, seed 4, 60 s. Measured on the shared test machine: randomized response (one pair)
    reached 0.97-0.99 x ln 3; the Laplace count (12 searched pairs: the selection spends most of the
    budget looking for a violation) 0.76-0.90 x 1, so its floor here is 0.75."""
    m = dp.m.make_randomized_response_bool(0.75) if name == "randomized-response" else _laplace_count(1.0)
    result = audit_measurement(m, seconds=60, seed=SEED_CORRECT)
    claim = result.claim.points[0].epsilon
    assert result.epsilon_lower_bound >= share * claim, (result.epsilon_lower_bound, claim)
