"""Utility of the black-box evaluator on real data (Theorems 2.6/2.7, Section 6), against the
sample-and-aggregate baseline at the same epsilon.

Data: matplotlib's bundled sample ``goog.npz`` (1047 daily Google prices, 2004-2008; a dataset
shipped with a well-kept library). Derived real columns: daily return r = 100 (close/open - 1) and
daily range g = 100 (high - low)/open.

Cases:
* median and mean of r (n = 1047 records, Y = 101-point grid on [-1, 1], step 0.02, eps = 1): exact depth by
  the monotone d = 1 method (both functions are symmetric and non-decreasing).
* least-squares slope of g on |r| and the 2-D Tukey center point of (r, g), user-level
  (Section 6.3): 12 users = 12 blocks of consecutive trading days; exact depth by enumeration of
  the 2^12 user subsets. With n = 12 users the cutoff h is >= 1 only for large eps: eps = 10 for the
  slope (d = 1, K = 7), eps = 20 for the center point (d = 2, |Y~| = 37: K = 7).

Measured per case: P(output in CH(f(N_lambda(S)))) at the paper's lambda = ceil(K + 2R + 1) vs
1 - beta; per run the smallest lambda with the output in CH(f(N_lambda(S))); |output - f(S)|; the
same error for sample-and-aggregate (random partition into k blocks, f on each block, exponential
mechanism at eps over Y with the rank / Tukey depth among block outputs as quality, sensitivity 1).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig, SubsetImage
from gtm_core.blackbox.depth import evaluate_point
from gtm_core.blackbox.functions import mean_on, median_on, slope_on, tukey_center_on
from gtm_core.blackbox.geometry import as_point, in_hull
from gtm_core.blackbox.approx.compare import sample_and_aggregate_indices as sample_and_aggregate
from gtm_core.files import jsonable, write_atomic

from ..plotting import PALETTE, figure, save_png

DATA_NAME = "matplotlib sample_data goog.npz"


def load_goog() -> np.ndarray:
    """(return %, range %) per trading day from matplotlib's bundled goog.npz."""
    from matplotlib import cbook

    with cbook.get_sample_data("goog.npz") as f:  # numpy NpzFile
        d = f["price_data"]
    r = 100 * (d["close"] / d["open"] - 1)
    g = 100 * (d["high"] - d["low"]) / d["open"]
    return np.stack([r, g], axis=1)


def goog_with_volume() -> np.ndarray:
    """(return %, range %, standardised log volume) per trading day from matplotlib's goog.npz: the
    approximate-DP comparison's data (the first two columns are :func:`load_goog`)."""
    from matplotlib import cbook

    with cbook.get_sample_data("goog.npz") as f:
        vol = np.log(f["price_data"]["volume"].astype(float))
    return np.column_stack([load_goog(), (vol - vol.mean()) / vol.std()])


def smallest_lambdas_1d(ev, S, points) -> list[int]:
    """For each point y: the smallest lambda with y in CH(f(N_lambda(S))) (monotone d = 1).

    CH(f(N_lambda(S))) = [lo_lambda, hi_lambda] with lo_lambda = min_{m >= n - lambda} f(bottom m),
    hi_lambda = max_m f(top m) (f symmetric, non-decreasing); computed incrementally in lambda.
    """
    recs = sorted(S)
    n = len(recs)
    ys = [as_point(y)[0] for y in points]
    out = [n + 1] * len(ys)
    lo = hi = None
    for lam in range(n + 1):
        m = n - lam
        a = evaluate_point(ev.f, recs[:m], 1)[0]
        b = evaluate_point(ev.f, recs[n - m:], 1)[0]
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
        for i, y in enumerate(ys):
            if out[i] > n and lo <= y <= hi:
                out[i] = lam
        if all(o <= n for o in out):
            break
    return out


def smallest_lambdas_enum(img: SubsetImage, points) -> list[int]:
    n = img.n
    full = (1 << n) - 1
    res = []
    cache = {}
    for y in points:
        yp = as_point(y, img.d)
        lam = n + 1
        for k in range(n + 1):
            if k not in cache:
                cache[k] = int(img.images(n - k)[full])
            bits = cache[k]
            pts = [img.domain[j] for j in range(len(img.domain)) if bits >> j & 1]
            if in_hull(yp, pts):
                lam = k
                break
        res.append(lam)
    return res




