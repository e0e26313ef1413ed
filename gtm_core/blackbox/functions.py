"""Example black-box functions (Section 6 of the black-box paper), each mapping a list of records
into a finite domain Y by snapping to the nearest domain point (f : U* -> Y as the paper requires).

* :func:`median_on` / :func:`mean_on` - 1-D, symmetric and non-decreasing in every record (the
  monotone depth method applies).
* :func:`slope_on` - least-squares slope of (x, y) records (a learned model parameter; not monotone).
* :func:`tukey_center_on` - Definition 6.2 / Corollary 6.4: f_center(S) in argmax_{y in Y} TD(S, y),
  ties broken by the sorted order of Y (an internal-style 2-D function).
* :func:`center_3d_on` - the 3-D analogue with the Tukey depth restricted to 26 public directions.
* :func:`least_squares_on` - Section 6.3's user-level convex optimisation (Corollary 6.9) in 2-D:
  f_L(S) in argmin_{y in Y} L(S, y), L = sum of the users' squared losses of the line g = y_0 + y_1 x.
Every function accepts records as numbers, tuples, or lists of records (user-level data: a record
may itself be a list of points, flattened as in Corollary 6.8).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["snap_1d", "median_on", "mean_on", "slope_on", "tukey_depth", "tukey_center_on", "directions_3d",
           "direction_depth", "center_3d_on", "squared_loss", "least_squares_on", "BUILTIN"]


def snap_1d(value: float, grid: Sequence[float]) -> float:
    """The grid point nearest to value (ties to the lower one); non-finite values go to grid[0]."""
    g = sorted(grid)
    if not math.isfinite(value):
        return g[0]
    i = int(np.searchsorted(g, value))
    if i == 0:
        return g[0]
    if i >= len(g):
        return g[-1]
    return g[i - 1] if value - g[i - 1] <= g[i] - value else g[i]


def _flat(records) -> np.ndarray:
    rows = []
    for r in records:
        if isinstance(r, (list, tuple)) and r and isinstance(r[0], (list, tuple)):
            rows.extend(r)  # a user's block of points
        else:
            rows.append(r)
    return np.asarray(rows, dtype=float)


def snapped_statistic_on(statistic: Callable, name: str, grid: Sequence[float], empty: float | None = None) -> Callable:
    """f(T) = ``statistic`` of the (flattened) records of T snapped to the nearest grid point; f(empty) =
    ``empty`` (default: the smallest grid point)."""
    g = sorted(grid)
    e = g[0] if empty is None else empty

    def f(T):
        return snap_1d(float(statistic(_flat(T))), g) if len(T) else e

    f.__name__ = name
    return f


def median_on(grid: Sequence[float], empty: float | None = None) -> Callable:
    """The median, snapped to the grid (symmetric and non-decreasing)."""
    return snapped_statistic_on(np.median, "median", grid, empty)


def mean_on(grid: Sequence[float], empty: float | None = None) -> Callable:
    """The mean, snapped to the grid (symmetric and non-decreasing)."""
    return snapped_statistic_on(np.mean, "mean", grid, empty)


def slope_on(grid: Sequence[float], empty: float | None = None) -> Callable:
    """Least-squares slope of y on x over (x, y) records (0 snapped when undefined)."""
    g = sorted(grid)
    e = snap_1d(0.0, g) if empty is None else empty

    def f(T):
        a = _flat(T)
        if a.ndim != 2 or a.shape[0] < 2:
            return e
        x, y = a[:, 0], a[:, 1]
        vx = float(np.var(x))
        if vx == 0:
            return e
        return snap_1d(float(np.mean((x - x.mean()) * (y - y.mean())) / vx), g)

    f.__name__ = "slope"
    return f


def tukey_depth(points: np.ndarray, y) -> int:
    """Definition 6.2 in 2-D: min over closed half-planes H containing y of |S cap H| (multiplicity).

    A half-plane through y with inner normal at angle phi holds the points whose angle (seen from y)
    lies in [phi - pi/2, phi + pi/2]; the count only changes when phi crosses a data angle +- pi/2, so
    the minimum is taken at the midpoints between consecutive critical angles (angular sweep with
    sorted angles and binary search, O(N log N)). Points equal to y lie in every half-plane.
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if pts.shape[0] == 0:
        return 0
    v = pts - np.asarray(y, dtype=float)
    at_y = np.all(v == 0, axis=1)
    v = v[~at_y]
    if v.shape[0] == 0:
        return int(at_y.sum())
    two_pi = 2 * np.pi
    th = np.sort(np.mod(np.arctan2(v[:, 1], v[:, 0]), two_pi))
    crit = np.unique(np.mod(np.concatenate([th + np.pi / 2, th - np.pi / 2]), two_pi))
    nxt = np.append(crit[1:], crit[0] + two_pi)
    mids = (crit + nxt) / 2
    start = np.mod(mids - np.pi / 2, two_pi)
    th2 = np.concatenate([th, th + two_pi])
    counts = np.searchsorted(th2, start + np.pi, side="right") - np.searchsorted(th2, start, side="left")
    return int(counts.min() + at_y.sum())


