"""Where the certified BatchToCO's budget goes on the steadily growing coverage stream (synthetic n = 64):
`python -m benchmarks.co_steady_account` reads a committed comparison (default
benchmarks/results/co/co_comparison_b.json, T = 1e4; `--source co_comparison_synthetic30k.json --name
co_steady_account30k` for T = 3e4: its split, arb ledger and per-seed checkpoint times; no new run) and
writes <name>.json / .md beside it.

Per seed: the first checkpoint t_c; the warm-up recomputations before it (t = 2, 4, ... < t_c, each at
eps_W); the levels started (each checkpoint starts the next GTM_l; a level never started never spends its
reserved share); the privacy of the solution held after t_c (A at eps_Q / 2) against the doubling schedule's
eps / R at its recomputations (t = 2^i <= T).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gtm_core.batchtoco.baselines import doubling_times

OUT = Path(__file__).resolve().parent / "results" / "co"


def account(payload: dict, source: str = "co_comparison_b.json") -> dict:
    split, led = payload["split"], payload["ledger"]
    s = next(x for x in payload["streams"] if x["stream"] == "synthetic")
    eps, T = split["epsilon"], s["T"]
    R = len(doubling_times(T))
    eps_d = eps / R
    runs = []
    for r in s["runs"]:
        cps = r["checkpoints"]
        tc = cps[0] if cps else None
        warm = sum(1 for t in doubling_times(T) if 1 < t and (tc is None or t < tc))
        started = min(len(cps) + 1, split["levels"])  # GTM_l of the levels begun (each checkpoint starts the next)
        runs.append({"seed": r["seed"], "first_checkpoint": tc, "checkpoints": len(cps), "warmup_calls": warm,
                     "steps_held_after_checkpoint_fraction": 0.0 if tc is None else (T - tc) / T,
                     "levels_started": started, "ratio": r["mean"]["certified"] / r["mean"]["doubling"],
                     "final_certified": r["final"]["certified"], "final_doubling": r["final"]["doubling"]})
    started = int(np.median([x["levels_started"] for x in runs]))
    halted = int(np.median([x["checkpoints"] for x in runs]))
    warm = float(np.median([x["warmup_calls"] for x in runs]))
    spent = {"first_call": split["eps_first"] / eps,
             "warm-up, used": warm * split["eps_warmup"] / eps,
             "warm-up, reserved, not used": (split["warmup_calls"] - warm) * split["eps_warmup"] / eps,
             "GTM_l of the levels started": started * split["eps_gtm"] / eps,
             "ThresholdSelect_l at the checkpoints": halted * split["eps_selection"] / eps,
             "ThresholdSelect_l of a started level that never halted": (started - halted) * split["eps_selection"] / eps,
             "levels never started (OPT never near their threshold)": (split["levels"] - started) * split["eps_level"] / eps}
    per_call = {"doubling eps/R": eps_d, "warm-up eps_W": split["eps_warmup"],
                "held after the checkpoint: A at eps_Q/2": split["eps_q"] / 2,
                "GTM_l's test: A at eps_t/2": split["eps_t"] / 2}
    return {"source": f"benchmarks/results/co/{source}", "T": T, "epsilon": eps, "R_doubling": R,
            "halting_slack": led["halting_slack"], "ledger_shares": led["shares"], "spent_median_run": spent,
            "per_call_privacy": per_call, "runs": runs,
            "median_ratio": float(np.median([x["ratio"] for x in runs]))}


def markdown(a: dict) -> str:
    lines = [f"## Where the certified variant's budget goes: steady coverage stream (synthetic n = 64, T = {a['T']})",
             "", f"Computed by `python -m benchmarks.co_steady_account` from `{a['source']}` (no new run).", "",
             "| part | fraction of eps (median run) |", "|---|---|"]
    lines += [f"| {k} | {v:.4f} |" for k, v in a["spent_median_run"].items()]
    lines += ["", "| recomputation | privacy per call | / doubling's |", "|---|---|---|"]
    d = a["per_call_privacy"]["doubling eps/R"]
    lines += [f"| {k} | {v:.4g} | {v / d:.3f} |" for k, v in a["per_call_privacy"].items()]
    fc = [x["first_checkpoint"] for x in a["runs"]]
    held = np.median([x["steps_held_after_checkpoint_fraction"] for x in a["runs"]])
    lines += ["", f"First checkpoint per seed: {fc} (median fraction of the stream then held: {held:.2f}); "
              f"median ratio certified / doubling {a['median_ratio']:.2f}; slack S = {a['halting_slack']:.0f}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="where the certified BatchToCO's budget goes on the steady stream")
    parser.add_argument("--source", default="co_comparison_b.json", help="comparison file under results/co/")
    parser.add_argument("--name", default="co_steady_account", help="output file stem under results/co/")
    args = parser.parse_args(argv)
    a = account(json.loads((OUT / args.source).read_text()), args.source)
    (OUT / f"{args.name}.json").write_text(json.dumps(a, indent=2) + "\n")
    (OUT / f"{args.name}.md").write_text(markdown(a) + "\n")
    print(markdown(a))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
