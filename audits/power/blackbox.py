"""Auditing the private black-box evaluator through finite-output targets (:mod:`audits.finite`).

* :func:`evaluator_target` - Algorithm 4 (or a broken variant) as a finite target: input
  ``{"dataset": [...]}``, output code = the chosen point of Y~ (:func:`gtm_core.blackbox.point_code`).
* :func:`candidate_pairs` - the neighbouring datasets the auditor searches by itself: S and S minus
  one record, for homogeneous, two-valued and random datasets over a record universe around the
  sizes where the cutoff h crosses 0 (the regime that matters for Algorithm 4), plus
  :func:`refine_pair` (move one record, or grow/shrink both datasets by one record).
* :data:`VARIANTS` - the power suite: deliberately broken evaluators, each a change of
  :class:`gtm_core.blackbox.PureParameters`. Whether a variant breaks *privacy* is decided by the
  exact law (:mod:`gtm_core.blackbox.exact`), not assumed: untruncated Laplace size noise and a too
  small K keep pure DP (they break the convex-hull utility guarantee instead).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from gtm_core.blackbox import BlackBoxEvaluator, PureParameters
from gtm_core.errors import InvalidParameter
from gtm_core.validation import check_choice, is_real

from ..finite import CallableFiniteTarget, FiniteAudit, audit_finite

#: name -> (description, change of the paper's parameters)
VARIANTS: dict[str, tuple[str, Callable[[PureParameters], PureParameters]]] = {
    "correct": ("Algorithm 4 as printed", lambda p: p),
    "no-size-noise": ("h from the exact |S| (no TLap noise)", lambda p: replace(p, size_noise="none")),
    "no-uniform-branch": ("the Bernoulli(eta) uniform branch dropped", lambda p: replace(p, uniform_branch=False)),
    "em-2eps0": ("exponential mechanism at 2 eps_0", lambda p: replace(p, em_epsilon=2 * p.eps0)),
    "laplace-size": ("TLap replaced by an untruncated Laplace(1/eps_0), same R", lambda p: replace(p, size_noise="laplace")),
    "small-K": ("K = ceil(K / 4) (Delta too small)", lambda p: replace(p, K=math.ceil(p.K / 4))),
}


def variant_evaluator(base: BlackBoxEvaluator, name: str) -> BlackBoxEvaluator:
    check_choice("variant", name, VARIANTS)
    params = VARIANTS[name][1](base.params)
    return BlackBoxEvaluator(base.config, base.f, params=params, depth_method=base.depth_method)


def evaluator_target(ev: BlackBoxEvaluator, *, name: str = "blackbox") -> CallableFiniteTarget:
    """Algorithm 4 as a finite-output target (input {"dataset": [...]}, codes = points of Y~)."""

    def fn(inp, n, seed):
        if not isinstance(inp, dict) or not isinstance(inp.get("dataset"), list):
            raise InvalidParameter("input must be an object {\"dataset\": [...]}")
        S = [tuple(r) if isinstance(r, list) else r for r in inp["dataset"]]
        idx = ev.sample(S, n, np.random.default_rng(seed))
        counts = np.bincount(idx, minlength=len(ev.codes))
        return {ev.codes[i]: int(c) for i, c in enumerate(counts) if c}

    return CallableFiniteTarget(fn, name=name)


def crossing_sizes(params: PureParameters, spread: int = 3) -> list[int]:
    """Dataset sizes around |S| = R + K + 1 (where h = 1 becomes possible) and |S| = 2R + K + 1."""
    lo = max(1, math.floor(params.R + params.K) - spread)
    hi = math.ceil(2 * params.R + params.K) + spread
    return list(range(lo, hi + 1))


def candidate_pairs(universe: Sequence, sizes: Sequence[int], rng: np.random.Generator, *,
                    mixed_sizes: int = 3, random_per_size: int = 1) -> list[tuple[dict, dict]]:
    """Neighbouring pairs (S, S minus one record).

    Homogeneous datasets at every size (cheap: they share sub-datasets, and they carry the largest
    losses found for every variant), plus two-valued halves of adjacent values and random datasets at
    the ``mixed_sizes`` central sizes; :func:`refine_pair` explores around the best ones.
    """
    uni = sorted(universe)
    out, seen = [], set()

    def add(S: list):
        for i in sorted(range(len(S)), key=lambda i: S[i]):
            T = S[:i] + S[i + 1:]
            key = (tuple(S), tuple(T))
            if key not in seen and len(S) > 0:
                seen.add(key)
                out.append(({"dataset": list(S)}, {"dataset": list(T)}))
                break

    for n in sizes:
        for a in uni:
            add([a] * n)
    mid = len(sizes) // 2
    lo = max(0, mid - mixed_sizes // 2)
    for n in list(sizes)[lo: lo + mixed_sizes]:
        for a, b in zip(uni, uni[1:]):
            add(sorted([a] * (n // 2) + [b] * (n - n // 2)))
        for _ in range(random_per_size):
            if all(is_real(v) for v in uni):
                add(sorted(rng.choice(uni, n).tolist()))
            else:  # point records (d >= 2): draw indices, keep the records hashable tuples
                add(sorted(uni[int(i)] for i in rng.integers(len(uni), size=n)))
    return out


def refine_pair(a: dict, b: dict, rng: np.random.Generator):
    """Nearby neighbouring pairs: one record more or fewer in both datasets, or a third of the records
    moved to a neighbouring value."""
    S = list(a["dataset"])
    if not S:
        return []
    x = S[int(rng.integers(len(S)))]
    out = [({"dataset": sorted(S + [x])}, {"dataset": S})]
    if len(S) > 1:
        out.append(({"dataset": S}, {"dataset": sorted(S[:-1])}))
    if all(is_real(v) for v in S):
        k = max(1, len(S) // 3)
        shift = 1 if rng.random() < 0.5 else -1
        moved = sorted(S[:-k] + [v + shift for v in S[-k:]])
        out.append(({"dataset": moved}, {"dataset": moved[:-1]}))
    return out


def audit_evaluator(ev: BlackBoxEvaluator, universe: Sequence, *, epsilon: float | None = None,
                    seconds: float | None = 60.0, max_samples: int | None = None, seed: int = 0,
                    confidence: float = 0.95, sizes: Sequence[int] | None = None,
                    pairs: Sequence | None = None, progress: bool = False) -> FiniteAudit:
    """Audit an evaluator (in-process) for its claimed epsilon on pairs it searches itself."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xB1AC]))
    if pairs is None:
        pairs = candidate_pairs(universe, sizes or crossing_sizes(ev.params), rng)
    return audit_finite(evaluator_target(ev), pairs, epsilon=ev.params.epsilon if epsilon is None else epsilon,
                        seconds=seconds, max_samples=max_samples, seed=seed, confidence=confidence,
                        alphabet=ev.codes, refine=refine_pair, progress=progress)


