"""gtm_core.blackbox.geometry3d: exact hull membership by LP against brute force (Caratheodory:
y in the hull of some <= d + 1 of the points, decided exactly) and against the 1-D/2-D hull tests;
Lemma 4.8's d = 3 extension checked against Definition 4.5 by brute force on small domains; the
vertical-line crossings on subsets against the crossings of the subset itself."""

import itertools
import random
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.optimize import linprog

from gtm_core.blackbox.depth import SubsetImage, cdi_depth_literal
from gtm_core.blackbox.functions import center_3d_on
from gtm_core.blackbox.geometry import extension, in_hull
from gtm_core.blackbox.geometry3d import VerticalLines, extension_3d, in_hull_lp
from gtm_core.errors import UnsupportedConfiguration


def _solve(cols, y):
    """The unique l with sum_j l_j cols_j = y, sum l = 1 (Fraction Gauss elimination), None when the
    columns are affinely dependent or the system is inconsistent."""
    k = len(cols)
    M = [[F(c[i]) for c in cols] + [F(y[i])] for i in range(len(y))] + [[F(1)] * k + [F(1)]]
    r = 0
    for c in range(k):
        piv = next((i for i in range(r, len(M)) if M[i][c] != 0), None)
        if piv is None:
            return None  # dependent columns: a smaller subset covers this hull (Caratheodory)
        M[r], M[piv] = M[piv], M[r]
        M[r] = [v / M[r][c] for v in M[r]]
        for i in range(len(M)):
            if i != r and M[i][c] != 0:
                M[i] = [a - M[i][c] * b for a, b in zip(M[i], M[r])]
        r += 1
    if any(M[i][-1] != 0 for i in range(r, len(M))):
        return None
    return [M[i][-1] for i in range(k)]


def _brute_in_hull(y, pts):
    """y in CH(pts) iff y is a convex combination of some <= d + 1 affinely independent points."""
    d = len(y)
    for k in range(1, d + 2):
        for cols in itertools.combinations(pts, k):
            lam = _solve(cols, y)
            if lam is not None and all(v >= 0 for v in lam) and \
                    all(sum(lam[j] * cols[j][i] for j in range(k)) == y[i] for i in range(d)):
                return True
    return False


def test_lp_membership_against_brute_force_d3():
    rng = random.Random(3)
    for _ in range(60):
        pts = [tuple(F(rng.randint(0, 3)) for _ in range(3)) for _ in range(rng.randint(1, 6))]
        y = tuple(F(rng.randint(0, 6), 2) for _ in range(3))
        assert in_hull_lp(y, pts) == _brute_in_hull(y, pts), (y, pts)
        assert in_hull(y, pts) == in_hull_lp(y, pts)


@pytest.mark.parametrize("d", [1, 2])
def test_lp_membership_agrees_with_the_low_dimensional_tests(d):
    rng = random.Random(d)
    for _ in range(80):
        pts = [tuple(F(rng.randint(0, 4)) for _ in range(d)) for _ in range(rng.randint(1, 6))]
        y = tuple(F(rng.randint(0, 8), 2) for _ in range(d))
        assert in_hull_lp(y, pts) == in_hull(y, pts)
    assert not in_hull_lp((F(0),) * 3, [])


def _nonempty_intersection(hulls):
    """A point of the intersection of the hulls (float LP; only chooses which families are checked)."""
    d = 3
    nv = d + sum(len(h) for h in hulls)
    A, b, off = [], [], d
    for h in hulls:
        for k in range(d):
            row = [0.0] * nv
            row[k] = -1.0
            for j, p in enumerate(h):
                row[off + j] = float(p[k])
            A.append(row)
            b.append(0.0)
        row = [0.0] * nv
        row[off:off + len(h)] = [1.0] * len(h)
        A.append(row)
        b.append(1.0)
        off += len(h)
    r = linprog(np.zeros(nv), A_eq=np.array(A), b_eq=np.array(b), bounds=[(None, None)] * d + [(0, None)] * (nv - d))
    return r.status == 0


@pytest.mark.parametrize("Y", [
    [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)],
    [(0, 0, 0), (2, 0, 0), (0, 2, 0), (0, 0, 2), (1, 1, 0), (2, 2, 2)],
])
def test_extension_3d_is_ch_closed_definition_4_5(Y):
    """Y subset of Y~ subset of CH(Y), |Y~| <= |Y|^9, and every non-empty intersection of hulls of 2 or 3
    subsets of Y (all pairs and 300 random triples) meets Y~ (exact membership)."""
    Y = [tuple(F(c) for c in p) for p in Y]
    E = extension_3d(Y)
    assert set(Y) <= set(E) and all(in_hull_lp(q, Y) for q in E) and len(E) <= len(Y) ** 9
    subsets = [list(s) for k in range(1, len(Y) + 1) for s in itertools.combinations(Y, k)]
    rng = random.Random(7)
    fams = list(itertools.combinations(range(len(subsets)), 2))
    fams = rng.sample(fams, min(400, len(fams))) + [tuple(rng.sample(range(len(subsets)), 3)) for _ in range(300)]
    checked = 0
    for fam in fams:
        hulls = [subsets[i] for i in fam]
        if _nonempty_intersection(hulls):
            checked += 1
            assert any(all(in_hull_lp(q, h) for h in hulls) for q in E), hulls
    assert checked > 100


def test_extension_3d_cube_and_limits():
    cube = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    E = extension(cube)
    assert len(E) == 35 and (F(1, 2),) * 3 in E and (F(1, 3),) * 3 in E
    with pytest.raises(UnsupportedConfiguration, match="12"):
        extension([(x, y, z) for x in range(3) for y in range(3) for z in range(2)])


def test_vertical_lines_on_subsets_match_the_subset_itself():
    rng = np.random.default_rng(5)
    for _ in range(20):
        P = sorted({tuple(F(int(v)) for v in rng.integers(0, 4, 3)) for _ in range(7)})
        vl = VerticalLines(P)
        bits = int(rng.integers(1, 1 << len(P)))
        sub = [p for k, p in enumerate(P) if bits >> k & 1]
        for _ in range(5):
            xy = (F(int(rng.integers(0, 7)), 2), F(int(rng.integers(0, 7)), 2))
            assert vl.interval(xy, bits) == VerticalLines(sub).interval(xy)


def test_cdi_depth_d3_enumeration_matches_literal_definition():
    """Definition 4.1 read literally (3^n subset pairs) = the subset OR-transform, d = 3, center-3d."""
    Y = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)]
    f = center_3d_on(Y)
    Yt = extension(Y)
    rng = random.Random(11)
    for _ in range(3):
        S = [Y[rng.randrange(5)] for _ in range(rng.randint(2, 5))]
        img = SubsetImage(S, f, Y, d=3)
        for h in range(1, len(S) + 1):
            assert img.depths(h, Yt) == [cdi_depth_literal(S, f, h, y) for y in Yt]
