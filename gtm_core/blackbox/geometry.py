"""Exact convex geometry on finite point sets (d = 1, 2 and 3), in rational arithmetic.

Points are tuples of :class:`fractions.Fraction` (floats convert exactly), so membership in a
convex hull (the CDI, Definition 2.3) and the CH-closed domain extension (Definition 4.5,
Lemma 4.8) are decided without rounding. d = 3 (hull membership by an exact LP, Lemma 4.8's
extension by enumerating flats) lives in :mod:`.geometry3d`.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from typing import Iterable, Sequence

from ..errors import InvalidParameter, UnsupportedConfiguration
from ..validation import check_exact_real, is_real
from .geometry3d import MAX_EXTENSION_POINTS, extension_3d, in_hull_lp

Point = tuple  # tuple[Fraction, ...]

__all__ = ["as_point", "in_hull", "hull_2d", "extension", "SUPPORTED_DIMENSIONS"]

SUPPORTED_DIMENSIONS = (1, 2, 3)


def as_point(x, d: int | None = None, *, field: str = "point") -> Point:
    """A number or a sequence of numbers as an exact rational point (finite values only)."""
    vals = [x] if is_real(x) else x
    try:
        vals = list(vals)
    except TypeError:
        raise InvalidParameter(f"{field} must be a number or a list of numbers, got {x!r:.60}") from None
    out = []
    for v in vals:
        out.append(Fraction(check_exact_real(f"{field} coordinate", v)))
    if d is not None and len(out) != d:
        raise InvalidParameter(f"{field} must have dimension {d}, got {len(out)}: {x!r:.60}")
    return tuple(out)


def _cross(o, a, b) -> Fraction:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def hull_2d(points: Iterable[Point]) -> list[Point]:
    """Vertices of the convex hull in counter-clockwise order (Andrew's monotone chain, exact)."""
    pts = sorted(set(points))
    if len(pts) <= 2:
        return pts
    lower: list = []
    for p in pts:
        while len(lower) >= 2 and _cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list = []
    for p in reversed(pts):
        while len(upper) >= 2 and _cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def _on_segment(y, a, b) -> bool:
    return _cross(a, b, y) == 0 and min(a[0], b[0]) <= y[0] <= max(a[0], b[0]) and \
        min(a[1], b[1]) <= y[1] <= max(a[1], b[1])


def in_hull(y: Point, points: Sequence[Point]) -> bool:
    """y in CH(points) (closed hull; the empty set's hull is empty)."""
    if not points:
        return False
    d = len(y)
    if d == 1:
        return min(p[0] for p in points) <= y[0] <= max(p[0] for p in points)
    if d == 3:
        return in_hull_lp(y, points)
    if d != 2:
        raise UnsupportedConfiguration(f"convex hulls are implemented for d in {SUPPORTED_DIMENSIONS}, got d={d}")
    h = hull_2d(points)
    if len(h) == 1:
        return y == h[0]
    if len(h) == 2:
        return _on_segment(y, h[0], h[1])
    return all(_cross(h[i], h[(i + 1) % len(h)], y) >= 0 for i in range(len(h)))


def _line_intersection(p1, p2, p3, p4):
    """Intersection point of the lines p1p2 and p3p4 (None when parallel)."""
    d = (p1[0] - p2[0]) * (p3[1] - p4[1]) - (p1[1] - p2[1]) * (p3[0] - p4[0])
    if d == 0:
        return None
    a = p1[0] * p2[1] - p1[1] * p2[0]
    b = p3[0] * p4[1] - p3[1] * p4[0]
    return ((a * (p3[0] - p4[0]) - (p1[0] - p2[0]) * b) / d, (a * (p3[1] - p4[1]) - (p1[1] - p2[1]) * b) / d)


def extension(domain: Sequence[Point]) -> tuple[Point, ...]:
    """A CH-closed domain extension Y~ of a finite Y (Definition 4.5), sorted.

    d = 1: Y~ = Y. A non-empty intersection of hulls of subsets of Y is an interval
    [max of minima, min of maxima] whose endpoints are points of Y.
    d = 2 (Lemma 4.8, |Y~| <= |Y|^{d^2} = |Y|^4): Y~ = Y plus every intersection point of two lines
    through pairs of points of Y that lies in CH(Y). A non-empty intersection of convex polygons
    with vertices in Y is a convex polygon, segment or point whose vertices are points of Y or
    crossings of two edges, i.e. lie in Y~.
    d = 3: Lemma 4.8 by enumerating the flats (:func:`.geometry3d.extension_3d`), |Y| <= 12.
    """
    pts = sorted(set(domain))
    if not pts:
        raise InvalidParameter("domain must not be empty")
    d = len(pts[0])
    if d == 1:
        return tuple(pts)
    if d == 3:
        if len(pts) > MAX_EXTENSION_POINTS:
            raise UnsupportedConfiguration(f"the d = 3 domain extension enumerates plane triples (O(|Y|^9)); "
                                           f"|Y| <= {MAX_EXTENSION_POINTS}, got |Y| = {len(pts)}")
        return extension_3d(pts)
    if d != 2:
        raise UnsupportedConfiguration(f"the domain extension is implemented for d in {SUPPORTED_DIMENSIONS}, got d={d}")
    out = set(pts)
    lines = list(combinations(pts, 2))
    for (a, b), (c, e) in combinations(lines, 2):
        q = _line_intersection(a, b, c, e)
        if q is not None and q not in out and in_hull(q, pts):
            out.add(q)
    return tuple(sorted(out))