def _case(name, ev: BlackBoxEvaluator, S, f_S, runs, rng, lam_fn, sa_ks, sa_runs, notes):
    t0 = time.monotonic()
    idx = ev.sample(S, runs, rng)
    pts = ev.extended
    lam_per_point = lam_fn(pts)
    lam_theory = ev.params.locality
    lam_runs = np.array([lam_per_point[i] for i in idx])
    fS = np.array(f_S, dtype=float)
    err = np.array([np.linalg.norm(np.array([float(c) for c in pts[i]]) - fS) for i in idx])
    sa = []
    for k in sa_ks:
        if k > len(S) or k < 1:
            continue
        o = sample_and_aggregate(ev.f, S, k, ev.domain, ev.params.epsilon, rng, sa_runs, ev.config.d)
        dom = [np.array([float(c) for c in p]) for p in ev.domain]
        e = np.array([np.linalg.norm(dom[i] - fS) for i in o])
        sa.append({"blocks": k, "median_error": float(np.median(e)), "mean_error": float(e.mean()), "runs": sa_runs})
    p = ev.params
    return {
        "case": name, "n": len(S), "d": ev.config.d, "epsilon": p.epsilon, "beta": p.beta, "M": p.M, "K": p.K,
        "R": p.R, "lambda_theory": lam_theory, "runs": runs, "f_S": [float(x) for x in np.atleast_1d(fS)],
        "in_hull_at_lambda_theory": float(np.mean(lam_runs <= lam_theory)), "target_1_minus_beta": 1 - p.beta,
        "smallest_lambda_median": float(np.median(lam_runs)),
        "smallest_lambda_q90": float(np.quantile(lam_runs, 0.9)),
        "smallest_lambda_q_1_minus_beta": float(np.quantile(lam_runs, 1 - p.beta)),
        "median_error": float(np.median(err)), "mean_error": float(err.mean()),
        "sample_and_aggregate": sa, "seconds": time.monotonic() - t0, "notes": notes,
    }


def run_utility(*, seconds: float = 600.0, runs: int = 2000, seed: int = 0, progress=None) -> dict:
    say = progress or (lambda m: None)
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    data = load_goog()
    r = [float(x) for x in data[:, 0]]
    grid1 = [round(-1 + 0.02 * i, 10) for i in range(101)]
    cases = []
    for fname, factory in (("median", median_on), ("mean", mean_on)):
        if time.monotonic() - t0 > seconds:
            break
        f = factory(grid1, empty=0.0)
        cfg = EvaluatorConfig(1.0, 0.1, tuple([x] for x in grid1))
        ev = BlackBoxEvaluator(cfg, f, depth_method="monotone")
        say(f"blackbox bench: {fname} of daily return (n={len(r)})")
        cases.append(_case(f"{fname} of daily return % (goog)", ev, r, [f(r)], runs, rng,
                           lambda pts, ev=ev: smallest_lambdas_1d(ev, r, pts), [5, 10, 20, 50, 100], 300,
                           "exact depth: monotone d = 1 method; eps = 1"))
    # user-level cases: 12 users = 12 blocks of consecutive days
    blocks = np.array_split(np.arange(len(data)), 12)
    users = [[(abs(float(data[j, 0])), float(data[j, 1])) for j in b] for b in blocks]
    grid_s = [round(0.25 * i, 10) for i in range(9)]
    if time.monotonic() - t0 <= seconds:
        f = slope_on(grid_s, empty=0.0)
        cfg = EvaluatorConfig(10.0, 0.1, tuple([x] for x in grid_s))
        ev = BlackBoxEvaluator(cfg, f, depth_method="enumeration")
        say("blackbox bench: least-squares slope of range on |return| (12 users)")
        img = SubsetImage(users, f, ev.domain, d=1)
        cases.append(_case("LS slope of daily range on |return| (goog, 12 users)", ev, users, [f(users)], runs, rng,
                           lambda pts: smallest_lambdas_enum(img, pts), [2, 3, 4, 6, 12], 300,
                           "user-level (Section 6.3); exact depth by enumeration of 2^12 user subsets; eps = 10 "
                           "(h >= 1 needs n > K + R with n = 12)"))
    users2 = [[(float(data[j, 0]), float(data[j, 1])) for j in b] for b in blocks]
    grid2 = [(x, y) for x in (-1.0, 0.0, 1.0) for y in (1.0, 2.5, 4.0)]
    if time.monotonic() - t0 <= seconds:
        f = tukey_center_on(grid2)
        cfg = EvaluatorConfig(20.0, 0.1, tuple(grid2))
        ev = BlackBoxEvaluator(cfg, f, depth_method="enumeration")
        say(f"blackbox bench: 2-D Tukey center point (12 users, |Y~| = {ev.params.M})")
        img = SubsetImage(users2, f, ev.domain, d=2)
        cases.append(_case("Tukey center of (return %, range %) (goog, 12 users)", ev, users2, [*f(users2)], runs,
                           rng, lambda pts: smallest_lambdas_enum(img, pts), [2, 3, 4, 6, 12], 100,
                           "user-level center point (Corollary 6.8); Y = 3x3 grid; exact depth by enumeration; eps = 20 "
                           "(d = 2 needs K = ceil(3(Delta + 1)) < 12 users)"))
    return {"data": DATA_NAME, "seed": seed, "runs": runs, "seconds": time.monotonic() - t0, "cases": cases,
            "sampler": "float64 numpy reference sampler (not a hardened deployment)",
            "command": f"python -m audits.cli blackbox bench --runs {runs} --seed {seed}"}


