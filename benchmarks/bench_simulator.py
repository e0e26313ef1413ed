"""Simulator throughput: GTM steps per second on one core.

    python -m benchmarks.bench_simulator [--seconds 20]

A "step" is one live run advancing one step (eta_2 draw, lambda, count, decision). Streams are
kept below the rejection threshold so almost every run stays alive for all T steps.
Writes benchmarks/results/simulator.json with machine information.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.machine import machine_info  # noqa: E402
from gtm_core import GTMConfig, make_plan  # noqa: E402
from gtm_core.reference import run_reference  # noqa: E402
from gtm_core.simulator import simulate  # noqa: E402


def measure(plan, n, T, evaluations, rng, seconds):
    done, elapsed, reps = 0, 0.0, 0
    while elapsed < seconds or reps < 3:
        t0 = time.perf_counter()
        res = simulate(plan, [0.005] * T, n, rng, evaluations=evaluations)
        elapsed += time.perf_counter() - t0
        # steps actually simulated: each run is alive from step 1 to its halting step (or T)
        h = res.halt
        done += int(np.where(h == 0, T, h).sum())
        reps += 1
    return done / elapsed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "simulator.json"))
    args = ap.parse_args(argv)
    cfg = GTMConfig.load(Path(__file__).parent.parent / "examples" / "default.toml")
    plan = make_plan(cfg)
    rng = np.random.default_rng(0)
    rows = []
    for n, T in [(1_000_000, 10), (100_000, 100), (10_000, 1000)]:
        for ev in (False, True):
            rate = measure(plan, n, T, ev, rng, args.seconds / 6)
            rows.append({"n": n, "T": T, "evaluations": ev, "steps_per_second": rate})
            print(f"n={n:>9} T={T:>5} evaluations={ev!s:5}  {rate / 1e6:8.2f} M steps/s")
    t0 = time.perf_counter()
    runs = 300
    for _ in range(runs):
        run_reference(plan, [0.005] * 10, rng)
    ref_rate = runs * 10 / (time.perf_counter() - t0)
    print(f"reference GTM (Bernoulli batch fast path): {ref_rate:,.0f} steps/s")
    out = {"benchmark": "simulator", "machine": machine_info(), "rows": rows,
           "reference_steps_per_second": ref_rate,
           "target_steps_per_second": 1e7}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
