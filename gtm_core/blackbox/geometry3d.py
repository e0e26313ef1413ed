"""Exact convex geometry for d = 3: hull membership by an exact linear program and the CH-closed
domain extension of Lemma 4.8 (rational arithmetic throughout, no rounding).

* :func:`in_hull_lp` - y in CH(P) iff the system sum_j l_j p_j = y, sum_j l_j = 1, l >= 0 is feasible;
  decided by phase 1 of the simplex method on a Fraction tableau with Bland's rule (terminates; exact).
  Cost: d + 1 rows, |P| + d + 1 columns, a few pivots - microseconds to milliseconds for |P| <= 64.
  Any d (the 1-D and 2-D hull tests of :mod:`.geometry` are cross-checked against it).
* :func:`extension_3d` - Lemma 4.8 (proof in Appendix C): Y~ = {x in CH(Y) : {x} is the intersection of
  d = 3 flats aff(y_1, y_2, y_3), y_i in Y}. The flats are points of Y, lines through two points and
  planes through three non-collinear points. A point that is the intersection of three such flats is
  already the intersection of at most three of them in one of the forms: a point of Y; two lines that
  cross; a line that meets a plane in one point; three planes with independent normals (any other
  combination either reduces to one of these or intersects in more than a point or nothing - a line
  inside both planes of a pair, say). Cost: with L distinct lines and P distinct planes,
  O(L^2 + L P + P^3) exact intersections plus one hull test per new point; |Y| = 8 (a box's corners):
  28 lines, 20 planes, < 0.5 s. It grows like |Y|^9 (P ~ |Y|^3), so |Y| <= 12 is the practical range
  (the 3 x 3 x 3 grid has 49 lines and hundreds of planes: 10^6-10^7 plane triples, not run).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from typing import Sequence

__all__ = ["in_hull_lp", "extension_3d", "MAX_EXTENSION_POINTS", "VerticalLines"]

#: |Y| above which extension_3d refuses (the plane-triple enumeration is O(|Y|^9))
MAX_EXTENSION_POINTS = 12


def _pivot(T: list, r: int, c: int) -> None:
    pv = T[r][c]
    T[r] = [v / pv for v in T[r]]
    for i in range(len(T)):
        if i != r and T[i][c] != 0:
            f = T[i][c]
            T[i] = [a - f * b for a, b in zip(T[i], T[r])]


def in_hull_lp(y: Sequence, points: Sequence[Sequence]) -> bool:
    """y in CH(points), closed hull, exact (phase-1 simplex with Bland's rule on Fractions)."""
    if not points:
        return False
    d, m = len(y), len(points)
    rows = [[Fraction(p[k]) for p in points] + [Fraction(y[k])] for k in range(d)]
    rows.append([Fraction(1)] * m + [Fraction(1)])
    for r in rows:  # right-hand sides >= 0
        if r[-1] < 0:
            r[:] = [-v for v in r]
    nr = len(rows)
    # tableau: [A | I (artificials) | b]; objective row: minimise the sum of artificials
    T = [r[:m] + [Fraction(int(i == k)) for k in range(nr)] + [r[-1]] for i, r in enumerate(rows)]
    basis = [m + i for i in range(nr)]
    obj = [-sum(T[i][j] for i in range(nr)) for j in range(m)] + [Fraction(0)] * nr + \
        [-sum(T[i][-1] for i in range(nr))]
    T.append(obj)
    while True:
        col = next((j for j in range(m + nr) if T[-1][j] < 0), None)  # Bland: lowest index
        if col is None:
            break
        cands = [(T[i][-1] / T[i][col], basis[i], i) for i in range(nr) if T[i][col] > 0]
        _, _, row = min(cands)  # Bland: ties by lowest basic index
        _pivot(T, row, col)
        basis[row] = col
    return T[-1][-1] == 0


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _normalise(v):
    """v scaled so that its first non-zero coordinate is 1 (a canonical direction / normal)."""
    s = next(c for c in v if c != 0)
    return tuple(c / s for c in v)


def _lines(pts) -> list:
    """Distinct lines through two points of pts as (point on it, canonical direction)."""
    out, seen = [], set()
    for a, b in combinations(pts, 2):
        v = _normalise(_sub(b, a))
        # canonical foot: the point of the line with the first non-zero direction coordinate's coordinate 0
        k = next(i for i in range(3) if v[i] != 0)
        t = -a[k]
        foot = tuple(a[i] + t * v[i] for i in range(3))
        if (foot, v) not in seen:
            seen.add((foot, v))
            out.append((a, v))
    return out


def _planes(pts) -> list:
    """Distinct planes through three non-collinear points as (canonical normal n, offset n.x)."""
    out = set()
    for a, b, c in combinations(pts, 3):
        n = _cross(_sub(b, a), _sub(c, a))
        if n != (0, 0, 0):
            n = _normalise(n)
            out.add((n, _dot(n, a)))
    return sorted(out)


def _solve3(rows, rhs):
    """The unique solution of a 3 x 3 system (Cramer's rule), None when singular."""
    det = _dot(rows[0], _cross(rows[1], rows[2]))
    if det == 0:
        return None
    cols = list(zip(*rows))

    def repl(k):
        m = [list(c) for c in cols]
        m[k] = list(rhs)
        r = list(zip(*m))
        return _dot(r[0], _cross(r[1], r[2]))

    return tuple(repl(k) / det for k in range(3))


def _line_line(l1, l2):
    (a, u), (b, v) = l1, l2
    w = _cross(u, v)
    if w == (0, 0, 0) or _dot(_sub(b, a), w) != 0:  # parallel, or skew
        return None
    # a + s u = b + t v: solve with the plane normal w as third equation (s, t, 0)
    sol = _solve3([(u[0], -v[0], w[0]), (u[1], -v[1], w[1]), (u[2], -v[2], w[2])], _sub(b, a))
    s = sol[0]
    return tuple(a[i] + s * u[i] for i in range(3))


def _line_plane(line, plane):
    (a, u), (n, c) = line, plane
    den = _dot(n, u)
    if den == 0:
        return None
    s = (c - _dot(n, a)) / den
    return tuple(a[i] + s * u[i] for i in range(3))


def extension_3d(domain: Sequence) -> tuple:
    """Lemma 4.8's Y~ for a finite Y in R^3 (points as tuples of Fractions), sorted."""
    pts = sorted({tuple(Fraction(c) for c in p) for p in domain})
    out = set(pts)
    lines, planes = _lines(pts), _planes(pts)
    cand = set()
    for l1, l2 in combinations(lines, 2):
        cand.add(_line_line(l1, l2))
    for ln in lines:
        for pl in planes:
            cand.add(_line_plane(ln, pl))
    for p1, p2, p3 in combinations(planes, 3):
        cand.add(_solve3([p1[0], p2[0], p3[0]], (p1[1], p2[1], p3[1])))
    cand.discard(None)
    for q in cand - out:
        if in_hull_lp(q, pts):
            out.add(q)
    return tuple(sorted(out))


def _scaled(values, denominator: int):
    """Fractions times a common denominator as an integer numpy array (int64 when products of two
    cannot overflow, else exact Python integers in an object array)."""
    import numpy as np

    ints = [int(v * denominator) for v in values]
    big = max((abs(v) for v in ints), default=0) >= 1 << 30
    return np.array(ints, dtype=object if big else np.int64)


class VerticalLines:
    """Where vertical lines {(x, y) = xy} cross the triangles, segments and points of a 3-D point set.

    ``hits(xy)`` gives, for every triangle / segment / point of ``points`` whose xy-projection contains
    xy, the bit set of its vertices (indices into ``points``) and the height z of the crossing. The line
    cut by CH(A) for A a subset of ``points`` is the interval between the lowest and highest height among
    the hits with vertices in A (the line's endpoints in CH(A) lie on triangles of A's hull facets, or on
    its edges and vertices when the hull is flat or the line touches its boundary). Exact: the tests are
    integer arithmetic on the coordinates scaled by a common denominator (vectorised over all
    C(m, 3) triangles), heights are Fractions. Results are cached per xy.
    """

    def __init__(self, points: Sequence):
        import math

        import numpy as np

        self.points = [tuple(Fraction(c) for c in p) for p in points]
        m = len(self.points)
        self._den = math.lcm(*(c.denominator for p in self.points for c in p))
        self._tri = np.array(list(combinations(range(m), 3)), dtype=np.int64).reshape(-1, 3)
        self._seg = np.array(list(combinations(range(m), 2)), dtype=np.int64).reshape(-1, 2)
        self._cache: dict = {}
        self._intervals: dict = {}

    def hits(self, xy: tuple) -> list[tuple[int, Fraction]]:
        key = (Fraction(xy[0]), Fraction(xy[1]))
        if key not in self._cache:
            self._cache[key] = self._compute(key)
        return self._cache[key]

    def _compute(self, xy) -> list[tuple[int, Fraction]]:
        import math

        import numpy as np

        P = self.points
        D = math.lcm(self._den, xy[0].denominator, xy[1].denominator)
        X, Y = _scaled([p[0] for p in P], D), _scaled([p[1] for p in P], D)
        px, py = int(xy[0] * D), int(xy[1] * D)
        out = [(1 << i, P[i][2]) for i in range(len(P)) if P[i][0] == xy[0] and P[i][1] == xy[1]]
        if len(self._seg):
            a, b = self._seg[:, 0], self._seg[:, 1]
            dx, dy = X[b] - X[a], Y[b] - Y[a]
            num = (px - X[a]) * dx + (py - Y[a]) * dy
            den = dx * dx + dy * dy
            ok = ((dx * (py - Y[a]) - dy * (px - X[a])) == 0) & (den != 0) & (num >= 0) & (num <= den)
            for k in np.nonzero(ok)[0].tolist():
                i, j = int(a[k]), int(b[k])
                t = Fraction(int(num[k]), int(den[k]))
                out.append(((1 << i) | (1 << j), P[i][2] + t * (P[j][2] - P[i][2])))
        if len(self._tri):
            a, b, c = self._tri[:, 0], self._tri[:, 1], self._tri[:, 2]
            det = (X[b] - X[a]) * (Y[c] - Y[a]) - (X[c] - X[a]) * (Y[b] - Y[a])
            l1 = (X[b] - px) * (Y[c] - py) - (X[c] - px) * (Y[b] - py)
            l2 = (X[c] - px) * (Y[a] - py) - (X[a] - px) * (Y[c] - py)
            l3 = det - l1 - l2
            pos = (det > 0) & (l1 >= 0) & (l2 >= 0) & (l3 >= 0)
            neg = (det < 0) & (l1 <= 0) & (l2 <= 0) & (l3 <= 0)
            for k in np.nonzero(pos | neg)[0].tolist():
                i, j, h = int(a[k]), int(b[k]), int(c[k])
                dt = int(det[k])
                z = (int(l1[k]) * P[i][2] + int(l2[k]) * P[j][2] + int(l3[k]) * P[h][2]) / dt
                out.append(((1 << i) | (1 << j) | (1 << h), Fraction(z)))
        return out

    def interval(self, xy: tuple, subset_bits: int | None = None):
        """(min z, max z) of the vertical line through xy cut by CH(points in subset_bits), or None."""
        key = (Fraction(xy[0]), Fraction(xy[1]), subset_bits)
        if key not in self._intervals:
            zs = [z for bits, z in self.hits(xy) if subset_bits is None or bits & ~subset_bits == 0]
            self._intervals[key] = (min(zs), max(zs)) if zs else None
        return self._intervals[key]
