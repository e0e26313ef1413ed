"""Power suite and calibration of the black-box evaluator's audit.

    python -m benchmarks.bench_blackbox_power [--seconds 60] [--calibration 100] [--quick]

Configuration: eps = 2, beta = 0.1, Y = {0,...,4}, f = median rounded to Y (monotone, exact depth
for any n), datasets of records in Y around the sizes where h crosses 0.
For every variant of audits.power.blackbox.VARIANTS:
  * exact witness: max exact loss (ball) over the searched neighbouring pairs (outputs with
    probability >= 1e-3 on one side), and the exact utility failure P(out not in CH(f(N_lambda(S))));
  * the auditor (audits/finite.py) with a --seconds budget: verdict and lower bound.
Calibration: --calibration seeded audits of the correct evaluator (sample budget 300k each, alpha
0.05); false-alarm rate with its Clopper-Pearson interval.
Writes benchmarks/results/blackbox_power.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from audits.power.blackbox import VARIANTS, audit_evaluator, crossing_sizes, utility_failure_probability, variant_evaluator
from audits.statistics import cp_interval
from gtm_core.blackbox import BlackBoxEvaluator, EvaluatorConfig
from gtm_core.blackbox.exact import output_law, search_loss

OUT = Path(__file__).parent / "results"


def median_grid(T):
    return min(4, max(0, round(statistics.median(T)))) if T else 0


def searched_datasets(sizes, universe=range(5)):
    out = []
    for n in sizes:
        for a in universe:
            out.append(tuple([a] * n))
            for b in universe:
                if a < b:
                    out.append(tuple(sorted([a] * (n // 2) + [b] * (n - n // 2))))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--calibration", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="fewer datasets in the exact search")
    args = ap.parse_args(argv)
    cfg = EvaluatorConfig(2.0, 0.1, tuple([x] for x in range(5)))
    base = BlackBoxEvaluator(cfg, median_grid, depth_method="monotone")
    sizes = crossing_sizes(base.params)
    if args.quick:
        sizes = sizes[::3]
    datasets = searched_datasets(sizes)
    rows = []
    for name, (desc, _) in VARIANTS.items():
        ev = variant_evaluator(base, name)
        t0 = time.monotonic()
        found = search_loss(ev, datasets, min_probability=1e-3)
        exact_s = time.monotonic() - t0
        lam = base.params.locality
        util = max(utility_failure_probability(ev, S, output_law(ev, S).floats(), lam) for S in datasets[::7])
        t0 = time.monotonic()
        res = audit_evaluator(ev, range(5), seconds=args.seconds, seed=0)
        w = res.to_dict()["witness"]
        # the exact loss of the auditor's own witness pair and event: the audit bound must not exceed it
        # (a cross-check of the two witnesses; holds with probability >= confidence)
        wa = tuple(w["input"]["dataset"])
        wb = tuple(w["input_prime"]["dataset"])
        la, lb = output_law(ev, wa), output_law(ev, wb)
        codes = set(w["event_outputs"])
        pa = sum(float(p.mid()) for c, p in zip(ev.codes, la.probabilities) if c in codes)
        pb = sum(float(p.mid()) for c, p in zip(ev.codes, lb.probabilities) if c in codes)
        witness_exact = float(np.log(pa) - np.log(pb)) if pa > 0 and pb > 0 else float("inf")
        rows.append({"variant": name, "description": desc, "exact_loss_lower": found.best.loss_lower,
                     "exact_loss_upper": found.best.loss_upper, "exceeds_claim_by_10pct":
                     found.best.loss_lower >= 1.1 * cfg.epsilon, "exact_pairs": found.pairs,
                     "exact_seconds": exact_s, "exact_witness": found.to_dict(),
                     "max_utility_failure": util, "beta": cfg.beta, "audit_verdict": res.verdict,
                     "audit_lower_bound": res.epsilon_lower_bound, "audit_seconds": res.result.seconds,
                     "audit_samples": res.result.samples, "audit_witness_sizes": [len(wa), len(wb)],
                     "exact_loss_of_audit_witness_event": witness_exact})
        print(f"{name}: exact loss {found.best.loss_lower:.4f}, utility failure {util:.4f}, audit {res.verdict} "
              f"({res.epsilon_lower_bound:.3f})", file=sys.stderr)
    alarms = 0
    t0 = time.monotonic()
    for s in range(args.calibration):
        r = audit_evaluator(base, range(5), seconds=None, max_samples=300_000, seed=1000 + s)
        alarms += r.violation
    lo, hi = cp_interval(alarms, max(args.calibration, 1), 0.05)
    calib = {"audits": args.calibration, "false_alarms": alarms, "rate": alarms / max(args.calibration, 1),
             "ci95": [float(lo), float(hi)], "alpha": 0.05, "max_samples_each": 300_000,
             "seconds": time.monotonic() - t0}
    payload = {"config": cfg.to_dict(), "parameters": base.params.to_dict(), "sizes": sizes,
               "variants": rows, "calibration": calib,
               "command": "python -m benchmarks.bench_blackbox_power " + " ".join(argv or sys.argv[1:])}
    OUT.mkdir(exist_ok=True)
    (OUT / "blackbox_power.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    lines = ["# Black-box evaluator: power suite and calibration", "",
             f"eps = 2, beta = 0.1, Y = {{0..4}}, f = median rounded to Y; sizes {sizes[0]}..{sizes[-1]}; "
             f"audit budget {args.seconds:g} s.", "",
             "| variant | exact max loss (searched, P >= 1e-3) | > 1.1 eps | max P(out not in CH(f(N_lambda))) (beta = 0.1) "
             "| audit verdict | audit bound | exact loss of the audit's witness event |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['variant']} | {r['exact_loss_lower']:.4f} | {r['exceeds_claim_by_10pct']} | "
                     f"{r['max_utility_failure']:.4f} | {r['audit_verdict']} | {r['audit_lower_bound']:.3f} | "
                     f"{r['exact_loss_of_audit_witness_event']:.4f} |")
    lines += ["", f"Calibration: {alarms}/{args.calibration} false alarms (rate {calib['rate']:.3f}, "
              f"95% CI [{lo:.4f}, {hi:.4f}]) at alpha 0.05.", "", f"Command: `{payload['command']}`", ""]
    (OUT / "blackbox_power.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
