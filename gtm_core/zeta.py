"""Definition 7: zeta = sum_{j>=1} 1 / (j ln^3(j+2)).

The series converges like 1/(2 ln^2 J), so truncated sums are useless. We sum the
first N-1 terms exactly and add the Euler-Maclaurin tail
    int_N^inf f + f(N)/2 - sum_k B_2k/(2k)! f^(2k-1)(N).
(A rigorous enclosure with a proved remainder bound lives in gtm_core.zeta_rigorous
once available; this module is the fast path used by the planners.)
"""

from __future__ import annotations

import functools

import mpmath


def _f(x):
    return 1 / (x * mpmath.log(x + 2) ** 3)


@functools.lru_cache(maxsize=None)
def _zeta_mp(dps: int):
    with mpmath.workdps(dps + 15):
        N = 200
        head = mpmath.fsum(_f(mpmath.mpf(j)) for j in range(1, N))
        # int_N^inf dx/(x ln^3(x+2)) with x = e^y: int_{ln N}^inf dy/(y + ln(1 + 2e^{-y}))^3
        tail = mpmath.quad(
            lambda y: 1 / (y + mpmath.log1p(2 * mpmath.exp(-y))) ** 3,
            [mpmath.log(N), 10, 30, 100, mpmath.inf],
        )
        em = _f(mpmath.mpf(N)) / 2
        for k in range(1, 10):
            em -= mpmath.bernoulli(2 * k) / mpmath.factorial(2 * k) * mpmath.diff(_f, N, 2 * k - 1)
        return head + tail + em


def zeta(*, dps: int | None = None):
    """Definition 7(1): zeta = sum_j 1/(j ln^3(j+2)) ~ 1.2330926408..., in (1, 5/4)."""
    if dps is None:
        return float(_zeta_mp(30))
    with mpmath.workdps(dps):
        return +_zeta_mp(int(dps))