def utility_failure_probability(ev: BlackBoxEvaluator, S: Sequence, law_probabilities, lam: int) -> float:
    """P(output not in CH(f(N_lambda(S)))) under an output law (d = 1, monotone f: the hull is
    [min, max] of f over the sorted prefixes/suffixes with >= |S| - lambda records)."""
    from gtm_core.blackbox.depth import evaluate_point

    recs = sorted(S)
    n = len(recs)
    keep = max(n - lam, 0)
    lo = min(evaluate_point(ev.f, recs[:m], 1)[0] for m in range(keep, n + 1))
    hi = max(evaluate_point(ev.f, recs[n - m:], 1)[0] for m in range(keep, n + 1))
    return float(sum(p for y, p in zip(ev.extended, law_probabilities) if not (lo <= y[0] <= hi)))


def summarise_counts(counts: Counter) -> dict:
    total = sum(counts.values())
    return {k: v / total for k, v in sorted(counts.items())}


# -- the approximate-DP evaluator (Algorithm 2) -------------------------------------------------------

#: name -> (description, Algorithm 5 variant) for gtm_core.blackbox.approx.ApproxEvaluator
APPROX_VARIANTS = {
    "correct": ("Algorithm 2 as reconstructed from the proof of Theorem 2.6", {}),
    "level-undivided": ("every Algorithm 5 level charged at eps' instead of eps'/(2H)", {"level_epsilon": "undivided"}),
    "level-20x": ("every Algorithm 5 level charged at 20 eps'/(2H)", {"level_epsilon_factor": 20.0}),
    "gap-max-no-noise": ("GAP-MAX replaced by the exact argmax", {"gap_max_noise": False}),
}


def approx_variant_evaluator(base, name: str):
    """The same configuration and f with one of :data:`APPROX_VARIANTS`."""
    from gtm_core.blackbox.approx.evaluator import ApproxEvaluator
    from gtm_core.blackbox.approx.onedim import Algorithm5Variant

    check_choice("variant", name, APPROX_VARIANTS)
    return ApproxEvaluator(base.config, base.oracle.f, depth_method=base.oracle.depth_method,
                           variant=Algorithm5Variant(**APPROX_VARIANTS[name][1]))


