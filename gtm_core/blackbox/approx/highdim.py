"""Algorithm 6 (high-dimensional quasi-concave optimisation, Theorem G.4) for d in {1, 2, 3}.

Coordinate i is chosen by Algorithm 5 on a finite candidate set Y'_i with the induced quality
Q_i(S, y) = max over completions of the canonical extension (Remark G.1) of Q. Two points where this
implementation is explicit about what the paper leaves implicit (docs/blackbox.md, "Approximate DP"):

* Q_i by level sets. Remark G.1's extension has super-level sets CH({z : Q(z) >= t}) (t > min Q), so
  Q_i(S, y) = max(min Q, max{t : (y^_1..y^_{i-1}, y) in CH(proj_{<=i} L_t)}) - computed exactly
  (rationals, :func:`gtm_core.blackbox.geometry.in_hull`), no enumeration of subsets A.
* Y'_i per prefix. Lemma G.3 builds one product grid Y' over all prefixes. We build Y'_i for the
  realised prefix only: every y_i-coordinate of a vertex of a slice {x_<i = prefix} of CH(A), A subset
  of Y, i.e. the intersections of the slice with segments [a, b], a, b in Y (d = 2), plus G_i. This is
  Lemma G.3's property (2) for that prefix, and it is a public function of the previous outputs, so
  privacy follows by adaptive advanced composition exactly as in the proof of G.4.

For d = 3 the last coordinate's slice is a vertical line: its intersection with CH(L) is the interval
between the heights of the triangles, segments and points of L whose xy-projection contains the
prefix (:class:`gtm_core.blackbox.geometry3d.VerticalLines`, exact integer tests vectorised over the
C(|Y|, 3) triangles, computed once per prefix and shared by every level); the same gives Y'_3 and the
final CH(Y) test.

Output: a point of CH(Y) (tuple of Fractions); outside CH(Y) -> the fixed public point min(Y).
The law (:func:`algorithm6_law`) and the sampler (:func:`algorithm6_run`) share every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from flint import arb

from ...errors import InvalidParameter, UnsupportedConfiguration
from ..geometry import as_point, hull_2d, in_hull
from ..geometry3d import VerticalLines
from .onedim import Algorithm5Variant, em_ball, em_float, algorithm5_law, algorithm5_run
from .params import highdim_budget, highdim_margin, log_star

__all__ = ["HighDimSetup", "setup", "candidates", "induced_quality", "algorithm6_law", "algorithm6_run",
           "SUPPORTED", "line_interval_3d"]

SUPPORTED = (1, 2, 3)


@dataclass(frozen=True)
class HighDimSetup:
    """Algorithm 6 lines 5-6 for a domain: eps', beta', delta', Delta_0 and Delta = Delta_0 / d."""

    d: int
    size: int
    H: int
    eps_c: float
    beta_c: float
    delta_c: float
    Delta0: float

    @property
    def Delta(self) -> float:
        return self.Delta0 / self.d


def setup(domain: Sequence, eps, beta, delta, C) -> HighDimSetup:
    """Algorithm 6's parameters (Theorem G.4 needs eps, beta, delta in (0, 1))."""
    for name, v in (("epsilon", eps), ("beta", beta), ("delta", delta)):
        if not 0 < float(v) < 1:
            raise InvalidParameter(f"{name} must be in (0, 1) (Theorem G.4), got {v!r}")
    d = len(domain[0])
    if d not in SUPPORTED:
        raise UnsupportedConfiguration(f"Algorithm 6 is implemented for d in {SUPPORTED}, got d={d}")
    H = log_star(len(domain))
    b, e, dl = highdim_budget(eps, beta, delta, d)
    return HighDimSetup(d, len(domain), H, e, b, dl, highdim_margin(eps, beta, delta, d, H, C))


def _levels(points, quality):
    """(thresholds t > min Q descending, the super-level set L_t for each)."""
    ts = sorted(set(quality.values()), reverse=True)
    m = ts[-1]
    return m, [(t, [p for p in points if quality[p] >= t]) for t in ts if t > m]


def candidates(domain: Sequence, prefix: tuple, *, lines: VerticalLines | None = None) -> list[Fraction]:
    """Y'_i for the realised prefix (i = len(prefix) + 1), sorted (``lines``: a reusable
    :class:`VerticalLines` of ``domain`` for i = 3)."""
    i = len(prefix)
    out = {p[i] for p in domain}  # G_i (Lemma G.3 property (1))
    if i == 1:
        c = prefix[0]
        for a in domain:
            for b in domain:
                if a[0] < c < b[0]:
                    out.add(a[1] + (c - a[0]) * (b[1] - a[1]) / (b[0] - a[0]))
    elif i == 2:
        out |= {z for _, z in (lines or VerticalLines(domain)).hits(prefix)}
    elif i > 2:
        raise UnsupportedConfiguration("candidate sets are implemented for d <= 3")
    return sorted(out)


