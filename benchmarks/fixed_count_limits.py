"""How much does the `fixed-count` deployment (N_t = round(lambda_t)) violate eps, and can an audit see it?

    python -m benchmarks.fixed_count_limits [--config examples/default.toml] [--runs-per-side 8e7]

The broken deployment draws K_t ~ Binomial(round(lambda_t), q_t) instead of K_t ~ Po(lambda_t q_t).
Its halting-time law is computed numerically with the machinery of audits/power/distribution.py (step
tables G_t, H_t on the eta_1 grid, eta_2 integrated by FFT; h = 0.02, tails < e^-40), cached per
(step, success probability) so that thousands of neighbouring pairs can be scanned:

* every stream of length T = 1, 2, 3 over 18 levels of p (1e-4 .. 0.999: near 0, near the
  threshold, near 1), every per-step direction of the neighbour (moved as far as eps_t allows,
  up or down - mixed directions included), both directions of every event;
* T = 5, 10, 20: continuation steps at level a, final step at level b, the two groups moved in
  either direction.

Events are the auditor's halting events (singletons, tails, heads). For every pair the script
reports the largest loss over events with probability >= 1e-3 and the *detection margin*: the
median bound of the auditor's final statistic (the Poissonised conditional test at alpha = 0.05)
with ``--runs-per-side`` runs per input and an oracle witness, minus the claimed epsilon. A margin
<= 0 means that even an audit which knew the witness in advance would certify a violation less
than half of the time. The default 8e7 runs per input is about what a 60 s audit's whole budget
buys on this machine (about 1.4 steps per run at ~13 M steps/s; see bench_audit_gtm).
The correct deployment is scanned the same way as a control (its margin must be <= 0 and its
loss <= epsilon up to the discretisation error).

Writes benchmarks/results/fixed_count_limits.json (with machine information).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal, stats

from audits.power.broken import CORRECT, VARIANTS
from audits.power.distribution import cell_masses, halting_distribution, step_functions
from benchmarks.machine import machine_info
from gtm_core.config import GTMConfig
from gtm_core.input_privacy import InputPrivacy
from gtm_core.neighbours import neighbour_interval
from gtm_core.planners import make_plan
from gtm_core.simulator import fed_success_probability

LEVELS = (1e-4, 1e-3, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)
MIN_PROBABILITY = 1e-3
ALPHA = 0.05


class CachedLaw:
    """Halting-time law of a deployment with shared noise drawn once and fresh step noise."""

    def __init__(self, plan, deployment, h=0.02, tail=40.0):
        self.plan, self.d, self.h, self.tail = plan, deployment, h, tail
        self.w1 = cell_masses(plan.tau1, h, tail)
        self._tables = {}

    def tables(self, t, p):
        key = (t, p)
        if key not in self._tables:
            sp = self.plan.step(t)
            q = fed_success_probability(sp, p)
            w2 = cell_masses(self.d.tau2_scale * sp.tau2, self.h, self.tail)
            K1, K2 = self.w1.size, w2.size
            u = self.d.mu1_scale * self.plan.mu1 + (np.arange(K1 + K2 - 1) - (K1 - 1)) * self.h
            cont, halt = step_functions(sp, self.d, q, u)
            G = signal.fftconvolve(cont, w2[::-1], mode="valid")[::-1]
            H = signal.fftconvolve(halt, w2[::-1], mode="valid")[::-1]
            self._tables[key] = (np.clip(G, 0, 1), np.clip(H, 0, 1))
        return self._tables[key]

    def dist(self, p):
        out = np.zeros(len(p) + 1)
        surv = self.w1.copy()
        for t, pt in enumerate(p, start=1):
            G, H = self.tables(t, pt)
            out[t] = surv @ H
            surv = surv * G
        out[0] = surv.sum()
        return out


def events(T):
    ev = [[t] for t in range(T + 1)]
    ev += [[0, *range(t, T + 1)] for t in range(2, T + 1)]
    ev += [list(range(1, t + 1)) for t in range(1, T + 1)]
    return ev


def moved(p, direction, eps_t):
    lo, hi = neighbour_interval(p, eps_t)
    return hi if direction > 0 else lo


def best_event(da, db, T, n, epsilon):
    """(margin, loss, probability, event, direction) maximising the detection margin, and the largest
    loss over events with probability >= MIN_PROBABILITY."""
    z = stats.norm.isf(ALPHA)
    best_margin, best_loss = None, None
    for e in events(T):
        pa, pb = float(da[e].sum()), float(db[e].sum())
        for x, y, direction in ((pa, pb, "p>p'"), (pb, pa, "p'>p")):
            if x <= 0 or y <= 0:
                continue
            loss = math.log(x / y)
            margin = loss - z * math.sqrt(1 / (n * x) + 1 / (n * y)) - epsilon
            rec = (margin, loss, x, e, direction)
            if best_margin is None or margin > best_margin[0]:
                best_margin = rec
            if x >= MIN_PROBABILITY and (best_loss is None or loss > best_loss[1]):
                best_loss = rec
    return best_margin, best_loss


def scan(law, eps_t, n, epsilon):
    rows = []
    for T in (1, 2, 3):
        for ps in itertools.product(LEVELS, repeat=T):
            da = law.dist(ps)
            for dirs in itertools.product((-1, 1), repeat=T):
                pp = tuple(moved(p, d, eps_t) for p, d in zip(ps, dirs))
                rows.append((best_event(da, law.dist(pp), T, n, epsilon), list(ps), list(pp)))
    for T in (5, 10, 20):
        for a in LEVELS:
            for b in LEVELS:
                ps = (a,) * (T - 1) + (b,)
                da = law.dist(ps)
                for d1, d2 in itertools.product((-1, 1), repeat=2):
                    pp = tuple(moved(p, d, eps_t) for p, d in zip(ps, (d1,) * (T - 1) + (d2,)))
                    rows.append((best_event(da, law.dist(pp), T, n, epsilon), list(ps), list(pp)))
    return rows


def summarise(rows):
    by_margin = max(rows, key=lambda r: r[0][0][0])
    by_loss = max((r for r in rows if r[0][1] is not None), key=lambda r: r[0][1][1])

    def rec(r, which):
        m = r[0][which]
        return {"margin": m[0], "loss": m[1], "probability": m[2], "event_codes": m[3], "direction": m[4],
                "p": r[1], "p_prime": r[2]}

    return {"best_margin": rec(by_margin, 0), "largest_loss_p_ge_1e-3": rec(by_loss, 1), "pairs": len(rows)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--runs-per-side", type=float, default=8e7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fixed_count_limits.json"))
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    cfg = GTMConfig.load(args.config)
    plan = make_plan(cfg)
    eps_t = InputPrivacy.from_user(cfg.stream.eps_t).at(1)  # the first step's
    res = {"benchmark": "fixed_count_limits", "config": args.config, "epsilon": plan.epsilon, "eps_t": eps_t,
           "runs_per_side": args.runs_per_side, "alpha": ALPHA, "machine": machine_info(), "variants": {}}
    for name, d in (("fixed-count", VARIANTS["fixed-count"]), ("correct", CORRECT)):
        law = CachedLaw(plan, d)
        chk = [0.3, 0.1, 0.05]
        err = float(np.max(np.abs(law.dist(chk) - halting_distribution(plan, chk, d, h=0.02))))
        s = summarise(scan(law, eps_t, args.runs_per_side, plan.epsilon))
        s["check_vs_distribution_module"] = err
        res["variants"][name] = s
        m, lo = s["best_margin"], s["largest_loss_p_ge_1e-3"]
        print(f"{name:12s} {s['pairs']} pairs: largest loss (P >= 1e-3) {lo['loss']:.5f} at P = {lo['probability']:.4g} "
              f"(event {lo['event_codes']}, {lo['direction']}, p = {np.round(lo['p'], 4).tolist()}); best detection "
              f"margin with {args.runs_per_side:.0e} runs/input {m['margin']:+.5f} (loss {m['loss']:.5f} at "
              f"P = {m['probability']:.4g}, p = {np.round(m['p'], 4).tolist()})", flush=True)
    fc = res["variants"]["fixed-count"]["best_margin"]
    z = stats.norm.isf(ALPHA)
    excess = fc["loss"] - plan.epsilon
    if excess > 0:
        x = fc["probability"]
        y = x * math.exp(-fc["loss"])
        need = (z / excess) ** 2 * (1 / x + 1 / y)
        res["runs_per_side_needed_at_best_witness"] = need
        print(f"fixed-count: its best witness needs about {need:.2e} runs per input (oracle witness, median) to "
              f"certify a violation of eps = {plan.epsilon:g}")
    res["seconds"] = time.monotonic() - t0
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