def approx_evaluator_target(ev, *, name: str = "blackbox-approx") -> CallableFiniteTarget:
    """Algorithm 2 as a finite-output target (input {"dataset": [...]}, codes = output points)."""

    def fn(inp, n, seed):
        if not isinstance(inp, dict) or not isinstance(inp.get("dataset"), list):
            raise InvalidParameter("input must be an object {\"dataset\": [...]}")
        S = [tuple(r) if isinstance(r, list) else r for r in inp["dataset"]]
        return ev.sample(S, n, np.random.default_rng(seed))

    return CallableFiniteTarget(fn, name=name)


def approx_crossing_sizes(params, spread: int = 2) -> list[int]:
    """Sizes around |S| = R + K + 1 (h = 1 first possible), capped at 16 (exact depth by enumeration)."""
    lo = max(2, math.floor(params.R + params.K) - spread)
    hi = min(16, math.ceil(2 * params.R + params.K) + spread)
    return list(range(lo, max(lo, hi) + 1))


def audit_approx_evaluator(ev, universe: Sequence, *, epsilon: float | None = None, delta: float | None = None,
                           seed: int = 0, confidence: float = 0.95, n_selection: int = 20_000,
                           n_final: int = 200_000, sizes: Sequence[int] | None = None, pairs: Sequence | None = None,
                           seconds: float | None = None):
    """Approximate-DP audit (:func:`audits.finite.audit_finite_delta`) of Algorithm 2 for its claimed
    (eps, delta) on neighbouring pairs it searches itself (:func:`candidate_pairs`)."""
    from ..finite import audit_finite_delta

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xA99D]))
    if pairs is None:
        pairs = candidate_pairs(universe, sizes or approx_crossing_sizes(ev.params), rng)
    return audit_finite_delta(approx_evaluator_target(ev), pairs,
                              epsilon=ev.params.epsilon if epsilon is None else epsilon,
                              delta=ev.params.delta if delta is None else delta, n_selection=n_selection,
                              n_final=n_final, seed=seed, confidence=confidence, seconds=seconds)


def approx_audit_instances() -> dict:
    """The tiny instances of the Algorithm 2 witnesses (tests/audits/power/test_blackbox.py and
    tests/gtm_core/blackbox/approx/test_exact.py), eps = 0.9, delta = 0.1, beta = 0.1:
    d -> (evaluator, record universe the pairs are searched over, dataset sizes or None for the default)."""
    from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
    from gtm_core.blackbox.approx.params import ApproxConstants
    from gtm_core.blackbox.functions import center_3d_on, median_on, tukey_center_on

    grid = [0, 1, 2, 3]
    Y2 = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
    Y3 = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 1.0, 1.0)]

    def ev(dom, f, C):
        return ApproxEvaluator(ApproxConfig(0.9, 0.1, 0.1, tuple(dom), ApproxConstants(C=C)), f)

    return {1: (ev([[g] for g in grid], median_on(grid, empty=0), 1e-5), grid, None),
            2: (ev(Y2, tukey_center_on(Y2), 1e-7), [Y2[1], Y2[3]], range(6, 11)),
            3: (ev(Y3, center_3d_on(Y3), 1e-8), [Y3[1], Y3[4]], range(8, 12))}


def run_approx_audits(seed: int = 0) -> list[dict]:
    """:func:`audit_approx_evaluator` (confidence 0.95, default sample sizes) on each instance of
    :func:`approx_audit_instances`, for the correct evaluator and the noiseless GAP-MAX variant."""
    import time

    out = []
    for d, (ev, uni, sizes) in approx_audit_instances().items():
        for name in ("correct", "gap-max-no-noise"):
            t0 = time.monotonic()
            r = audit_approx_evaluator(approx_variant_evaluator(ev, name), uni, seed=seed, sizes=sizes)
            out.append({"d": d, "variant": name, "verdict": r.verdict, "delta_lower_bound": r.delta_lower_bound,
                        "delta_claimed": r.delta_claimed, "epsilon": r.epsilon, "confidence": r.confidence,
                        "samples": r.samples, "seed": seed, "C": ev.config.constants.C,
                        "seconds": time.monotonic() - t0})
    return out
