"""Post-hoc selection over the committed rebalance tuning results:
`python -m benchmarks.co_rebalance_select` reads benchmarks/results/co/co_rebalance_tune_w*_g*.json and
prints, per grid point, the tuning median ratios certified / doubling (steady = synthetic, bursty), how
many tuning runs' level halted (a checkpoint) on each stream, and the point selected by the rule: among
the points whose level halted in every tuning run on both streams, the smallest
max(steady median / 2, bursty median); ties (equal when rounded to 2 decimals) to the larger w, then the
larger g. It also prints the exact coverage of the order-statistic interval for the median used in the
evaluation (n = 20, 6th and 15th order statistics).
"""

from __future__ import annotations

import json
import re
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


def main() -> None:
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
