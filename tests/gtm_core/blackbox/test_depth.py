"""CDI depth three ways (literal Definition 4.1, subset OR-transform, monotone d = 1) agree; Claim 2.4
(monotone CDI), Claim 4.2 (depth non-increasing in h) and Claim 4.4 (sensitivity 1) on random
finite instances; the CH-closed extension (Definition 4.5) checked by brute force for d = 2."""

import itertools
import random
import statistics
from fractions import Fraction

import pytest

from gtm_core.blackbox import (SubsetImage, cdi_depth_literal, cdi_points, down_neighbourhood, extension, in_hull,
                               monotone_depths_1d, size_neighbourhood)
from gtm_core.blackbox.geometry import as_point, hull_2d
from gtm_core.errors import InvalidParameter, UnsupportedConfiguration

DOMAIN1 = [(x,) for x in range(5)]


def median_grid(T):
    return min(4, max(0, round(statistics.median(T)))) if T else 0


def mean_grid(T):
    return min(4, max(0, round(sum(T) / len(T)))) if T else 0


def test_neighbourhoods_definition_2_1():
    S = [1, 2, 3]
    assert len(down_neighbourhood(S, 1)) == 4  # S and the three S - {x}
    assert len(size_neighbourhood(S, 2)) == 4
    assert len(size_neighbourhood(S, 0)) == 8


@pytest.mark.parametrize("f", [median_grid, mean_grid])
def test_three_depth_methods_agree(f):
    rng = random.Random(0)
    for _ in range(6):
        n = rng.randint(1, 7)
        S = [rng.randint(0, 4) for _ in range(n)]
        img = SubsetImage(S, f, DOMAIN1, d=1)
        for h in range(1, n + 2):
            lit = [cdi_depth_literal(S, f, h, y) for y in DOMAIN1]
            assert img.depths(h, DOMAIN1) == lit
            assert monotone_depths_1d(S, f, h, DOMAIN1) == lit


def test_depth_claims_4_2_and_4_4_and_cdi_claim_2_4():
    rng = random.Random(1)
    for _ in range(10):
        n = rng.randint(2, 9)
        S = [rng.randint(0, 4) for _ in range(n)]
        T = S[:-1]
        a, b = SubsetImage(S, median_grid, DOMAIN1, d=1), SubsetImage(T, median_grid, DOMAIN1, d=1)
        for h in range(1, n + 1):
            ds, dt = a.depths(h, DOMAIN1), b.depths(h, DOMAIN1)
            assert all(abs(x - y) <= 1 for x, y in zip(ds, dt))  # Claim 4.4
            assert all(x >= y for x, y in zip(ds, a.depths(h + 1, DOMAIN1)))  # Claim 4.2
            # Claim 2.4: CDI_h(T) subset of CDI_h(S) for T subset of S (hull of the points)
            sub = cdi_points(T, median_grid, h, 1)
            sup = cdi_points(S, median_grid, h, 1)
            assert all(in_hull(p, sup) for p in sub)


def center_2d(T):
    """A 2-D internal function: the coordinate-wise median snapped to the grid {0,1,2}^2 (in CH(T))."""
    if not T:
        return (0, 0)
    return (min(2, round(statistics.median([t[0] for t in T]))), min(2, round(statistics.median([t[1] for t in T]))))


def test_d2_enumeration_matches_literal():
    dom = [(x, y) for x in range(3) for y in range(3)]
    ext = extension([as_point(p) for p in dom])
    rng = random.Random(2)
    S = [(rng.randint(0, 2), rng.randint(0, 2)) for _ in range(6)]
    img = SubsetImage(S, center_2d, dom, d=2)
    pts = ext[:: max(1, len(ext) // 12)]
    for h in (1, 2, 3):
        assert img.depths(h, pts) == [cdi_depth_literal(S, center_2d, h, y) for y in pts]


def test_extension_is_ch_closed_d2_bruteforce():
    """Definition 4.5 by brute force: every non-empty intersection of hulls of subsets of Y (pairs and
    triples of subsets) contains a point of Y~; and Y~ lies in CH(Y)."""
    Y = [as_point(p) for p in [(0, 0), (4, 0), (0, 4), (3, 3), (1, 2)]]
    ext = extension(Y)
    assert set(Y) <= set(ext) and all(in_hull(q, Y) for q in ext)
    assert len(ext) <= len(Y) ** 4  # Lemma 4.8
    subsets = [list(c) for k in range(1, len(Y) + 1) for c in itertools.combinations(Y, k)]
    grid = [(Fraction(i, 2), Fraction(j, 2)) for i in range(9) for j in range(9)]
    rng = random.Random(3)
    for _ in range(80):
        fam = rng.sample(subsets, rng.choice([2, 3]))
        common = [g for g in grid if all(in_hull(g, s) for s in fam)]
        if common:  # non-empty (witnessed on the grid) -> Y~ must meet it
            assert any(all(in_hull(q, s) for s in fam) for q in ext)


def test_extension_without_crossings_is_not_ch_closed():
    """Power companion: Y alone is not CH-closed in d = 2 (two crossing segments meet off Y)."""
    Y = [as_point(p) for p in [(0, 0), (2, 2), (0, 2), (2, 0)]]
    fam = [[Y[0], Y[1]], [Y[2], Y[3]]]
    assert not any(all(in_hull(q, s) for s in fam) for q in Y)
    assert any(all(in_hull(q, s) for s in fam) for q in extension(Y))
    assert hull_2d(Y) == [Y[0], Y[3], Y[1], Y[2]]


def test_errors():
    with pytest.raises(UnsupportedConfiguration):
        cdi_depth_literal(list(range(9)), median_grid, 1, 0)
    with pytest.raises(InvalidParameter, match="outside the declared domain"):
        SubsetImage([1, 2], lambda T: 7, DOMAIN1, d=1)
    with pytest.raises(InvalidParameter, match="f raised"):
        SubsetImage([1, 2], lambda T: 1 / 0, DOMAIN1, d=1)
    with pytest.raises(InvalidParameter, match="non-finite"):
        as_point(float("nan"))
