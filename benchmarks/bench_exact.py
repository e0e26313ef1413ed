"""Exact engine speed and the exact-calibration evaluation ratio grid.

    python -m benchmarks.bench_exact [--quick]
    python -m benchmarks.bench_exact --ratios-only   # the planners' ratio grid only (seconds)
    python -m benchmarks.bench_exact --small-c-only  # c = 2 vs c = 1019 horizon designs (exact_small_c.json)

Figures (CPU seconds of this process, time.process_time, so other load on the
machine inflates wall time but not these numbers):
* fast mode, T = 100 steps of examples/default.toml, all 200 transcript probabilities
  to >= 20 significant digits (dps=20), for a constant and a mixed stream;
* certified mode (rigorous arb enclosures), T = 10, dps=20: time and the smallest number of
  certified significant digits (the reported widths);
* exact per-step Type I / Type II probabilities and the exact rejection threshold vs p_bar;
* the expected-evaluation ratios exact/theorem21 and exact_noise/theorem21 over gamma in {1.25, 1.5, 2},
  t in {1, 10, 100, 1000}, p* in {0.1, 0.5, 0.9} (beta = 0.05, eps = 1, theta = 1, eps_t = 0.1)
  plus the flipped example (p* = 0.95, eps_t = 0.01).
Writes benchmarks/results/exact.json with machine information.
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

from benchmarks.machine import machine_info  # noqa: E402
from gtm_core import GTMConfig, make_plan  # noqa: E402
from gtm_core.exact import exact_rejection_threshold, step_error_probabilities, transcript_distribution  # noqa: E402
from gtm_core.planners.exact_tails import expected_evaluations  # noqa: E402


def _dist_figure(plan, p, dps, certified):
    d = transcript_distribution(plan, p, dps=dps, certified=certified)
    tot = d.total()
    return {
        "T": len(p),
        "dps": dps,
        "certified": certified,
        "cpu_seconds": round(d.seconds, 3),
        "nodes": d.nodes,
        "min_significant_digits": round(d.min_significant_digits(), 2),
        "sum_minus_one": float(tot.value - 1),
        "sum_error_bound": float(tot.error),
    }


def speed(quick: bool) -> list[dict]:
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    flipped = make_plan(GTMConfig.load("examples/flipped.toml"))
    T = 20 if quick else 100
    mixed = [(0.3, 0.01, 0.45, 0.2, 0.02)[i % 5] for i in range(T)]
    rows = []
    for name, pl, p in (
        ("default p=0.3", plan, [0.3] * T),
        ("default mixed", plan, mixed),
        ("flipped p=0.93", flipped, [0.93] * T),
    ):
        r = _dist_figure(pl, p, 20, False)
        r["case"] = name
        rows.append(r)
        print(r, file=sys.stderr)
    for name, pl, p in (("default p=0.3", plan, [0.3] * 10), ("default mixed", plan, mixed[:10])):
        r = _dist_figure(pl, p, 20, True)
        r["case"] = name
        rows.append(r)
        print(r, file=sys.stderr)
    return rows


def ratio_grid() -> list[dict]:
    rows = []
    base_g = {"epsilon": 1.0, "theta": 1.0, "beta": 0.05}
    cases = [(g, ps, 0.1) for g in (1.25, 1.5, 2.0) for ps in (0.1, 0.5, 0.9)]
    cases += [(g, 0.95, 0.01) for g in (1.25, 1.5, 2.0)]
    for gamma, p_star, eps_t in cases:
        stream = {"eps_t": eps_t, "p_star": p_star, "horizon": 1000}
        c21 = GTMConfig.from_dict({"gtm": dict(base_g, gamma=gamma), "stream": stream})
        cx = GTMConfig.from_dict({"gtm": dict(base_g, gamma=gamma, parameterization="exact"), "stream": stream})
        cn = GTMConfig.from_dict({"gtm": dict(base_g, gamma=gamma, parameterization="exact_noise"),
                                  "stream": stream})
        p21, px, pn = make_plan(c21), make_plan(cx), make_plan(cn)
        for t in (1, 10, 100, 1000):
            e21 = expected_evaluations(p21, t)
            rows.append(
                {
                    "gamma": gamma,
                    "p_star": p_star,
                    "eps_t": eps_t,
                    "t": t,
                    "s": px.step(t).s,
                    "c_theorem21": p21.step(t).c,
                    "c_exact": px.step(t).c,
                    "ratio": round(expected_evaluations(px, t) / e21, 4),
                    "c_exact_noise": pn.step(t).c,
                    "ratio_exact_noise": round(expected_evaluations(pn, t) / e21, 4),
                    "same_p_bar": pn.step(t).p_bar == p21.step(t).p_bar,
                }
            )
    return rows


def planning_speed(T: int = 1000) -> dict:
    """Wall milliseconds per planned step, steps 1..T of the running example, fresh caches
    (theorem21, exact, exact_noise)."""
    from gtm_core import planners

    out = {}
    for name in ("theorem21", "exact", "exact_noise"):
        cfg = GTMConfig.load("examples/default.toml").with_changes(parameterization=name, horizon=T)
        planners.clear_caches()
        t0 = time.perf_counter()
        plan = make_plan(cfg)
        for t in range(1, T + 1):
            plan.step(t)
        out[name] = round((time.perf_counter() - t0) / T * 1e3, 3)
    return {"T": T, "ms_per_step": out}


def print_ratio_grid(grid: list[dict]) -> None:
    print("expected evaluations vs theorem21 (t=1,10,100,1000): c_21->c_exact ratio_exact | c_exact_noise ratio_exact_noise")
    for i in range(0, len(grid), 4):
        g = grid[i]
        cells = "  ".join(f"{r['c_theorem21']}->{r['c_exact']} {r['ratio']:.3f} | {r['c_exact_noise']} "
                          f"{r['ratio_exact_noise']:.3f}" for r in grid[i:i + 4])
        print(f"  gamma={g['gamma']:<5} p*={g['p_star']:<5} eps_t={g['eps_t']:<5} s={g['s']:+d}  {cells}")


def accuracy() -> list[dict]:
    """Exact per-step Type I (at p_bar) / Type II (at p*) probabilities and the exact threshold."""
    rows = []
    for path in ("examples/default.toml", "examples/flipped.toml"):
        plan = make_plan(GTMConfig.load(path))
        for t in (1, 10, 100):
            e = step_error_probabilities(plan, t, dps=15)
            thr = exact_rejection_threshold(plan, t, dps=12)
            rows.append(
                {
                    "config": path,
                    "t": t,
                    "s": plan.step(t).s,
                    "type_I_at_p_bar": float(e["type_I"].value),
                    "type_II_at_p_star": float(e["type_II"].value),
                    "beta_I": e["beta_I"],
                    "p_bar": thr["p_bar"],
                    "p_exact": thr["p_exact"],
                    "p_star": plan.step(t).p_star,
                }
            )
            print(rows[-1], file=sys.stderr)
    return rows


SMALL_C_STREAMS = ([0.5245, 0.5245, 0.05], [0.5, 0.5, 1e-6], [0.3, 0.3, 0.3], [0.5, 0.001])


def small_c_speed(with_old: bool = True) -> list[dict]:
    """3-step (and one 2-step) transcripts at 10 digits of the c = 2 design (examples/horizon.toml,
    c + 1 - sigma = 0.17) and of the c = 1019 design of docs/horizon.md, with the engine's dispatch
    (gtm_core/exact/closed_form.py) and, for comparison, with StepEval alone (SHAPE_SWITCH off)."""
    from gtm_core.exact import closed_form

    base = GTMConfig.load("examples/horizon.toml")
    designs = (("c=2", base), ("c=1019", base.with_changes(c=1019, rho=1669.9215, theta=0.990, p_bar=0.015846)))
    rows = []
    saved = closed_form.SHAPE_SWITCH
    try:
        for engine in (("dispatch", "stepeval_only") if with_old else ("dispatch",)):
            closed_form.SHAPE_SWITCH = saved if engine == "dispatch" else -math.inf
            for name, cfg in designs:
                plan = make_plan(cfg)
                for p in SMALL_C_STREAMS:
                    d = transcript_distribution(plan, p, dps=10)
                    rows.append({"design": name, "engine": engine, "p": p, "nodes": d.nodes,
                                 "cpu_seconds": round(d.seconds, 4)})
                    print(rows[-1], file=sys.stderr)
    finally:
        closed_form.SHAPE_SWITCH = saved
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="T=20 instead of 100 for the fast-mode figure")
    ap.add_argument("--out", default=None,
                    help="default benchmarks/results/exact.json (benchmarks/results/exact_ratio_grid.json with --ratios-only)")
    ap.add_argument("--ratios-only", action="store_true",
                    help="only the planners' expected-evaluation ratio grid (seconds, no engine runs)")
    ap.add_argument("--small-c-only", action="store_true",
                    help="only the c = 2 vs c = 1019 transcript timings (benchmarks/results/exact_small_c.json)")
    args = ap.parse_args(argv)
    if args.small_c_only:
        result = {"machine": machine_info(), "small_c": small_c_speed()}
        out = Path(args.out or "benchmarks/results/exact_small_c.json")
        out.write_text(json.dumps(result, indent=2) + "\n")
        for r in result["small_c"]:
            print(f"{r['design']:>7} {r['engine']:>14} p={r['p']}  nodes={r['nodes']:>6}  cpu={r['cpu_seconds']:.3f}s")
        return
    if args.ratios_only:
        start = time.process_time()
        result = {"machine": machine_info(), "ratio_grid": ratio_grid(), "planning_speed": planning_speed()}
        result["total_cpu_seconds"] = round(time.process_time() - start, 2)
        out = Path(args.out or "benchmarks/results/exact_ratio_grid.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print_ratio_grid(result["ratio_grid"])
        print(f"planning, ms per step (T = {result['planning_speed']['T']}): {result['planning_speed']['ms_per_step']}")
        return
    args.out = args.out or "benchmarks/results/exact.json"
    start = time.process_time()
    result = {"machine": machine_info(), "speed": speed(args.quick), "ratio_grid": ratio_grid(),
              "accuracy": accuracy()}
    result["total_cpu_seconds"] = round(time.process_time() - start, 2)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for r in result["speed"]:
        print(f"{r['case']:>16}  T={r['T']:>3}  certified={r['certified']!s:>5}  cpu={r['cpu_seconds']:>7.2f}s  "
              f"nodes={r['nodes']:>5}  min digits={r['min_significant_digits']}")
    print_ratio_grid(result["ratio_grid"])
    print("exact accuracy (Type I at p_bar, Type II at p*, exact threshold vs p_bar):")
    for r in result["accuracy"]:
        print(f"  {r['config']:<24} t={r['t']:<4} typeI={r['type_I_at_p_bar']:.3e} typeII={r['type_II_at_p_star']:.3e} "
              f"beta_I={r['beta_I']:.3e}  p_bar={r['p_bar']:.6g}  p_exact={r['p_exact']:.6g}")


if __name__ == "__main__":
    main()
