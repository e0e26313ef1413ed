"""Neighbouring inputs from an OpenDP input domain and metric, and pairs the user gives."""

import pytest

import opendp.prelude as dp  # the [test] extra installs opendp: these tests always run

from audits.integrations.opendp_neighbours import neighbouring_pairs, user_pairs
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

dp.enable_features("contrib")


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
    scores = neighbouring_pairs(dp.vector_domain(dp.atom_domain(T=int), size=3), dp.linf_distance(T=int))
    moves = {tuple(b - a for a, b in zip(p.input, p.input_prime)) for p in scores}
    assert {(1, 0, 0), (1, 1, 1), (1, -1, -1)} <= moves  # the argmax's worst case: one up, the rest down
    with pytest.raises(UnsupportedConfiguration, match="give pairs"):
        neighbouring_pairs(dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int)), dp.l1_distance(T=int))


def test_user_pairs_must_be_in_the_domain():
    ints = dp.vector_domain(dp.atom_domain(T=int, bounds=(0, 10)))
    assert user_pairs(ints, [[[1, 2], [1]]])[0].label == "given pair 0"
    with pytest.raises(InvalidParameter, match="not a member"):
        user_pairs(ints, [[[1, 20], [1]]])
    with pytest.raises(InvalidParameter, match="pair"):
        user_pairs(ints, [[1, 2, 3]])
