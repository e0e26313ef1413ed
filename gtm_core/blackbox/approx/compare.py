"""Where the approximate-DP evaluator pays off: lambda of Algorithm 2 vs Algorithm 4 with every constant
counted, their crossover in the domain size, and a measured utility comparison (with sample-and-aggregate).

Closed forms (M = |Y~| <= |Y|^{d^2} by Lemma 4.8; both evaluators at the same eps):

* Algorithm 4 (pure): lambda = ceil(K + 2R + 1), K = ceil((d+1)(2 log(M/beta_0)/eps_0 + 1)),
  R = TLap(1, eps_0, delta_0) radius with delta_0 = min{1/4, eta(e^{eps_0} - 1)/M} (:mod:`..params`).
* Algorithm 2 (approx): the same lambda with K from Algorithm 6's Delta_0 on Y~ at
  (eps/2, beta/2, delta/2), H = log* M, and R from delta_0 = delta/2 (:mod:`.params`).

lambda_pure grows like log M, lambda_approx like 8^{log* M} log* M: the crossover is found by walking the
regimes of H = log* M (log* is constant on (Tow(H-1), Tow(H)]) with log M as an mpmath number, so
domain sizes far beyond float range are handled exactly enough to state the crossover.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import mpmath
import numpy as np

from .. import params as P
from ..depth import evaluate_point
from ..functions import direction_depth, directions_3d, tukey_depth
from ..geometry import as_point
from ..mechanisms import exponential_mechanism_probabilities
from .params import evaluator_budget, highdim_margin, tower

__all__ = ["lambda_pure", "lambda_approx", "log_star_of_exp", "crossover", "sample_and_aggregate",
           "sample_and_aggregate_indices", "utility_summary", "center_cases_3d",
           "DPS", "hull_interval_monotone", "compare_median", "compare_center", "run_comparison", "compare_center_3d",
           "reach_probability", "reach_cases", "advantage_windows", "user_blocks", "user_ls_records",
           "GRID_2D", "GRID_LS", "GRID_3D_BOX",
           "direction_depth", "directions_3d", "write_comparison"]

DPS = 40


def log_star_of_exp(lnM) -> int:
    """log* M for M = e^{lnM} given only ln M (mpmath): log* M = 1 + log*(log2 M) for M > 1."""
    with mpmath.workdps(DPS):
        x = mpmath.mpf(lnM) / mpmath.log(2)  # log2 M
        if x <= 0:
            return 0
        k = 1
        while x > 1:
            x = mpmath.log(x, 2)
            k += 1
        return k


def lambda_pure(lnM, d: int, eps, beta):
    """Algorithm 4's lambda = K + 2R + 1 (before the ceilings) for ln|Y~| = lnM (Theorem 2.7's proof)."""
    with mpmath.workdps(DPS):
        lnM, e0, b0 = mpmath.mpf(lnM), mpmath.mpf(eps) / 2, mpmath.mpf(beta) / 2
        eta = mpmath.mpf(beta) / 2
        Delta = 2 * (lnM - mpmath.log(b0)) / e0
        K = (d + 1) * (Delta + 1)
        ln_d0 = mpmath.log(eta * mpmath.expm1(e0)) - lnM  # ln(eta (e^eps0 - 1)/M)
        d0 = mpmath.mpf(1) / 4 if ln_d0 > mpmath.log(mpmath.mpf(1) / 4) else mpmath.exp(ln_d0)
        R = mpmath.log1p(mpmath.expm1(e0) / (2 * d0)) / e0 if d0 > 0 else \
            (mpmath.log(mpmath.expm1(e0) / 2) - ln_d0) / e0
        return K + 2 * R + 1


def lambda_approx(lnM, d: int, eps, delta, beta, C):
    """Algorithm 2's lambda = K + 2R + 1 (before the ceilings) for ln|Y~| = lnM (Theorem 2.6's proof)."""
    with mpmath.workdps(DPS):
        e0, b0, d0 = evaluator_budget(mpmath.mpf(eps), mpmath.mpf(beta), mpmath.mpf(delta), dps=DPS)
        H = max(1, log_star_of_exp(lnM))
        Delta = highdim_margin(e0, b0, d0, d, H, C, dps=DPS)
        return (d + 1) * (Delta + 1) + 2 * P.tlap_radius(e0, d0, dps=DPS) + 1


def crossover(d: int, eps, delta, beta, C, *, max_H: int = 8) -> dict:
    """The smallest ln M with lambda_approx(M) < lambda_pure(M), searched regime by regime of H = log* M
    (within a regime lambda_approx is constant and lambda_pure increasing in ln M)."""
    with mpmath.workdps(DPS):
        ln2 = mpmath.log(2)
        for H in range(1, max_H + 1):
            # regime of H = log* M: M in (Tow(H-1), Tow(H)], i.e. ln M in (Tow(H-2) ln 2, Tow(H-1) ln 2]
            lo = mpmath.mpf(0) if H == 1 else mpmath.mpf(tower(H - 2)) * ln2
            hi = mpmath.mpf(tower(H - 1)) * ln2 if H - 1 <= 5 else mpmath.inf
            if H - 2 > 5:
                break
            la = lambda_approx((lo + hi) / 2 if hi != mpmath.inf else lo * 2, d, eps, delta, beta, C)
            # solve lambda_pure(x) = la for x = ln M: lambda_pure is affine in ln M once delta_0 < 1/4
            f = lambda x: lambda_pure(x, d, eps, beta) - la  # noqa: E731
            # H = 1 is M = 2 only (ln M = ln 2 = hi); for H >= 2, max(lo, 1) <= hi
            x0 = hi if H == 1 else max(lo, mpmath.mpf(1))
            if f(x0) > 0:
                return {"H": H, "lnM": float(x0), "log10M": float(x0 / mpmath.log(10)), "lambda": float(la)}
            # slope of lambda_pure in ln M: (d + 1) 2/eps0 + 2/eps0
            slope = ((d + 1) * 2 + 2) / (mpmath.mpf(eps) / 2)
            x = x0 - f(x0) / slope
            for _ in range(3):
                x = x - f(x) / slope
            if hi == mpmath.inf or x <= hi:
                return {"H": H, "lnM": float(x), "log10M": float(x / mpmath.log(10)), "lambda": float(la),
                        "log10_Y_bound": float(x / mpmath.log(10) / d ** 2)}
        return {"H": None, "lnM": float("inf"), "log10M": float("inf"), "lambda": float("nan")}


def advantage_windows(d: int, eps, delta, beta, C, *, max_H: int = 6) -> list[dict]:
    """Per regime H = log*|Y~| (|Y~| in (Tow(H-1), Tow(H)]) the sizes where lambda_approx < lambda_pure.

    lambda_approx is constant on a regime and jumps (by ~8x) when log* increments, lambda_pure grows like
    log|Y~|, so Algorithm 2 has the smaller lambda only on a window [crossing, Tow(H)] at the top of some
    regimes (or nowhere): the first crossing (:func:`crossover`) is not a threshold beyond which it stays
    ahead. Each entry: H, the regime's log10 bounds, lambda_approx there and the log10 |Y~| from which it
    wins in that regime (None if it never does)."""
    out = []
    with mpmath.workdps(DPS):
        ln2, ln10 = mpmath.log(2), mpmath.log(10)
        slope = ((d + 1) * 2 + 2) / (mpmath.mpf(eps) / 2)
        for H in range(1, max_H + 1):
            lo = mpmath.mpf(0) if H == 1 else mpmath.mpf(tower(H - 2)) * ln2
            hi = mpmath.mpf(tower(H - 1)) * ln2
            la = lambda_approx(hi, d, eps, delta, beta, C)
            f = lambda x: lambda_pure(x, d, eps, beta) - la  # noqa: E731
            start = None
            if f(hi) > 0:  # wins at the top of the regime; lambda_pure is increasing: find the crossing
                x0 = hi if H == 1 else max(lo, mpmath.mpf(1))
                if f(x0) > 0:
                    x = x0
                else:
                    x = x0 - f(x0) / slope
                    for _ in range(3):
                        x = x - f(x) / slope
                start = float(x / ln10)
            out.append({"H": H, "log10M_low": float(lo / ln10), "log10M_high": float(hi / ln10),
                        "lambda_approx": float(la), "lambda_pure_at_high": float(lambda_pure(hi, d, eps, beta)),
                        "wins_from_log10M": start})
    return out


def sample_and_aggregate_indices(f: Callable, S: list, k: int, domain: Sequence, eps: float, rng, runs: int,
                                 d: int) -> np.ndarray:
    """Sample-and-aggregate baseline (Section 6): random partition into k blocks, f on each block, the
    exponential mechanism at eps over Y with the rank (d = 1) / Tukey depth (d = 2) / direction-restricted
    Tukey depth (d = 3, :func:`..functions.direction_depth`) among block outputs;
    the chosen indices into ``domain``, one per run."""
    out = np.empty(runs, dtype=np.int64)
    dom = [tuple(map(float, as_point(p))) for p in domain]
    for i in range(runs):
        blocks = np.array_split(rng.permutation(len(S)), k)
        vals = [tuple(map(float, evaluate_point(f, [S[j] for j in b], d))) for b in blocks]
        if d == 1:
            v = np.array([x[0] for x in vals])
            q = [min(int((v <= y[0]).sum()), int((v >= y[0]).sum())) for y in dom]
        elif d == 2:
            q = [tukey_depth(np.array(vals), y) for y in dom]
        else:
            q = [direction_depth(np.array(vals), y, directions_3d()) for y in dom]
        out[i] = rng.choice(len(dom), p=exponential_mechanism_probabilities(q, eps, 1.0))
    return out


def sample_and_aggregate(f: Callable, S: list, k: int, domain: Sequence, eps: float, rng, runs: int, d: int):
    """The points of :func:`sample_and_aggregate_indices` (float tuples of ``domain``)."""
    dom = [tuple(map(float, as_point(p))) for p in domain]
    return [dom[int(i)] for i in sample_and_aggregate_indices(f, S, k, domain, eps, rng, runs, d)]


def utility_summary(outputs: Sequence, f_S: Sequence[float], in_target: Callable[[tuple], bool],
                    excess_loss: Callable[[tuple], float] | None = None) -> dict:
    """P(output in the convex-hull target) and the distance to the non-private f(S), over runs; with
    ``excess_loss`` (convex optimisation tasks) also the median / mean of L(S, y) - min_Y L(S, .)."""
    fS = np.array(f_S, dtype=float)
    err = np.array([np.linalg.norm(np.array([float(c) for c in y]) - fS) for y in outputs])
    hit = np.array([in_target(y) for y in outputs], dtype=float)
    out = {"runs": len(outputs), "in_target": float(hit.mean()), "median_error": float(np.median(err)),
           "mean_error": float(err.mean())}
    if excess_loss is not None:
        ex = np.array([excess_loss(y) for y in outputs])
        out.update(median_excess_loss=float(np.median(ex)), mean_excess_loss=float(ex.mean()))
    return out


def reach_probability(cutoff_law: dict) -> float:
    """P(h >= 1) under Algorithm 2's cutoff law: the probability that Algorithm 6 runs (else f(empty))."""
    return float(sum(p for h, p in cutoff_law.items() if h >= 1))


