"""Utility of the black-box evaluator on real data -> benchmarks/results/blackbox_utility.{json,md,png}.

    python -m benchmarks.bench_blackbox_utility [--runs 2000] [--seed 0] [--seconds 900]

(Same as `gtm blackbox bench`; the logic lives in audits/bench/blackbox_utility.py.)
"""

import argparse
import sys
from pathlib import Path

from audits.bench.blackbox_utility import run_utility, write_utility


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=900.0)
    a = ap.parse_args(argv)
    res = run_utility(seconds=a.seconds, runs=a.runs, seed=a.seed, progress=lambda m: print(m, file=sys.stderr))
    res["command"] = f"python -m benchmarks.bench_blackbox_utility --runs {a.runs} --seed {a.seed}"
    for p in write_utility(res, Path(__file__).parent / "results"):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
