"""Standalone reproducer: OpenDP 0.16's thresholded-histogram maps under-report delta.

    python benchmarks/results/opendp_threshold_delta_reproducer.py [--n 20000]

Needs only ``opendp`` (0.16.0) and ``scipy``. Exit 1 when the discrepancy is reproduced.

A dataset ``[]`` and its neighbour ``["u"]`` (one record added: symmetric distance 1). After
``make_count_by`` the key "u" has count 1 on the neighbour and is absent on ``[]``; the thresholded
release keeps a key when its *noisy* count is >= threshold, so on ``[]`` "u" is never released
and on ``["u"]`` it is released with probability Pr[1 + Z >= threshold] = Pr[Z >= threshold - 1].
For the event E = {"u" released}: Pr[E | ["u"]] - e^eps Pr[E | []] = Pr[Z >= threshold - 1] at
every eps, so any valid (eps, delta) claim has delta >= Pr[Z >= threshold - 1].

* ``make_laplace_threshold`` (integer counts: discrete Laplace, Pr[Z = z] ~ t^|z|, t = e^(-1/scale),
  Pr[Z >= k] = t^k / (1 + t)) claims delta = Pr[Z >= threshold] = t^threshold / (1 + t): one atom
  short, an under-report by a factor e^(1/scale).
* ``make_gaussian_threshold`` (integer counts: discrete Gaussian) claims (rho, delta) with delta =
  the *continuous* normal tail Pr[N(0, scale^2) >= threshold - 1]; the discrete Gaussian's tail
  Pr[Z >= threshold - 1] (the atom at threshold - 1 included) is larger. Approximate zCDP (rho,
  delta) implies (eps, delta + delta_rho(eps)) for every eps (OpenDP's own conversion,
  ``make_zCDP_to_approxDP``); at the eps where delta_rho(eps) is small that is below the exact
  Pr[Z >= threshold - 1].

For each case the script prints the exact value (closed form for Laplace, the normalised discrete
Gaussian sum for Gaussian), the claim, and an independent fresh-sample confirmation: a 99.9%
one-sided Clopper-Pearson lower bound on Pr[E | ["u"]] from ``--n`` fresh invocations minus e^eps
times the 99.9% upper bound on Pr[E | []] from ``--n`` invocations.
"""

import argparse
import math
import sys

import numpy as np
import opendp.prelude as dp
from scipy import special

dp.enable_features("contrib")
LEVEL = 0.001  # one-sided, each side (99.9%)


def cp_lower(k, n, a):
    return 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, a))


def cp_upper(k, n, a):
    return 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1 - a))


def verdict(exact, claimed, bound):
    if exact <= claimed:
        return "ok"
    return "UNDER-REPORTED (exact law and fresh samples)" if bound > claimed else "under-reported (exact law only)"


def released(measurement, data, n):
    return sum("u" in measurement(data) for _ in range(n))


def discrete_gaussian_tail(k, scale):
    z = np.arange(-60 * int(math.ceil(scale)) - 60, 60 * int(math.ceil(scale)) + 61)
    w = np.exp(-(z.astype(float) ** 2) / (2 * scale**2))
    return float(w[z >= k].sum() / w.sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    args = ap.parse_args(argv)
    strings = dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()
    reproduced = False
    from importlib.metadata import version

    print(f"opendp {version('opendp')}; fresh samples n = {args.n} per dataset, 99.9% one-sided bounds")
    for scale, threshold in ((1.0, 3), (1.0, 5), (2.0, 4)):
        m = strings >> dp.t.then_count_by() >> dp.m.then_laplace_threshold(scale, threshold=threshold)
        eps, delta = m.map(1)
        t = math.exp(-1 / scale)
        exact = t ** (threshold - 1) / (1 + t)
        ka, kb = released(m, ["u"], args.n), released(m, [], args.n)
        bound = cp_lower(ka, args.n, LEVEL) - math.exp(eps) * cp_upper(kb, args.n, LEVEL)
        bad = exact > delta and bound > delta  # the exact law and the fresh samples both refute the claim
        reproduced |= bad
        print(f"laplace_threshold(scale={scale:g}, threshold={threshold}): map(1) = ({eps:g}, {delta:.6g}); "
              f"exact Pr[E|['u']] = {exact:.6g} (x{exact / delta:.3f} the claimed delta); sampled {ka}/{args.n} vs "
              f"{kb}/{args.n}: delta({eps:g}) >= {bound:.6g} at 99.9%  -> {verdict(exact, delta, bound)}")
    counts = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    for scale, threshold in ((1.0, 3), (2.0, 4)):
        m = dp.m.make_gaussian_threshold(counts, dp.l02inf_distance(dp.absolute_distance(T=int)), scale,
                                         threshold=threshold)
        rho, delta = m.map((1, 1, 1))
        profile, extra = dp.c.make_zCDP_to_approxDP(m).map((1, 1, 1))
        exact = discrete_gaussian_tail(threshold - 1, scale)
        # the eps at which the claimed curve delta + delta_rho(eps) is smallest while still below the exact value
        eps = float(profile.epsilon(max((exact - extra) / 4, 1e-12)))
        claimed = extra + (exact - extra) / 4
        ka, kb = released(m, {"u": 1}, args.n), released(m, {}, args.n)
        bound = cp_lower(ka, args.n, LEVEL) - math.exp(eps) * cp_upper(kb, args.n, LEVEL)
        bad = exact > claimed and bound > claimed  # the exact law and the fresh samples both refute the claim
        reproduced |= bad
        print(f"gaussian_threshold(scale={scale:g}, threshold={threshold}) on a map of counts, d_in=(1,1,1): "
              f"map = (rho={rho:g}, delta={delta:.6g}); implied delta at eps={eps:.4g}: {claimed:.6g}; exact "
              f"Pr[E|{{'u': 1}}] = {exact:.6g}; sampled {ka}/{args.n} vs {kb}/{args.n}: delta({eps:.4g}) >= "
              f"{bound:.6g} at 99.9%  -> {verdict(exact, claimed, bound)}")
    return 1 if reproduced else 0


if __name__ == "__main__":
    sys.exit(main())
