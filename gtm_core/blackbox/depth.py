"""Down-neighbourhoods (Definition 2.1), the CDI (Definition 2.3) and CDI depth (Definition 4.1).

A dataset S is a list of records; a black-box f is any Python callable on a list of records
returning a point of the finite domain Y (a number for d = 1, a pair for d = 2). Sub-datasets keep
the records' order and are identified by bit masks over positions (multiset semantics).

Three ways to compute depth_h^f(S, y) = min{|S'| : S' subset of S, y not in CDI_h^f(S minus S')}:

* :func:`cdi_depth_literal` - the definition read literally (every S', every subset of S minus S'
  of size >= h): 3^n subset pairs; a cross-check for n <= 8.
* :class:`SubsetImage` - exact for any d: f is evaluated once on each of the 2^n subsets (n <= 16,
  |Y| <= 64), the set of values of f on M_h(T) is an OR-transform over subsets, and
  depth = n - max{|T| : y not in CH(f(M_h(T)))}. Cost O(n 2^n) plus one hull test per distinct image.
* :func:`monotone_depths_1d` - exact for d = 1 when f is symmetric and non-decreasing in every
  record (median, mean, quantiles, their roundings to a grid - the monotone functions of Fang et al.
  and Linder et al.): for |T| = k the extreme subsets are prefixes/suffixes of the sorted records and
  the best T of each size is a top-k / bottom-k block, so O((n - h + 1)^2) evaluations of f suffice,
  for any n. The hypothesis is the caller's; tests compare it with the enumeration.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from typing import Callable, Sequence

import numpy as np

from ..errors import InvalidParameter, UnsupportedConfiguration
from .geometry import as_point, in_hull

MAX_ENUMERATION_RECORDS = 16
MAX_ENUMERATION_DOMAIN = 64

__all__ = [
    "MAX_ENUMERATION_RECORDS",
    "MAX_ENUMERATION_DOMAIN",
    "down_neighbourhood",
    "size_neighbourhood",
    "cdi_points",
    "in_cdi",
    "cdi_depth_literal",
    "SubsetImage",
    "monotone_depths_1d",
    "evaluate_point",
]


def _subsets(n: int, min_size: int):
    for k in range(max(min_size, 0), n + 1):
        yield from combinations(range(n), k)


def down_neighbourhood(S: Sequence, k: int) -> list[list]:
    """Definition 2.1: N_k(S) = {S' subset of S : |S'| >= |S| - k} (as lists of records)."""
    return [[S[i] for i in idx] for idx in _subsets(len(S), len(S) - int(k))]


def size_neighbourhood(S: Sequence, h: int) -> list[list]:
    """Definition 2.1: M_h(S) = {S' subset of S : |S'| >= h}."""
    return [[S[i] for i in idx] for idx in _subsets(len(S), int(h))]


def evaluate_point(f: Callable, records: list, d: int):
    """f(records) as an exact point of dimension d (a typed error names a bad value)."""
    try:
        v = f(list(records))
    except Exception as exc:  # the black box is untrusted: report, never crash the caller's audit
        raise InvalidParameter(f"f raised {type(exc).__name__} on a sub-dataset of size {len(records)}: "
                               f"{str(exc)[:120]}") from None
    return as_point(v, d, field="f(S')")


def cdi_points(S: Sequence, f: Callable, h: int, d: int) -> list:
    """Definition 2.3: the points f(M_h(S)) whose convex hull is CDI_h^f(S)."""
    return sorted({evaluate_point(f, T, d) for T in size_neighbourhood(S, h)})


def in_cdi(y, S: Sequence, f: Callable, h: int) -> bool:
    """y in CDI_h^f(S) = CH(f(M_h(S)))."""
    y = as_point(y)
    return in_hull(y, cdi_points(S, f, h, len(y)))


def cdi_depth_literal(S: Sequence, f: Callable, h: int, y) -> int:
    """Definition 4.1 read literally: min{|S'| : S' subset of S, y not in CDI_h^f(S minus S')} (n <= 8)."""
    n = len(S)
    if n > 8:
        raise UnsupportedConfiguration(f"the literal depth enumerates 3^n subset pairs; n <= 8, got n={n}")
    y = as_point(y)
    for size in range(n + 1):
        for removed in combinations(range(n), size):
            rest = [S[i] for i in range(n) if i not in removed]
            if not in_cdi(y, rest, f, h):
                return size
    raise AssertionError("unreachable: removing every record empties the CDI for h >= 1")


class SubsetImage:
    """f on every subset of S (bit masks), as indices into the domain Y; depth for any h by OR-transform."""

    def __init__(self, S: Sequence, f: Callable, domain: Sequence, *, d: int):
        n = len(S)
        if n > MAX_ENUMERATION_RECORDS:
            raise UnsupportedConfiguration(
                f"depth by enumeration evaluates f on 2^n subsets; n <= {MAX_ENUMERATION_RECORDS}, got n={n}")
        if len(domain) > MAX_ENUMERATION_DOMAIN:
            raise UnsupportedConfiguration(
                f"depth by enumeration supports |Y| <= {MAX_ENUMERATION_DOMAIN}, got {len(domain)}")
        self.n, self.d = n, d
        self.domain = [as_point(p, d) for p in domain]
        index = {p: i for i, p in enumerate(self.domain)}
        self.fidx = np.empty(1 << n, dtype=np.int64)
        for mask in range(1 << n):
            v = evaluate_point(f, [S[i] for i in range(n) if mask >> i & 1], d)
            if v not in index:
                raise InvalidParameter(f"f returned {tuple(map(float, v))} outside the declared domain Y")
            self.fidx[mask] = index[v]
        self.popcount = np.array([bin(m).count("1") for m in range(1 << n)], dtype=np.int64)
        self._hull_cache: dict = {}

    def images(self, h: int) -> np.ndarray:
        """For every mask T: the bit set of Y-indices of f(M_h(T)) (uint64 OR over sub-masks of size >= h)."""
        g = np.where(self.popcount >= h, np.left_shift(np.uint64(1), self.fidx.astype(np.uint64)), np.uint64(0))
        masks = np.arange(1 << self.n)
        for i in range(self.n):
            has = (masks >> i) & 1 == 1
            g[has] |= g[masks[has] ^ (1 << i)]
        return g

    def _inside(self, bits: int, y) -> bool:
        key = (bits, y)
        if key not in self._hull_cache:
            pts = [self.domain[j] for j in range(len(self.domain)) if bits >> j & 1]
            self._hull_cache[key] = in_hull(y, pts)
        return self._hull_cache[key]

    def depths(self, h: int, points: Sequence) -> list[int]:
        """depth_h^f(S, y) for every y in points: n - max{|T| : y not in CH(f(M_h(T)))}."""
        g = self.images(h)
        best: dict[int, int] = {}
        for bits, size in zip(g.tolist(), self.popcount.tolist()):
            if best.get(bits, -1) < size:
                best[bits] = size
        out = []
        for y in points:
            yp = as_point(y, self.d)
            keep = max(size for bits, size in best.items() if not self._inside(bits, yp))
            out.append(self.n - keep)
        return out


def monotone_depths_1d(S: Sequence, f: Callable, h: int, points: Sequence, *, memo: dict | None = None) -> list[int]:
    """Exact depth_h^f(S, y), d = 1, for f symmetric and non-decreasing in every (real) record.

    With T of size k sorted: min over M_h(T) of f is min_{h <= m <= k} f(bottom m of T), max is
    max_m f(top m of T); the largest T with min f(M_h(T)) > y is a top block of S, the largest with
    max < y a bottom block. depth = n - max{|T| : y not in [min, max]} (T with |T| < h qualify).
    ``memo`` (optional dict) caches f on sorted sub-datasets across calls (f is symmetric).
    """
    memo = {} if memo is None else memo

    def fv(block):
        key = tuple(block)
        if key not in memo:
            memo[key] = evaluate_point(f, block, 1)[0]
        return memo[key]

    n = len(S)
    recs = sorted(S, key=lambda r: as_point(r, 1, field="record")[0])  # f sees the caller's records
    ys = [as_point(y, 1)[0] for y in points]
    h = int(h)
    if h <= 0:
        raise InvalidParameter(f"cutoff h must be >= 1, got {h}")
    base = min(h - 1, n)  # any T with |T| < h has an empty CDI
    lo_top: dict[int, Fraction] = {}
    hi_bottom: dict[int, Fraction] = {}
    for k in range(h, n + 1):
        top = recs[n - k:]
        bottom = recs[:k]
        lo_top[k] = min(fv(top[:m]) for m in range(h, k + 1))
        hi_bottom[k] = max(fv(bottom[k - m:]) for m in range(h, k + 1))
    out = []
    for y in ys:
        keep = base
        for k in range(n, h - 1, -1):
            if lo_top[k] > y or hi_bottom[k] < y:
                keep = max(keep, k)
                break
        out.append(n - keep)
    return out