def line_interval_3d(points: Sequence, xy: tuple, *, lines: VerticalLines | None = None, subset_bits=None):
    """The vertical line {(x, y) = xy} cut by CH(points) (3-D) as (min z, max z), or None if it misses
    (``lines``: a :class:`VerticalLines` of ``points``, reused; ``subset_bits``: only those points)."""
    return (lines or VerticalLines(points)).interval(xy, subset_bits)


def induced_quality(points: Sequence, quality: dict, prefix: tuple, values: Sequence[Fraction], *,
                    lines: VerticalLines | None = None) -> list[Fraction]:
    """Q_i(S, y) for y in values (Algorithm 6 line 8 via level sets, see the module docstring)."""
    m, levels = _levels(points, quality)
    if len(prefix) == 2 and lines is None:
        lines = VerticalLines(points)
    bit = {p: 1 << k for k, p in enumerate(lines.points)} if lines is not None else {}
    d, i = len(points[0]), len(prefix)
    if i + 1 > min(d, 3):
        raise UnsupportedConfiguration("induced qualities are implemented for coordinates 1, 2 and 3")
    tests = []  # per level (descending t): a membership test for (prefix, y) in CH(proj_{<=i} L_t)
    for t, L in levels:
        if i == 0:
            lo, hi = min(p[0] for p in L), max(p[0] for p in L)
            tests.append((t, lambda x, lo=lo, hi=hi: lo <= x[0] <= hi))
        elif i == 1:
            hull = hull_2d([p[:2] for p in L])
            tests.append((t, lambda x, hull=hull: in_hull(x, hull)))
        else:
            iv = lines.interval(prefix, sum(bit[p] for p in L))
            tests.append((t, lambda x, iv=iv: iv is not None and iv[0] <= x[2] <= iv[1]))
    out = []
    for y in values:
        x = prefix + (y,)
        out.append(next((t for t, test in tests if test(x)), m))  # descending: the first hit is the max
    return out


def _in_domain_hull(y: tuple, pts: Sequence, lines: VerticalLines | None) -> bool:
    """y in CH(Y) (exact; d = 3 via the vertical line through y)."""
    if len(y) <= 2:
        return in_hull(y, pts)
    iv = lines.interval(y[:2])
    return iv is not None and iv[0] <= y[2] <= iv[1]


def _prepare(domain, quality_values):
    pts = [as_point(p) for p in domain]
    if len(set(pts)) != len(pts):
        raise InvalidParameter("Algorithm 6 needs distinct domain points")
    if len(quality_values) != len(pts):
        raise InvalidParameter(f"quality needs one value per domain point, got {len(quality_values)} for {len(pts)}")
    return pts, {p: Fraction(q) for p, q in zip(pts, quality_values)}


def algorithm6_law(domain: Sequence, quality_values: Sequence, eps, beta, delta, C, *, exact: bool = False,
                   variant: Algorithm5Variant = Algorithm5Variant()) -> dict:
    """Exact output law of Algorithm 6: {point (tuple of Fractions): probability}."""
    pts, Q = _prepare(domain, quality_values)
    d = len(pts[0])
    zero = arb(0) if exact else 0.0
    if len(pts) <= d + 1:  # line 1-2: the exponential mechanism at eps
        pr = em_ball([Q[p] for p in pts], arb(eps)) if exact else em_float([Q[p] for p in pts], float(eps))
        return {p: v for p, v in zip(pts, pr)}
    s = setup(pts, eps, beta, delta, C)
    lines = VerticalLines(pts) if d == 3 else None
    law: dict = {}

    def rec(prefix, mass):
        if len(prefix) == d:
            y = prefix if _in_domain_hull(prefix, pts, lines) else min(pts)
            law[y] = law.get(y, zero) + mass
            return
        vals = candidates(pts, prefix, lines=lines)
        qi = induced_quality(pts, Q, prefix, vals, lines=lines)
        res = algorithm5_law(qi, s.eps_c, s.beta_c, s.delta_c, s.Delta, exact=exact, variant=variant)
        for v, pv in zip(vals, res.probabilities):
            if pv != 0:
                rec(prefix + (v,), mass * pv)

    rec((), arb(1) if exact else 1.0)
    return law


def algorithm6_run(domain: Sequence, quality_values: Sequence, eps, beta, delta, C, rng: np.random.Generator, *,
                   variant: Algorithm5Variant = Algorithm5Variant()) -> tuple:
    """One literal run of Algorithm 6."""
    pts, Q = _prepare(domain, quality_values)
    d = len(pts[0])
    if len(pts) <= d + 1:
        pr = em_float([Q[p] for p in pts], float(eps))
        return pts[int(rng.choice(len(pts), p=pr))]
    s = setup(pts, eps, beta, delta, C)
    lines = VerticalLines(pts) if d == 3 else None
    prefix: tuple = ()
    for _ in range(d):
        vals = candidates(pts, prefix, lines=lines)
        qi = induced_quality(pts, Q, prefix, vals, lines=lines)
        prefix = prefix + (vals[algorithm5_run(qi, s.eps_c, s.beta_c, s.delta_c, s.Delta, rng, variant=variant)],)
    return prefix if _in_domain_hull(prefix, pts, lines) else min(pts)