def write_utility(result: dict, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    js = out_dir / "blackbox_utility.json"
    write_atomic(js, json.dumps(jsonable(result), indent=2) + "\n")
    lines = ["# Black-box evaluator: utility on real data", "",
             f"Data: {result['data']}. {result['sampler']}. Regenerate: `{result['command']}` "
             "(or `python -m benchmarks.bench_blackbox_utility`).", "",
             "| case | n | eps | beta | lambda (paper) | P(out in CH(f(N_lambda))) | 1-beta | "
             "smallest lambda: median / q(1-beta) | "
             "median error | best sample-and-aggregate median error (blocks) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in result["cases"]:
        best = min(c["sample_and_aggregate"], key=lambda s: s["median_error"]) if c["sample_and_aggregate"] else None
        sa = f"{best['median_error']:.3f} ({best['blocks']})" if best else "-"
        lines.append(f"| {c['case']} | {c['n']} | {c['epsilon']:g} | {c['beta']:g} | {c['lambda_theory']} | "
                     f"{c['in_hull_at_lambda_theory']:.4f} | {c['target_1_minus_beta']:.2f} | "
                     f"{c['smallest_lambda_median']:g} / {c['smallest_lambda_q_1_minus_beta']:g} | "
                     f"{c['median_error']:.3f} | {sa} |")
    lines += ["", "Sample-and-aggregate, all block counts:", ""]
    for c in result["cases"]:
        lines.append(f"- {c['case']}: " + ", ".join(f"k={s['blocks']}: {s['median_error']:.3f}"
                                                    for s in c["sample_and_aggregate"]))
    lines += ["", "Notes: " + "; ".join(f"{c['case']}: {c['notes']}" for c in result["cases"]), ""]
    md = out_dir / "blackbox_utility.md"
    write_atomic(md, "\n".join(lines))
    paths = [js, md]
    with figure(figsize=(7, 3)) as (fig, ax):
        names = [c["case"].split(" (")[0] for c in result["cases"]]
        x = np.arange(len(names))
        ax.bar(x - 0.2, [c["median_error"] for c in result["cases"]], 0.4, label="black-box evaluator",
               color=PALETTE[0])
        ax.bar(x + 0.2, [min((s["median_error"] for s in c["sample_and_aggregate"]), default=0)
                         for c in result["cases"]], 0.4, label="sample-and-aggregate (best k)", color=PALETTE[1])
        ax.set_xticks(x, names, fontsize=7)
        ax.set_ylabel("median |output - f(S)|")
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(save_png(fig, out_dir / "blackbox_utility.png", dpi=120))
    return paths
