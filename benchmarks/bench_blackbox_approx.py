"""Approximate-DP evaluator (Algorithm 2) vs the pure one (Algorithm 4) vs sample-and-aggregate ->
benchmarks/results/blackbox_approx.{json,md}.

    python -m benchmarks.bench_blackbox_approx [--runs 200] [--seed 0] [--seconds 900] [--delta 1e-6]
        [--reach-delta 0.1] [--reach-c 1e-7]

The reach cases (d = 2, 3 at a small C and a larger delta, where Algorithm 2's cutoff h >= 1 so Algorithm 6
runs; pre-registered in benchmarks/results/blackbox_approx_preregistration.md) run after every other case;
--reach-delta 0 skips them.

(Same as `gtm blackbox bench --privacy approximate --delta D`; the logic lives in
gtm_core/blackbox/approx/compare.py.)
"""

import argparse
import os
import platform
import sys
from pathlib import Path

from audits.bench.blackbox_utility import goog_with_volume
from gtm_core.blackbox.approx.compare import run_comparison, write_comparison


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=900.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--reach-delta", type=float, default=0.1)
    ap.add_argument("--reach-c", type=float, default=1e-7)
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    res = run_comparison(goog_with_volume(), seed=a.seed, runs=a.runs, seconds=a.seconds, delta=a.delta,
                         reach_delta=a.reach_delta or None, reach_C=a.reach_c, progress=lambda m: print(m, file=sys.stderr))
    res["machine"] = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                      "cpus": os.cpu_count(), "python": platform.python_version(),
                      "loadavg_before": list(load_before), "loadavg_after": list(os.getloadavg())}
    res["command"] = (f"python -m benchmarks.bench_blackbox_approx --runs {a.runs} --seed {a.seed} "
                      f"--delta {a.delta:g} --reach-delta {a.reach_delta:g} --reach-c {a.reach_c:g}")
    for p in write_comparison(res, Path(__file__).parent / "results"):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