def tukey_center_on(grid: Sequence) -> Callable:
    """f_center(S) = the first point of the (sorted) grid with maximal Tukey depth in flat(S)."""
    g = sorted(tuple(map(float, p)) for p in grid)

    def f(T):
        if not len(T):
            return g[0]
        pts = _flat(T)
        depths = [tukey_depth(pts, y) for y in g]
        return g[int(np.argmax(depths))]

    f.__name__ = "tukey-center"
    return f


def directions_3d() -> list[tuple[int, int, int]]:
    """The 26 public directions {-1, 0, 1}^3 minus 0 (axes, face and body diagonals)."""
    return [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1) if (a, b, c) != (0, 0, 0)]


def direction_depth(points: np.ndarray, y, directions: Sequence) -> int:
    """Tukey depth restricted to a public direction set D: min_{u in D} |{x in S : u.(x - y) >= 0}|.

    Sensitivity 1 (one record changes each count by <= 1) and quasi-concave in y (its super-level sets
    are intersections of half-spaces {y : u.y <= t-th largest u.x}) - a valid QCO quality for Algorithm 6.
    """
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    yv = np.asarray([float(c) for c in y])
    U = np.asarray(directions, dtype=float)
    return int(((P - yv) @ U.T >= 0).sum(axis=0).min())


def center_3d_on(grid: Sequence) -> Callable:
    """A 3-D center point (Definition 6.2 with the half-spaces restricted to the public directions of
    :func:`directions_3d`): f(S) = the first point of the (sorted) grid with maximal direction-restricted
    Tukey depth in flat(S); f(empty) = the first grid point."""
    g = sorted(tuple(map(float, p)) for p in grid)
    D = directions_3d()

    def f(T):
        if not len(T):
            return g[0]
        pts = _flat(T)
        depths = [direction_depth(pts, y, D) for y in g]
        return g[int(np.argmax(depths))]

    f.__name__ = "center-3d"
    return f


def squared_loss(records, y) -> float:
    """Corollary 6.9's L(S, y) = sum_i phi_i(S_i, y) + r(y) with phi_i(S_i, y) = sum over user i's (x, g) of
    (g - y_0 - y_1 x)^2 and r = 0 (records: (x, g) points or users' lists of them, flattened)."""
    a = _flat(records)
    if a.size == 0:
        return 0.0
    a = a.reshape(-1, 2)
    y0, y1 = (float(c) for c in y)
    return float(((a[:, 1] - y0 - y1 * a[:, 0]) ** 2).sum())


def least_squares_on(grid: Sequence) -> Callable:
    """f_L(S) = the first point of the sorted 2-D grid minimising :func:`squared_loss` (Corollary 6.9's
    argmin over Y, ties broken deterministically by the grid order); f(empty) = the first grid point."""
    g = sorted(tuple(map(float, p)) for p in grid)
    G = np.asarray(g, dtype=float)

    def f(T):
        if not len(T):
            return g[0]
        a = _flat(T).reshape(-1, 2)
        res = a[:, 1][None, :] - G[:, :1] - G[:, 1:] * a[:, 0][None, :]
        return g[int(np.argmin((res ** 2).sum(axis=1)))]

    f.__name__ = "least-squares"
    return f


#: name -> (factory(grid), output dimension, monotone?)
BUILTIN = {
    "median": (median_on, 1, True),
    "mean": (mean_on, 1, True),
    "slope": (slope_on, 1, False),
    "tukey-center": (tukey_center_on, 2, False),
    "center-3d": (center_3d_on, 3, False),
}
