"""GAP-MAX (Theorem A.5) and Algorithm 5 (private one-dimensional quasi-concave optimisation, Theorem G.2).

Both as a literal sampler (:func:`algorithm5_run`, explicit ``rng``) and as the exact output law
(:func:`algorithm5_law`: float64 or rigorous ``arb`` balls), computed by the same recursion. The
domain is an index set {0, ..., R} (Algorithm 6 maps sorted coordinate values to indices).

GAP-MAX instantiation. Theorem A.5 is cited with Omega(.). We instantiate GAP-MAX with the
exponential mechanism on the scores (sensitivity 1): it is (eps, 0)-DP for every input, hence
(eps, delta)-DP, and by Theorem A.2 it meets A.5's utility with constant C_0 = 2 whenever
|C_J| <= 1/delta (then min{log|Y|, log 1/delta} = log|Y|); beyond that it needs log|C_J| instead of
log(1/delta). ``regime_ok`` in :class:`Algorithm5Law` reports which case a run is in.

Quality arithmetic is exact (:class:`fractions.Fraction`): q(S, j) and the thresholds r - Delta are
computed without rounding; only the exponential weights are float64 or arb.

Broken variants (power suite, docs/blackbox.md): ``level_epsilon="undivided"`` charges every level at
eps' instead of eps'/(2H); ``level_epsilon_factor`` multiplies every level's eps (a level charged at
the wrong eps); ``gap_max_noise=False`` replaces GAP-MAX by the exact argmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from flint import arb

from ...errors import InvalidParameter
from ...validation import check_bool, check_choice, check_positive, check_real
from .params import level_budget, log_star

__all__ = [
    "Algorithm5Variant",
    "Algorithm5Law",
    "interval_quality",
    "pad_quality",
    "scale",
    "gap_max_probabilities",
    "algorithm5_law",
    "algorithm5_run",
    "LEVEL_EPSILON",
    "expected_levels",
    "em_float",
    "em_ball",
]

LEVEL_EPSILON = ("split", "undivided")
_INF = None  # +infinity marker for max over an empty set (Algorithm 5: (I^x3)^C empty -> +inf)


@dataclass(frozen=True)
class Algorithm5Variant:
    """The paper's Algorithm 5 by default; the power suite's broken variants otherwise."""

    level_epsilon: str = "split"
    gap_max_noise: bool = True
    level_epsilon_factor: float = 1.0

    def __post_init__(self):
        check_choice("level_epsilon", self.level_epsilon, LEVEL_EPSILON)
        check_bool("gap_max_noise", self.gap_max_noise)
        check_positive("level_epsilon_factor", self.level_epsilon_factor)

    @property
    def is_paper(self) -> bool:
        return self.level_epsilon == "split" and self.gap_max_noise and self.level_epsilon_factor == 1.0


def _frac(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(x)


def pad_quality(Q: Sequence) -> list[Fraction]:
    """Remark G.1 padding: extend {0..R} to {0..2^m - 1} with the canonical value min Q (outside CH(Y))."""
    q = [_frac(v) for v in Q]
    n2 = 1
    while n2 < len(q):
        n2 *= 2
    return q + [min(q)] * (n2 - len(q))


def interval_quality(Q: Sequence[Fraction], Delta: Fraction) -> list[Fraction]:
    """Algorithm 5 line 4: q(S, j) = 1/2 max_{I in I_j} min{min_I Q - (r - Delta), r - max_{(I^x3)^C} Q},
    j in {0, ..., floor(log2 max Y)}, |I| = 2^j, max over the empty set = -inf (second term +inf)."""
    N = len(Q)
    r = max(Q)
    top = (N - 1).bit_length() - 1 if N > 1 else -1  # floor(log2(N - 1))
    pre = [Q[0]]
    for v in Q[1:]:
        pre.append(max(pre[-1], v))
    suf = [Q[-1]]
    for v in reversed(Q[:-1]):
        suf.append(max(suf[-1], v))
    suf.reverse()
    out = []
    win = list(Q)  # win[a] = min Q[a .. a + L - 1], doubled each step (sparse-table recurrence)
    for j in range(top + 1):
        L = 1 << j
        if j:
            h = L // 2
            win = [min(win[a], win[a + h]) for a in range(N - L + 1)]
        best = None
        for a in range(0, N - L + 1):
            b = a + L - 1
            lo_in = win[a]
            left, right = a - L - 1, b + L + 1
            outs = ([pre[left]] if left >= 0 else []) + ([suf[right]] if right <= N - 1 else [])
            t1 = lo_in - (r - Delta)
            v = t1 if not outs else min(t1, r - max(outs))
            best = v if best is None or v > best else best
        out.append(best / 2)
    return out


def em_float(scores: Sequence[Fraction], eps: float) -> np.ndarray:
    """Theorem A.2 on exact scores (sensitivity 1): P(y) proportional to exp(eps score(y) / 2), float64."""
    s = np.array([float(v - max(scores)) for v in scores])
    w = np.exp(eps * s / 2)
    return w / w.sum()


def em_ball(scores: Sequence[Fraction], eps: arb) -> list[arb]:
    """Theorem A.2 as rigorous arb balls (same law as :func:`em_float`)."""
    top = max(scores)

    # exponent = eps (v - top)/2 with v - top computed exactly as a Fraction
    w = [(eps * _ball(_frac(v) - top) / 2).exp() for v in scores]
    tot = sum(w, arb(0))
    return [x / tot for x in w]


def _ball(x: Fraction) -> arb:
    return arb(x.numerator) / arb(x.denominator)


def gap_max_probabilities(scores: Sequence[Fraction], eps, *, exact: bool = False, noise: bool = True):
    """GAP-MAX as instantiated here: the exponential mechanism on sensitivity-1 scores (Theorem A.2);
    ``noise=False`` is the broken variant (argmax, first index on ties)."""
    if not noise:
        k = max(range(len(scores)), key=lambda i: (scores[i], -i))
        one = [arb(0)] * len(scores) if exact else np.zeros(len(scores))
        one[k] = arb(1) if exact else 1.0
        return one
    return em_ball(scores, eps) if exact else em_float(scores, float(eps))


@dataclass(frozen=True)
class Algorithm5Law:
    """The output law on {0..R}; levels = non-trivial recursion levels (= H = log*(R+1)); regime_ok =
    every GAP-MAX call had |C_J| <= 1/delta_level (our GAP-MAX's utility regime)."""

    probabilities: tuple
    levels: int
    H: int
    regime_ok: bool


def _check(Q, eps, beta, delta, Delta):
    if len(Q) < 1:
        raise InvalidParameter("Algorithm 5 needs a non-empty domain")
    check_positive("epsilon", eps)
    check_real("beta", beta, low=0, high=1, low_open=True, high_open=True)
    check_real("delta", delta, low=0, high=1, low_open=True, high_open=True)
    check_positive("Delta", Delta)


def scale(jh: int, N: int) -> int:
    """The interval length J = 2^j^ of the recursion's output, capped at the padded domain size N.

    The recursive call runs on the padded vector q (length a power of two >= floor(log2(N - 1)) + 1), so it
    can return a padding index with 2^j^ > N (|Y'| in (32, 64] gives q of length 6 padded to 8; j^ = 7 would
    ask for blocks of 128 points of a 64-point domain: no block at all). An interval longer than the
    domain is the whole domain, so J = min(2^j^, N) - one block. A public function of the private j^
    (post-processing): privacy is unchanged; it only matters where j^ lands in the padding.
    """
    return min(1 << jh, N)


def _level_law(Q, eps_l, Delta, exact, variant, delta_l, stats):
    """Law of one (possibly recursive) call on a padded quality vector, as a list of probabilities."""
    P = pad_quality(Q)
    N = len(P)
    zero, one = (arb(0), arb(1)) if exact else (0.0, 1.0)
    if N == 1:
        return [one]
    stats["levels"] += 1
    q = interval_quality(P, Delta)
    law_j = _level_law(q, eps_l, Delta / 8, exact, variant, delta_l, stats)
    out = [zero] * N
    for jh, pj in enumerate(law_j):
        if (not exact and pj == 0.0) or (exact and pj == 0):
            continue
        J = scale(jh, N)
        blocks = [max(P[k * J:(k + 1) * J]) for k in range(N // J)]
        if len(blocks) > 1 / delta_l:
            stats["regime_ok"] = False
        pb = gap_max_probabilities(blocks, eps_l, exact=exact, noise=variant.gap_max_noise)
        for k, pk in enumerate(pb):
            a, b = k * J, (k + 1) * J - 1
            if a == b:
                out[a] += pj * pk
                continue
            pe = em_ball([P[a], P[b]], eps_l) if exact else em_float([P[a], P[b]], float(eps_l))
            out[a] += pj * pk * pe[0]
            out[b] += pj * pk * pe[1]
    return out


def _budget(n, eps, beta, delta, variant, exact):
    H = log_star(n) if n > 1 else 1
    e_l, _b_l, d_l = level_budget(eps, beta, delta, H)
    if variant.level_epsilon == "undivided":
        e_l = float(eps)
    e_l = e_l * variant.level_epsilon_factor
    return H, (arb(e_l) if exact else e_l), d_l


def algorithm5_law(Q: Sequence, eps, beta, delta, Delta, *, exact: bool = False,
                   variant: Algorithm5Variant = Algorithm5Variant()) -> Algorithm5Law:
    """Exact output law of Algorithm 5 on domain {0..R} (R = len(Q) - 1) with quality values Q(S, .),
    initial-call parameters eps', beta', delta' and margin Delta; final clamp min{y~, R} (padding)."""
    _check(Q, eps, beta, delta, Delta)
    H, e_l, d_l = _budget(len(Q), eps, beta, delta, variant, exact)
    stats = {"levels": 0, "regime_ok": True}
    law = _level_law(list(Q), e_l, _frac(Delta), exact, variant, d_l, stats)
    R = len(Q) - 1
    clamped = law[:R + 1]
    for v in law[R + 1:]:
        clamped[R] += v
    if stats["levels"] > H:
        raise AssertionError(f"Algorithm 5 used {stats['levels']} levels, more than H = {H}")
    return Algorithm5Law(tuple(clamped), stats["levels"], H, stats["regime_ok"])


def _level_run(Q, eps_l, Delta, variant, rng):
    P = pad_quality(Q)
    N = len(P)
    if N == 1:
        return 0
    jh = _level_run(interval_quality(P, Delta), eps_l, Delta / 8, variant, rng)
    J = scale(jh, N)
    blocks = [max(P[k * J:(k + 1) * J]) for k in range(N // J)]
    pb = gap_max_probabilities(blocks, eps_l, noise=variant.gap_max_noise)
    k = int(rng.choice(len(pb), p=pb))
    a, b = k * J, (k + 1) * J - 1
    if a == b:
        return a
    pe = em_float([P[a], P[b]], eps_l)
    return a if rng.random() < pe[0] else b


def algorithm5_run(Q: Sequence, eps, beta, delta, Delta, rng: np.random.Generator, *,
                   variant: Algorithm5Variant = Algorithm5Variant()) -> int:
    """One literal run of Algorithm 5 (recursion -> scale j^, GAP-MAX over C_J, EM on the endpoints, clamp)."""
    _check(Q, eps, beta, delta, Delta)
    _H, e_l, _d = _budget(len(Q), eps, beta, delta, variant, False)
    y = _level_run(list(Q), e_l, _frac(Delta), variant, rng)
    return min(y, len(Q) - 1)


def expected_levels(n: int) -> int:
    """Non-trivial levels of the recursion on n points: 0 for n = 1, else 1 + levels(log2 of the padded size)."""
    if n <= 1:
        return 0
    m = math.ceil(math.log2(n)) if n & (n - 1) else n.bit_length() - 1
    return 1 + expected_levels(m)
