"""Post-hoc selection over the committed rebalance tuning results:
`python -m benchmarks.co_rebalance_select` reads benchmarks/results/co/co_rebalance_tune_w*_g*.json and
prints, per grid point, the tuning median ratios certified / doubling (steady = synthetic, bursty), how
many tuning runs' level halted (a checkpoint) on each stream, and the point selected by the rule: among
the points whose level halted in every tuning run on both streams, the smallest
max(steady median / 2, bursty median); ties (equal when rounded to 2 decimals) to the larger w, then the
larger g. It also prints the exact coverage of the order-statistic interval for the median used in the
evaluation (n = 20, 6th and 15th order statistics).

`python -m benchmarks.co_rebalance_select --summary NAME [NAME ...]` instead summarises committed comparison
results NAME.json: per stream the median per-seed ratio certified / doubling with its order-statistic
interval [X_(6), X_(15)] (given for n = 20 seeds only), the seeds below 1, min / max, the runs whose level
halted and their checkpoint times, the warm-up calls, and wall time and load averages from the file.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from scipy.stats import binom

OUT = Path(__file__).resolve().parent / "results" / "co"
NAME = re.compile(r"co_rebalance_tune_w([0-9.]+)_g([0-9.]+)\.json$")


def grid_rows(folder: Path = OUT) -> list[dict]:
    """One row per tuning result file: w, g, median ratios and halting counts per stream."""
    rows = []
    for path in sorted(folder.glob("co_rebalance_tune_w*_g*.json")):
        m = NAME.search(path.name)
        if m is None:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        row = {"w": float(m.group(1)), "g": float(m.group(2))}
        for s in data["streams"]:
            key = "steady" if s["stream"] == "synthetic" else s["stream"]
            row[key] = s["median_ratio_certified_over_doubling"]
            row[key + "_halted"] = sum(1 for r in s["runs"] if r["checkpoints"])
            row[key + "_runs"] = len(s["runs"])
        row["worse"] = max(row["steady"] / 2, row["bursty"])
        row["always_halted"] = (row["steady_halted"] == row["steady_runs"]
                                and row["bursty_halted"] == row["bursty_runs"])
        rows.append(row)
    return rows


def select(rows: list[dict]) -> dict | None:
    """The rule: smallest worse ratio among always-halting points; ties to larger w, then larger g."""
    cands = [r for r in rows if r["always_halted"]]
    if not cands:
        return None
    return min(cands, key=lambda r: (round(r["worse"], 2), -r["w"], -r["g"]))


def order_interval_coverage(n: int, lo: int, hi: int) -> float:
    """P(X_(lo) <= median <= X_(hi)) for n i.i.d. continuous draws = P(lo <= Bin(n, 1/2) <= hi - 1)."""
    return float(binom.cdf(hi - 1, n, 0.5) - binom.cdf(lo - 1, n, 0.5))


def summary(path: Path) -> list[str]:
    """Lines describing one committed comparison result file (see the module docstring)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    mach = data["machine"]
    out = [f"{path.stem}: first_seed {data['first_seed']}, {mach['seconds']:.0f} s wall, load (1/5/15 min) "
           f"{' '.join(mach['before']['loadavg'])} -> {' '.join(mach['after']['loadavg'])}, "
           f"{mach['before']['utc']} -> {mach['after']['utc']}, {mach['before']['cpu_count']} cores"]
    for s in data["streams"]:
        runs = s["runs"]
        ratios = [r["mean"]["certified"] / r["mean"]["doubling"] for r in runs]
        srt = sorted(ratios)
        med = statistics.median(ratios)
        interval = f"[{srt[5]:.2f}, {srt[14]:.2f}]" if len(srt) == 20 else "n/a (n != 20)"
        halted = [(r["seed"], r["checkpoints"]) for r in runs if r["checkpoints"]]
        out += [f"  {s['stream']}: median ratio {med:.3f} (file {s['median_ratio_certified_over_doubling']:.3f}), "
                f"interval {interval}, below 1: {sum(x < 1 for x in ratios)}/{len(ratios)}, "
                f"min/max {srt[0]:.2f}/{srt[-1]:.2f}",
                f"    median mean certified/doubling {s['median_mean']['certified']:.1f}/"
                f"{s['median_mean']['doubling']:.1f}, median final {s['median_final']['certified']:.0f}/"
                f"{s['median_final']['doubling']:.0f}, median final OPT "
                f"{statistics.median(r['final_opt'] for r in runs):.0f}",
                f"    halted {len(halted)}/{len(runs)}: " + ", ".join(f"{sd}:{cp}" for sd, cp in halted),
                f"    warm-up calls {sorted(set(r['warmup_calls'] for r in runs))}, "
                f"per-seed ratios " + " ".join(f"{x:.2f}" for x in ratios)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", nargs="+", metavar="NAME", help="summarise benchmarks/results/co/NAME.json")
    args = ap.parse_args()
    if args.summary:
        for name in args.summary:
            print("\n".join(summary(OUT / f"{name}.json")))
        return
    rows = grid_rows()
    print("| w | g | steady median | bursty median | max(steady/2, bursty) | steady halted | bursty halted |")
    print("|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (-r["w"], -r["g"])):
        print(f"| {r['w']:g} | {r['g']:g} | {r['steady']:.2f} | {r['bursty']:.2f} | {r['worse']:.2f} | "
              f"{r['steady_halted']}/{r['steady_runs']} | {r['bursty_halted']}/{r['bursty_runs']} |")
    best = select(rows)
    print("selected:", None if best is None else f"w = {best['w']:g}, g = {best['g']:g}")
    print(f"coverage of [X_(6), X_(15)], n = 20: {order_interval_coverage(20, 6, 15):.4f}")


if __name__ == "__main__":
    main()
