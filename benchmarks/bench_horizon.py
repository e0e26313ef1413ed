"""The horizon planner (gtm_core.planners.horizon) on the Table 1 benchmark grid, against theorem21.

    python -m benchmarks.bench_horizon [--quick] [--out benchmarks/results/horizon.json] [--n-sim N]

Per cell (eps in {0.5, 1, 2}, eps_t/eps in {0.05, 0.1, 0.25}, p* in {0.1, 0.5, 0.9}, T in {10, 100, 1000},
beta = 0.05; theorem21 at theta = 1, gamma = 1.5 as in `gtm bench`):

* theorem21: claimed p_bar at T and expected evaluations over the horizon (sum_t E[lambda_t], Lemma 12(2),
  gtm_core.planners.exact_tails.expected_evaluations: a run that never halts, i.e. the null stream);
* horizon "max p_bar": `tune(max_evaluations = theorem21's)`: the certified p_bar (arb certificate of the
  union bound inside the eta_1 integral), its expected evaluations, its certified failure probability;
* horizon "min cost": `tune(p_bar = theorem21's claimed)`: its expected evaluations / theorem21's;
* ratios as `gtm bench` computes them (audits.bench.run.run_cell): certified p_bar / Corollary 30 ceiling
  (F.corollary30_rejection_threshold at Lambda_0 = F.corollary30_Lambda0(eps_1, eps, 0, beta, T)) and
  expected evaluations per step / Theorem 31 floor (F.theorem31_expected_evaluations(min(p*, 1-p*), eps_1,
  eps, 0, beta));
* measured p_bar of the max-p_bar design: audits.bench.run.gtm_critical_samples (n runs of constant streams,
  the order statistic at beta, with its distribution-free 95% interval), and whether measured >= certified.

Figures are CPU seconds of this process (time.process_time) next to wall seconds; the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from audits.bench.run import FULL_GRID, MEDIAN_CELL, gtm_critical_samples, quantile_interval  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402
from gtm_core import GTMConfig, formulas as F, make_plan  # noqa: E402
from gtm_core.planners.exact_tails import expected_evaluations  # noqa: E402
from gtm_core.planners.horizon_problem import HorizonProblem, NotAchievable  # noqa: E402
from gtm_core.planners.horizon_tune import tune  # noqa: E402

BETA = 0.05


def theorem21_point(eps: float, eps_1: float, p_star: float, T: int) -> dict:
    cfg = GTMConfig.from_dict({"gtm": {"parameterization": "theorem21", "epsilon": eps, "theta": 1.0, "gamma": 1.5,
                                       "beta": BETA},
                               "stream": {"eps_t": eps_1, "p_star": p_star, "horizon": T}})
    plan = make_plan(cfg)
    ev = math.fsum(expected_evaluations(plan, t) for t in range(1, T + 1))
    return {"p_bar": plan.step(T).p_bar, "expected_evaluations": ev}


def measured_p_bar(config, T: int, n: int, seed: int) -> dict:
    plan = make_plan(config)
    rng = np.random.default_rng(seed)
    s = gtm_critical_samples(plan, T, n, rng, n_eval=min(n, 2000))
    k = int(math.floor(n * BETA))
    lo, hi = quantile_interval(s.R, BETA)
    return {"p_bar": float(min(s.R[k], 1.0)), "ci": [min(lo, 1.0), min(hi, 1.0)], "n": n,
            "evals_per_step_mean_sim": float(np.mean(s.evals_per_step))}


def _design(res) -> dict:
    d = res.design
    return {"s": d.s, "c": d.c, "rho": d.rho, "theta": d.theta, "p_bar": d.p_bar,
            "expected_evaluations": res.expected_evaluations,
            "certified_failure_upper": res.certificate.failure_upper, "certificate": res.certificate.to_dict(),
            "tune_seconds": res.seconds}


def run_cell(eps: float, ratio: float, p_star: float, T: int, n_sim: int, seed: int) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    eps_1 = eps * ratio
    problem = HorizonProblem(epsilon=eps, eps_t=eps_1, p_star=p_star, T=T, beta=BETA)
    t21 = theorem21_point(eps, eps_1, p_star, T)
    L0 = float(F.corollary30_Lambda0(eps_1, eps, 0.0, BETA, T))
    ceiling = float(F.corollary30_rejection_threshold(p_star, L0))
    floor = float(F.theorem31_expected_evaluations(min(p_star, 1 - p_star), eps_1, eps, 0.0, BETA))
    cell = {"epsilon": eps, "ratio": ratio, "eps_1": eps_1, "p_star": p_star, "T": T, "beta": BETA,
            "theorem21": t21, "corollary30_p_bar_ceiling": ceiling, "theorem31_evals_floor": floor}
    try:
        res_b = tune(problem, max_evaluations=t21["expected_evaluations"])
        b = _design(res_b)
        b["p_bar_over_theorem21"] = b["p_bar"] / t21["p_bar"]
        b["p_bar_over_corollary30"] = b["p_bar"] / ceiling
        b["evals_over_theorem21"] = b["expected_evaluations"] / t21["expected_evaluations"]
        b["evals_per_step_over_theorem31"] = b["expected_evaluations"] / T / floor
        b["measured"] = measured_p_bar(res_b.config, T, n_sim, seed)
        b["measured_at_least_certified"] = b["measured"]["p_bar"] >= b["p_bar"]
        cell["max_p_bar"] = b
    except NotAchievable as exc:
        cell["max_p_bar"] = {"error": str(exc), "best": exc.best}
    try:
        res_a = tune(problem, p_bar=t21["p_bar"])
        a = _design(res_a)
        a["evals_over_theorem21"] = a["expected_evaluations"] / t21["expected_evaluations"]
        a["evals_per_step_over_theorem31"] = a["expected_evaluations"] / T / floor
        a["p_bar_over_corollary30"] = a["p_bar"] / ceiling
        cell["min_cost"] = a
    except NotAchievable as exc:
        cell["min_cost"] = {"error": str(exc), "best": exc.best}
    cell["wall_seconds"] = time.perf_counter() - t0
    cell["cpu_seconds"] = time.process_time() - c0
    return cell


def summary(cells: list[dict]) -> dict:
    ok = [c for c in cells if "p_bar" in c.get("max_p_bar", {})]
    okA = [c for c in cells if "expected_evaluations" in c.get("min_cost", {})]
    med = next((c for c in cells if all(c[k if k != "T" else "T"] == v for k, v in
                                         {"epsilon": MEDIAN_CELL["epsilon"], "ratio": MEDIAN_CELL["ratio"],
                                          "p_star": MEDIAN_CELL["p_star"], "T": MEDIAN_CELL["T"]}.items())), None)
    out = {
        "cells": len(cells),
        "certified_p_bar_at_least_theorem21": sum(c["max_p_bar"]["p_bar"] >= c["theorem21"]["p_bar"] for c in ok),
        "measured_at_least_certified": sum(bool(c["max_p_bar"]["measured_at_least_certified"]) for c in ok),
        "cells_with_max_p_bar": len(ok),
        "p_bar_gain_min": min((c["max_p_bar"]["p_bar_over_theorem21"] for c in ok), default=None),
        "p_bar_gain_median": float(np.median([c["max_p_bar"]["p_bar_over_theorem21"] for c in ok])) if ok else None,
        "evals_ratio_at_theorem21_p_bar_max": max((c["min_cost"]["evals_over_theorem21"] for c in okA), default=None),
        "evals_ratio_at_theorem21_p_bar_median": (float(np.median([c["min_cost"]["evals_over_theorem21"]
                                                                   for c in okA])) if okA else None),
        "p_bar_over_corollary30_range": ([min(c["max_p_bar"]["p_bar_over_corollary30"] for c in ok),
                                          max(c["max_p_bar"]["p_bar_over_corollary30"] for c in ok)] if ok else None),
        "evals_per_step_over_theorem31_range": ([min(c["min_cost"]["evals_per_step_over_theorem31"] for c in okA),
                                                 max(c["min_cost"]["evals_per_step_over_theorem31"] for c in okA)]
                                                if okA else None),
    }
    if med is not None and "p_bar" in med.get("max_p_bar", {}):
        b, a = med["max_p_bar"], med.get("min_cost", {})
        out["median_cell"] = {
            "theorem21_p_bar": med["theorem21"]["p_bar"],
            "theorem21_expected_evaluations": med["theorem21"]["expected_evaluations"],
            "certified_p_bar": b["p_bar"], "gain": b["p_bar_over_theorem21"], "gain_target": 5.0,
            "gain_met": b["p_bar_over_theorem21"] >= 5.0,
            "its_evals_over_theorem21": b["evals_over_theorem21"],
            "steps": {str(t): {"c": b["c"], "rho": b["rho"], "p_bar": b["p_bar"], "s": b["s"]} for t in (1, 10, 100)},
            "theta": b["theta"], "certified_failure_upper": b["certified_failure_upper"],
            "measured_p_bar": b["measured"]["p_bar"],
            "evals_ratio_at_theorem21_p_bar": a.get("evals_over_theorem21"), "evals_ratio_target": 0.03,
            "evals_ratio_met": (a.get("evals_over_theorem21") or math.inf) <= 0.03,
            "min_cost_design": {k: a.get(k) for k in ("s", "c", "rho", "theta", "p_bar", "certified_failure_upper")},
        }
    return out


def merge(out_path: Path, src_path: Path) -> int:
    """Replace the cells of out_path that src_path also has (same eps, ratio, p*, T) and redo the summary."""
    doc = json.loads(out_path.read_text())
    src = json.loads(src_path.read_text())
    key = lambda c: (c["epsilon"], c["ratio"], c["p_star"], c["T"])  # noqa: E731
    new = {key(c): c for c in src["results"]}
    cells = [new.pop(key(c), c) for c in doc["results"]] + list(new.values())
    doc["results"] = sorted(cells, key=key)
    doc["summary"] = summary([c for c in cells if "error" not in c])
    doc["merged_from"] = {"path": str(src_path), "cells": len(src["results"]), "machine": src.get("machine")}
    doc["cells_done"] = len(cells)
    doc["complete"] = len(cells) >= doc.get("cells_total", len(cells))
    tmp = out_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    tmp.replace(out_path)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the median cell only")
    ap.add_argument("--out", default="benchmarks/results/horizon.json")
    ap.add_argument("--n-sim", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--only-p-star", type=float, default=None,
                    help="re-run only the cells with this p* and replace them in --out (keeps the others)")
    ap.add_argument("--merge-from", default=None,
                    help="replace the cells of --out that PATH also has by PATH's (no new runs)")
    args = ap.parse_args(argv)
    if args.merge_from:
        return merge(Path(args.out), Path(args.merge_from))
    if args.quick:
        cells = [(MEDIAN_CELL["epsilon"], MEDIAN_CELL["ratio"], MEDIAN_CELL["p_star"], MEDIAN_CELL["T"])]
    else:
        g = FULL_GRID
        # the median cell first, then the grid
        cells = [(MEDIAN_CELL["epsilon"], MEDIAN_CELL["ratio"], MEDIAN_CELL["p_star"], MEDIAN_CELL["T"])]
        cells += [(e, r, p, T) for e in g["epsilon"] for r in g["ratio"] for p in g["p_star"] for T in g["T"]
                  if (e, r, p, T) != cells[0]]
    out_path = Path(args.out)
    results = []
    kept = []
    if args.only_p_star is not None:
        cells = [c for c in cells if c[2] == args.only_p_star]
        if out_path.exists():
            old = json.loads(out_path.read_text())["results"]
            kept = [c for c in old if c.get("p_star") != args.only_p_star]
    t0 = time.perf_counter()
    for i, (e, r, p, T) in enumerate(cells, start=1):
        try:
            cell = run_cell(e, r, p, T, args.n_sim, args.seed + i)
        except Exception as exc:  # noqa: BLE001 - one failing cell is recorded, the run goes on
            cell = {"epsilon": e, "ratio": r, "p_star": p, "T": T, "error": f"{type(exc).__name__}: {exc}"}
        results.append(cell)
        mb = cell.get("max_p_bar", {})
        mc = cell.get("min_cost", {})
        print(f"[{i}/{len(cells)} {time.perf_counter() - t0:7.0f}s] eps={e} ratio={r} p*={p} T={T}: "
              f"p_bar {mb.get('p_bar', float('nan')):.4g} (x{mb.get('p_bar_over_theorem21', float('nan')):.3g} thm21), "
              f"evals at thm21 p_bar x{mc.get('evals_over_theorem21', float('nan')):.3g}, "
              f"cpu {cell.get('cpu_seconds', 0):.1f}s" + (f" ERROR {cell['error']}" if "error" in cell else ""),
              file=sys.stderr, flush=True)
        doc = {"benchmark": "horizon", "machine": machine_info(), "beta": BETA, "theorem21_theta": 1.0,
               "theorem21_gamma": 1.5, "n_sim": args.n_sim, "seed": args.seed,
               "complete": i == len(cells), "cells_done": i + len(kept), "cells_total": len(cells) + len(kept),
               "summary": summary([c for c in kept + results if "error" not in c]),
               "results": sorted(kept + results, key=lambda c: (c["epsilon"], c["ratio"], c["p_star"], c["T"]))}
        if kept:
            doc["note"] = (f"cells with p* = {args.only_p_star:g} re-run after the direction fix "
                           f"(both directions searched); the others are from the first run")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=float) + "\n")
        tmp.replace(out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