def elapsed(t0: float) -> float:
    return time.monotonic() - t0


def hull_interval_monotone(f: Callable, S: Sequence, lam: int) -> tuple[float, float]:
    """CH(f(N_lambda(S))) = [min, max] of f over the sorted prefixes/suffixes with >= n - lambda records
    (d = 1, f symmetric and non-decreasing in every record)."""
    recs = sorted(S)
    n = len(recs)
    keep = max(n - lam, 0)
    lo = min(float(evaluate_point(f, recs[:k], 1)[0]) for k in range(keep, n + 1))
    hi = max(float(evaluate_point(f, recs[n - k:], 1)[0]) for k in range(keep, n + 1))
    return lo, hi


def _draw(law: dict, runs: int, rng) -> list:
    keys = sorted(law)
    p = np.array([float(law[k]) for k in keys])
    return [keys[i] for i in rng.choice(len(keys), size=runs, p=p / p.sum())]


def compare_median(data_r: Sequence[float], *, n: int, grid_size: int, eps: float, delta: float, beta: float,
                   Cs: Sequence[float], sa_blocks: Sequence[int], runs: int, rng) -> dict:
    """Median of daily returns on a grid of ``grid_size`` points on [-1, 1]: Algorithm 4 vs Algorithm 2 (each C)
    vs sample-and-aggregate, P(in CH(f(N_lambda(S)))) at Algorithm 4's lambda and |y - f(S)|."""
    from ..evaluator import BlackBoxEvaluator, EvaluatorConfig
    from ..functions import median_on
    from .evaluator import ApproxConfig, ApproxEvaluator
    from .params import ApproxConstants

    grid = [round(-1 + 2 * i / (grid_size - 1), 10) for i in range(grid_size)]
    f = median_on(grid, empty=0.0)
    S = [float(x) for x in list(data_r)[:n]]
    fS = [f(S)]
    pure = BlackBoxEvaluator(EvaluatorConfig(eps, beta, tuple([g] for g in grid)), f, depth_method="monotone")
    lam = pure.params.locality
    lo, hi = hull_interval_monotone(f, S, lam)

    def inside(y):
        return lo <= float(y[0]) <= hi

    def approx(C):
        return ApproxEvaluator(ApproxConfig(eps, delta, beta, tuple([g] for g in grid), ApproxConstants(C=C)), f,
                               depth_method="monotone")

    rows = method_rows(pure, lam, approx, S, f, grid, fS, inside, eps=eps, Cs=Cs, sa_blocks=sa_blocks, runs=runs,
                       sa_runs=max(50, runs // 10), d=1, rng=rng)
    return {"task": "median of daily return % (goog)", "n": len(S), "d": 1, "Y": grid_size, "epsilon": eps,
            "delta": delta, "beta": beta, "lambda_target": lam, "lambda_target_rule": "Algorithm 4's lambda",
            "f_S": fS, "rows": rows}


def method_rows(pure, pure_lambda, approx, data, f, grid, fS, inside, *, eps, Cs, sa_blocks, runs, sa_runs, d,
                rng, excess_loss=None) -> list[dict]:
    """The comparison's rows on one task: Algorithm 4 (``pure``), Algorithm 2 at each constant C
    (``approx(C)`` builds the evaluator; its row reports P(h >= 1), how often Algorithm 6 runs) and
    sample-and-aggregate at each block count k <= n."""
    idx = pure.sample(data, runs, rng)
    rows = [dict(method="Algorithm 4 (pure)", lambda_claim=pure_lambda, K=pure.params.K,
                 **utility_summary([pure.extended[i] for i in idx], fS, inside, excess_loss))]
    for C in Cs:
        ap = approx(C)
        rows.append(dict(method=f"Algorithm 2 (approx, C={C:g})", lambda_claim=ap.params.locality, K=ap.params.K,
                         R=ap.params.R, p_algorithm6=reach_probability(ap.cutoff_law(len(data))),
                         guarantee="utility claimed (Theorem G.2 constant)" if C >= 160 else
                         "privacy only (C below the proof's value)",
                         **utility_summary(_draw(ap.law(data), runs, rng), fS, inside, excess_loss)))
    for k in sa_blocks:
        if k <= len(data):
            o = sample_and_aggregate(f, data, k, grid, eps, rng, sa_runs, d)
            rows.append(dict(method=f"sample-and-aggregate (k={k})", **utility_summary(o, fS, inside, excess_loss)))
    return rows


def compare_center(users: list, grid: Sequence[tuple], *, eps: float, delta: float, beta: float,
                   Cs: Sequence[float], sa_blocks: Sequence[int], runs: int, rng, task: str | None = None,
                   f: Callable | None = None, loss: Callable | None = None,
                   target_lambda: int | None = None) -> dict:
    """Center point with exact depth by enumeration (<= 16 records): d = 2 the Tukey center, d = 3 the
    direction-restricted one (``center-3d``); records are points or users' blocks (Corollary 6.8).
    ``f`` replaces the center (e.g. :func:`..functions.least_squares_on`, Corollary 6.9) and ``loss(S, y)``
    adds the excess empirical loss per row. The target is CH(f(N_lambda(S))) at lambda =
    min(``target_lambda`` or Algorithm 4's lambda, n)."""
    from ..depth import SubsetImage
    from ..evaluator import BlackBoxEvaluator, EvaluatorConfig
    from ..functions import center_3d_on, tukey_center_on
    from ..geometry import in_hull
    from .evaluator import ApproxConfig, ApproxEvaluator
    from .params import ApproxConstants

    d = len(grid[0])
    if f is None:
        f = tukey_center_on(list(grid)) if d == 2 else center_3d_on(list(grid))
    fS = [*f(users)]
    pure = BlackBoxEvaluator(EvaluatorConfig(eps, beta, tuple(grid)), f, depth_method="enumeration")
    lam_source = "Algorithm 4's" if target_lambda is None else "given"
    lam_uncapped = pure.params.locality if target_lambda is None else int(target_lambda)
    lam = min(lam_uncapped, len(users))
    img = SubsetImage(users, f, pure.domain, d=d)
    bits = int(img.images(len(users) - lam)[(1 << len(users)) - 1])
    hull_pts = [img.domain[j] for j in range(len(img.domain)) if bits >> j & 1]

    def inside(y):
        return in_hull(as_point(y, d), hull_pts)

    def approx(C):
        return ApproxEvaluator(ApproxConfig(eps, delta, beta, tuple(grid), ApproxConstants(C=C)), f,
                               depth_method="enumeration")

    excess = None
    if loss is not None:
        best = min(loss(users, y) for y in grid)

        def excess(y):
            return loss(users, y) - best

    rows = method_rows(pure, pure.params.locality, approx, users, f, grid, fS, inside, eps=eps, Cs=Cs,
                       sa_blocks=sa_blocks, runs=runs, sa_runs=max(30, runs // 20), d=d, rng=rng,
                       excess_loss=excess)
    out = {"task": task or f"user-level Tukey center (goog, {len(users)} users)", "n": len(users), "d": d,
           "Y": len(grid),
           "M": pure.params.M, "epsilon": eps, "delta": delta, "beta": beta, "lambda_target": lam,
           "lambda_target_rule": f"min({lam_source} lambda = {lam_uncapped}, n = {len(users)})", "f_S": fS,
           "rows": rows}
    if loss is not None:
        out["loss_bound"] = max(loss(users, y) for y in hull_pts) - best  # Corollary 6.9's max over N_lambda
    return out


def compare_center_3d(points: np.ndarray, grid: Sequence[tuple], *, eps: float, delta: float, beta: float,
                      Cs: Sequence[float], runs: int, rng) -> dict:
    """d = 3 QCO task (Section 6, center point with a direction-restricted Tukey depth): Algorithm 6 at
    (eps, delta) vs the exponential mechanism on Y at eps (pure), quality gap to max over Y."""
    from fractions import Fraction

    from .highdim import algorithm6_law

    D = directions_3d()
    Y = [tuple(Fraction(c) for c in p) for p in grid]
    q = [direction_depth(points, y, D) for y in Y]
    qmax = max(q)
    best = Y[int(np.argmax(q))]
    rows = []
    p = exponential_mechanism_probabilities(q, eps, 1.0)
    em = [Y[i] for i in rng.choice(len(Y), size=runs, p=p)]

    def row(name, outs, extra):
        gaps = np.array([qmax - direction_depth(points, y, D) for y in outs], dtype=float)
        dist = np.array([np.linalg.norm(np.array([float(c) for c in y]) - np.array([float(c) for c in best]))
                         for y in outs])
        return dict(method=name, runs=len(outs), mean_quality_gap=float(gaps.mean()),
                    q90_quality_gap=float(np.quantile(gaps, 0.9)), median_distance_to_argmax=float(np.median(dist)),
                    **extra)

    rows.append(row("exponential mechanism on Y (pure)", em, {}))
    for C in Cs:
        law = algorithm6_law(Y, q, eps, beta, delta, C)
        rows.append(row(f"Algorithm 6 (approx, C={C:g})", _draw(law, runs, rng),
                        {"guarantee": "utility claimed" if C >= 160 else "privacy only"}))
    return {"task": "3-D center point, direction-restricted Tukey depth (goog: return, range, volume)",
            "n": int(len(points)), "d": 3, "Y": len(Y), "epsilon": eps, "delta": delta, "max_quality": qmax,
            "rows": rows}


def center_cases_3d(data: np.ndarray, *, eps, delta, beta, runs, rng, say) -> list[dict]:
    """The d = 3 evaluator rows: Y = the box {-1, 1} x {1, 4} x {-1, 1} (|Y| = 8, |Y~| = 35 by Lemma 4.8),
    f = center-3d on (return %, range %, log volume); 16 days as records, and 12 users (blocks of days)."""
    grid = [(x, y, z) for x in (-1.0, 1.0) for y in (1.0, 4.0) for z in (-1.0, 1.0)]
    say("approx bench: 3-D center point, 16 days (Algorithm 2 vs 4, d = 3)")
    days = [tuple(float(v) for v in data[j, :3]) for j in range(16)]
    out = [compare_center(days, grid, eps=eps, delta=delta, beta=beta, Cs=(160.0, 1e-7), sa_blocks=(4, 8),
                          runs=runs, rng=rng, task="3-D center point (goog, 16 days)")]
    say("approx bench: user-level 3-D center point, 12 users (Algorithm 2 vs 4, d = 3)")
    blocks = np.array_split(np.arange(len(data)), 12)
    users = [[tuple(float(v) for v in data[j, :3]) for j in b] for b in blocks]
    out.append(compare_center(users, grid, eps=eps, delta=delta, beta=beta, Cs=(160.0, 1e-7), sa_blocks=(3, 6),
                              runs=runs, rng=rng, task="user-level 3-D center point (goog, 12 users)"))
    return out


GRID_2D = [(x, y) for x in (-1.0, 0.0, 1.0) for y in (1.0, 2.5, 4.0)]
#: (intercept, slope) of daily range % on |return %| (the full-data least-squares fit is (1.36, 0.95))
GRID_LS = [(a, b) for a in (1.0, 1.5, 2.0) for b in (0.5, 0.75, 1.0)]
GRID_3D_BOX = [(x, y, z) for x in (-1.0, 1.0) for y in (1.0, 4.0) for z in (-1.0, 1.0)]


def user_blocks(data: np.ndarray, users: int, columns) -> list:
    """``users`` users = consecutive blocks of days; a user's record is the list of its days' columns."""
    return [[tuple(float(c(data[j])) for c in columns) for j in b]
            for b in np.array_split(np.arange(len(data)), users)]


def user_ls_records(data: np.ndarray, users: int = 12) -> list:
    """User-level least-squares records: user i holds its days' (|return %|, range %) points."""
    return user_blocks(data, users, (lambda r: abs(r[0]), lambda r: r[1]))


def reach_cases(data: np.ndarray, *, eps, delta, beta, C, runs, rng, say) -> list[dict]:
    """d = 2, 3 tasks at a small C and a larger delta at which Algorithm 2's cutoff h is >= 1 with n <= 16
    (R(delta = 1e-6) = 29 > 16 keeps h <= 0 there whatever C): Algorithm 2 at C and at 160 beside Algorithm 4
    and sample-and-aggregate. The target lambda is Algorithm 2's at C capped at n; no utility is claimed at C."""
    from ..functions import least_squares_on, squared_loss
    from .evaluator import ApproxConfig, approx_parameters
    from .params import ApproxConstants

    def lam_at(grid, M):
        return approx_parameters(ApproxConfig(eps, delta, beta, tuple(grid), ApproxConstants(C=C)), M).locality

    def case(label, records, grid, **kw):
        from ..evaluator import BlackBoxEvaluator, EvaluatorConfig
        say(f"approx bench (reach, C={C:g}, delta={delta:g}): {label}")
        M = BlackBoxEvaluator(EvaluatorConfig(eps, beta, tuple(grid)), lambda T: grid[0]).params.M
        return compare_center(records, grid, eps=eps, delta=delta, beta=beta, Cs=(160.0, C), runs=runs, rng=rng,
                              task=label, target_lambda=lam_at(grid, M), **kw)

    days2 = [(float(data[j, 0]), float(data[j, 1])) for j in range(16)]
    out = [case("2-D Tukey center (goog, 16 days)", days2, GRID_2D, sa_blocks=(4, 8)),
           case("user-level 2-D Tukey center (goog, 12 users)", user_blocks(data, 12, (lambda r: r[0], lambda r: r[1])),
                GRID_2D, sa_blocks=(3, 6)),
           case("user-level least squares, range on |return| (goog, 12 users; Corollary 6.9)",
                user_ls_records(data, 12), GRID_LS, sa_blocks=(3, 6), f=least_squares_on(GRID_LS),
                loss=squared_loss)]
    if data.shape[1] >= 3:
        days3 = [tuple(float(v) for v in data[j, :3]) for j in range(16)]
        out.append(case("3-D center point (goog, 16 days)", days3, GRID_3D_BOX, sa_blocks=(4, 8)))
        out.append(case("user-level 3-D center point (goog, 12 users)",
                        user_blocks(data, 12, (lambda r: r[0], lambda r: r[1], lambda r: r[2])), GRID_3D_BOX,
                        sa_blocks=(3, 6)))
    return out


def run_comparison(data: np.ndarray, *, seed: int = 0, runs: int = 400, seconds: float = 300.0,
                   eps: float = 0.9, delta: float = 1e-6, beta: float = 0.1, progress=None,
                   reach_delta: float | None = 0.1, reach_C: float = 1e-7) -> dict:
    """The committed comparison (benchmarks/bench_blackbox_approx.py, `gtm blackbox bench --privacy approximate`).

    Seed rule: one numpy Generator from ``seed`` drives every case in order. data: (return %, range %) rows.
    The reach cases (:func:`reach_cases`, at ``reach_delta`` and ``reach_C``; None skips them) run last, so
    the earlier cases draw the same numbers with or without them.
    """
    say = progress or (lambda m: None)
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    crossings = [dict(d=d, C=C, **crossover(d, eps, delta, beta, C)) for d in (1, 2, 3) for C in (160.0, 1.0, 1e-3, 1e-5)]
    windows = [dict(d=d, C=C, windows=advantage_windows(d, eps, delta, beta, C)) for d in (1, 2, 3) for C in (1e-3, 1e-5)]
    cases, skipped = [], []
    r = [float(x) for x in data[:, 0]]
    # n <= 250: the monotone depth costs O(n^2) per cutoff h and Algorithm 2's law needs ~2R + 1 cutoffs
    for n, Y in ((250, 101), (120, 101), (250, 21), (250, 401)):
        if time.monotonic() - t0 > seconds:
            skipped.append(f"median n={n} |Y|={Y} (time budget)")
            continue
        say(f"approx bench: median n={n} |Y|={Y}")
        cases.append(compare_median(r, n=n, grid_size=Y, eps=eps, delta=delta, beta=beta, Cs=(160.0, 1e-5),
                                    sa_blocks=(10, 50), runs=runs, rng=rng))
    if time.monotonic() - t0 <= seconds:
        say("approx bench: user-level 2-D center point (12 users)")
        blocks = np.array_split(np.arange(len(data)), 12)
        users = [[(float(data[j, 0]), float(data[j, 1])) for j in b] for b in blocks]
        grid2 = [(x, y) for x in (-1.0, 0.0, 1.0) for y in (1.0, 2.5, 4.0)]
        cases.append(compare_center(users, grid2, eps=eps, delta=delta, beta=beta, Cs=(160.0, 1e-7),
                                    sa_blocks=(3, 6), runs=runs, rng=rng))
    else:
        skipped.append("2-D center point (time budget)")
    if time.monotonic() - t0 <= seconds and data.shape[1] >= 3:
        cases += center_cases_3d(data, eps=eps, delta=delta, beta=beta, runs=runs, rng=rng, say=say)
    else:
        skipped.append("d = 3 evaluator rows (time budget or no third column)")
    if time.monotonic() - t0 <= seconds and data.shape[1] >= 3:
        say("approx bench: 3-D center point QCO (Algorithm 6, d = 3)")
        pts3 = data[:200, :3]
        g3 = [(x, y, z) for x in (-1.0, 0.0, 1.0) for y in (1.0, 2.5, 4.0) for z in (-1.0, 0.0, 1.0)]
        qco3 = compare_center_3d(pts3, g3, eps=eps, delta=delta, beta=beta, Cs=(160.0, 1e-7), runs=runs, rng=rng)
    else:
        qco3 = None
        skipped.append("3-D center point QCO (time budget or no third column)")
    reach = []
    if reach_delta is not None and time.monotonic() - t0 <= seconds:
        reach = reach_cases(data, eps=eps, delta=reach_delta, beta=beta, C=reach_C, runs=runs, rng=rng, say=say)
    elif reach_delta is not None:
        skipped.append("reach cases (time budget)")
    return {"seed": seed, "runs": runs, "epsilon": eps, "delta": delta, "beta": beta, "crossover": crossings,
            "advantage_windows": windows, "cases": cases, "qco_3d": qco3,
            "reach_delta": reach_delta, "reach_C": reach_C, "reach_cases": reach,
            "skipped": skipped, "seconds": time.monotonic() - t0,
            "sampler": "outputs drawn from the exact float64 law (Algorithm 2) / the vectorised sampler (Algorithm 4)"}


def _machine_line(m) -> str:
    if not m:
        return ""
    lb, la = m["loadavg_before"], m["loadavg_after"]
    return (f" Machine: {m['platform']}, {m['cpus']} CPUs (shared), Python {m['python']}; load average (1/5/15 min) "
            f"before {lb[0]:.2f}/{lb[1]:.2f}/{lb[2]:.2f}, after {la[0]:.2f}/{la[1]:.2f}/{la[2]:.2f}.")


def write_comparison(result: dict, out_dir) -> list:
    """benchmarks/results/blackbox_approx.{json,md}."""
    import json
    from pathlib import Path

    from ...files import jsonable, write_atomic

    out_dir = Path(out_dir)
    js = out_dir / "blackbox_approx.json"
    write_atomic(js, json.dumps(jsonable(result), indent=2) + "\n")
    lines = ["# Approximate-DP black-box evaluator (Algorithm 2) vs the pure one (Algorithm 4)", "",
             f"Command: `{result.get('command', '')}`; seed rule: one numpy Generator from the seed drives every "
             f"case in order; eps = {result['epsilon']:g}, delta = {result['delta']:g}, beta = {result['beta']:g}; "
             f"{result['seconds']:.0f} s wall." + _machine_line(result.get("machine")), "",
             "## Crossover of lambda (constants counted): smallest |Y~| with lambda_approx < lambda_pure", "",
             "| d | C | H = log* at the crossover | log10 of |Y~| | lambda there |", "|---|---|---|---|---|"]
    for c in result["crossover"]:
        lines.append(f"| {c['d']} | {c['C']:g} | {c['H']} | {c['log10M']:.4g} | {c['lambda']:.4g} |")
    if result.get("advantage_windows"):
        lines += ["", "## Where lambda_approx < lambda_pure, regime by regime of H = log*|Y~| (small C)", "",
                  "lambda_approx jumps when log* increments, so the first crossing is not a threshold: Algorithm 2 "
                  "has the smaller lambda only on the listed windows (log10 |Y~| from .. to the regime's top).", "",
                  "| d | C | H | log10 \\|Y~\\| range of the regime | lambda_approx | lambda_pure at the top | "
                  "Algorithm 2 smaller from log10 \\|Y~\\| |", "|---|---|---|---|---|---|---|"]
        for w in result["advantage_windows"]:
            for r in w["windows"]:
                lines.append(f"| {w['d']} | {w['C']:g} | {r['H']} | ({r['log10M_low']:.4g}, {r['log10M_high']:.4g}] | "
                             f"{r['lambda_approx']:.4g} | {r['lambda_pure_at_high']:.4g} | "
                             + ("never" if r["wins_from_log10M"] is None else f"{r['wins_from_log10M']:.4g}") + " |")
    def case_lines(case):
        rule = case.get("lambda_target_rule", "Algorithm 4's lambda")
        loss = "loss_bound" in case
        out = ["", f"## {case['task']}: n = {case['n']}, d = {case['d']}, |Y| = {case['Y']}"
                   + (f" (|Y~| = {case['M']})" if "M" in case else "")
                   + f", target lambda = {case['lambda_target']} ({rule})", ""]
        if loss:
            out += [f"Corollary 6.9's bound for outputs in the target: excess loss <= {case['loss_bound']:.4g}.", ""]
        out += ["| method | lambda claimed | P(h >= 1) | P(in CH(f(N_lambda(S)))) | median error | mean error |"
                + (" median excess loss |" if loss else "") + " runs |",
                "|---|---|---|---|---|---|" + ("---|" if loss else "") + "---|"]
        for r in case["rows"]:
            reach = f"{r['p_algorithm6']:.3f}" if "p_algorithm6" in r else "-"
            out.append(f"| {r['method']} | {r.get('lambda_claim', '-')} | {reach} | {r['in_target']:.3f} | "
                       f"{r['median_error']:.4g} | {r['mean_error']:.4g} | "
                       + (f"{r['median_excess_loss']:.4g} | " if loss else "") + f"{r['runs']} |")
        return out

    for case in result["cases"]:
        lines += case_lines(case)
    q3 = result.get("qco_3d")
    if q3:
        lines += ["", f"## {q3['task']}: n = {q3['n']}, |Y| = {q3['Y']}, max quality over Y = {q3['max_quality']}", "",
                  "| method | mean quality gap | 90% quality gap | median distance to argmax | runs |",
                  "|---|---|---|---|---|"]
        for r in q3["rows"]:
            lines.append(f"| {r['method']} | {r['mean_quality_gap']:.3g} | {r['q90_quality_gap']:.3g} | "
                         f"{r['median_distance_to_argmax']:.3g} | {r['runs']} |")
    if result.get("reach_cases"):
        lines += ["", f"## Reach cases: Algorithm 2 at C = {result['reach_C']:g}, delta = {result['reach_delta']:g} "
                      "(Algorithm 6 actually runs)", "",
                  "Privacy (eps, delta) holds for every C; no utility guarantee is claimed at this C (the proof needs "
                  "C >= 160 and more). delta = 1e-6 would give R = 29 > n, so h <= 0 whatever C at n <= 16. "
                  "P(h >= 1) is the exact probability (cutoff law) that Algorithm 6 runs instead of f(empty)."]
        for case in result["reach_cases"]:
            lines += case_lines(case)
    lines += ["", "Not run: " + ("; ".join(result["skipped"]) or "nothing (every case ran)"), ""]
    md = out_dir / "blackbox_approx.md"
    write_atomic(md, "\n".join(lines))
    return [js, md]
