"""Standalone reproducer: OpenDP 0.16's make_select_private_candidate does not stop with probability
``stop_probability``.

    python benchmarks/results/opendp_select_stop_probability_reproducer.py [--n 4000]

Needs only ``opendp`` (0.16.0) and ``scipy``. Exit 1 when the discrepancy is reproduced.

Liu and Talwar's Algorithm 1 (the one the documentation cites): after each candidate whose score is
below the threshold, stop with probability gamma = ``stop_probability``; so with a scorer that always
fails, the number of scorer invocations N is geometric, Pr[N = 1] = gamma, E[N] = 1 / gamma.

OpenDP draws N = 1 + G, G ~ ``sample_geometric_exp_fast(x)`` whose law is
Pr[G = n] = e^(-x n) (1 - e^(-x)) (its proof definition), with x = -1 / ln(1 - gamma) (the constructor
computes ``scale = -1 / ln(1 - stop_probability)``). The rate x should be -ln(1 - gamma); with its
reciprocal, Pr[N = 1] = 1 - e^(1 / ln(1 - gamma)): for gamma = 0.01 that is 1 - 1e-43 (one candidate
instead of 100 on average), for gamma = 0.9 it is 0.35 (three candidates instead of 1.1).

Privacy is not affected (the stopping rule is still geometric, and Liu-Talwar's 2 eps holds for any
stopping probability); the number of candidates tried - the mechanism's utility - is.

For each gamma the script prints the exact Pr[N = 1] under both laws and a fresh-sample 99.9%
two-sided Clopper-Pearson interval from ``--n`` invocations.
"""

import argparse
import math
import sys

import opendp.prelude as dp
from scipy import special

dp.enable_features("contrib", "honest-but-curious")
LEVEL = 0.001


def cp_two_sided(k, n, a):
    lo = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, a / 2))
    hi = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1 - a / 2))
    return lo, hi


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    args = ap.parse_args(argv)
    from importlib.metadata import version

    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    calls = [0]

    def failing(x):
        calls[0] += 1
        return (0.0, "candidate")

    scorer = space >> dp.m.then_user_measurement(dp.max_divergence(), failing, lambda d: d,
                                                 TO="(f64, ExtrinsicObject)")
    print(f"opendp {version('opendp')}; scorer always below the threshold; n = {args.n} invocations per gamma")
    reproduced = False
    for gamma in (0.1, 0.25, 0.5, 0.9):
        m = dp.c.make_select_private_candidate(scorer, stop_probability=gamma, threshold=1.0)
        ones, total = 0, 0
        for _ in range(args.n):
            before = calls[0]
            assert m(0.0) is None
            used = calls[0] - before
            ones += used == 1
            total += used
        lo, hi = cp_two_sided(ones, args.n, LEVEL)
        opendp_law = 1 - math.exp(1 / math.log(1 - gamma))
        bad = not (lo <= gamma <= hi) and lo <= opendp_law <= hi
        reproduced |= bad
        print(f"stop_probability={gamma:g}: Pr[N = 1] Liu-Talwar {gamma:.4f}, OpenDP's sampler law {opendp_law:.4f}; "
              f"sampled {ones}/{args.n} (99.9% CI [{lo:.4f}, {hi:.4f}]), mean N {total / args.n:.3f} "
              f"(Liu-Talwar 1/gamma = {1 / gamma:.3f})  -> {'DISCREPANCY' if bad else 'ok'}")
    return 1 if reproduced else 0


if __name__ == "__main__":
    sys.exit(main())
