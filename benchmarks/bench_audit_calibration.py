"""Calibration: how often does an audit of a *correct* deployment report a bound above its claim?

    python -m benchmarks.bench_audit_calibration [--audits 200] [--max-samples 1000000] [--config ...]
                                                 [--workers N | --scheduler ADDRESS]

Runs independent audits (seeds 0..audits-1) of the project's correct GTM (in-process simulator,
sample budget per audit so every audit is reproducible) at confidence 0.95 and reports the
fraction whose lower bound exceeds the claimed epsilon, with its two-sided 95% Clopper-Pearson
interval. The default configuration attains its claimed epsilon = 1 exactly (the mixed-direction
pair of Lemma 17's coupling), so this is the hardest case for calibration: the fraction must be
<= alpha = 0.05. Writes benchmarks/results/audit_calibration.json with machine information.

``--workers N`` / ``--scheduler ADDRESS`` (:mod:`benchmarks.cluster`): the audits run on Dask, one
audit per task; every audit is seeded, so the bounds are the same wherever they ran.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

from audits.gtm_audit import audit
from audits.statistics import cp_interval
from audits.targets import SimulatorTarget
from benchmarks.cluster import add_execution_arguments, execution_record, executor_from, ordered
from benchmarks.machine import machine_info
from gtm_core.config import GTMConfig
from gtm_core.planners import make_plan


def calibration_bound(config: str, max_samples: int, confidence: float, seed: int) -> float:
    """The lower bound of the audit seeded ``seed`` of the correct GTM (one unit of work)."""
    plan = make_plan(GTMConfig.load(config))
    r = audit(SimulatorTarget(plan), epsilon=plan.epsilon, eps_t=plan.step(1).eps_t, seconds=None,
              max_samples=max_samples, seed=seed, confidence=confidence, progress=False)
    return r.epsilon_lower_bound


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=200)
    ap.add_argument("--max-samples", type=int, default=1_000_000)
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "audit_calibration.json"))
    add_execution_arguments(ap)
    args = ap.parse_args(argv)
    plan = make_plan(GTMConfig.load(args.config))
    bounds, t0 = [], time.monotonic()
    unit = partial(calibration_bound, args.config, args.max_samples, args.confidence)
    with executor_from(args, "bench_audit_calibration") as executor:
        execution = execution_record(executor)
        for seed, bound in enumerate(ordered(executor, unit, range(args.audits))):
            bounds.append(bound)
            if (seed + 1) % 20 == 0:
                above = sum(b > plan.epsilon for b in bounds)
                print(f"{seed + 1:4d} audits: {above} above the claim; last bound {bound:.3f} "
                      f"({time.monotonic() - t0:.0f} s)", flush=True)
    above = sum(b > plan.epsilon for b in bounds)
    alpha = 1 - args.confidence
    lo, hi = cp_interval(above, len(bounds), 0.05)
    frac = above / len(bounds)
    print(f"fraction with lower bound > claimed eps = {frac:.4f} ({above}/{len(bounds)}), "
          f"95% CP interval [{float(lo):.4f}, {float(hi):.4f}], alpha = {alpha:g}")
    print(f"median bound {sorted(bounds)[len(bounds) // 2]:.3f}, max bound {max(bounds):.3f}, "
          f"claimed {plan.epsilon:g}; {time.monotonic() - t0:.0f} s")
    payload = {"benchmark": "audit_calibration", "config": args.config, "audits": len(bounds),
               "max_samples_per_audit": args.max_samples, "confidence": args.confidence,
               "epsilon_claimed": plan.epsilon, "above_claim": above, "fraction": frac,
               "fraction_ci95": [float(lo), float(hi)], "bounds": bounds,
               "seconds": time.monotonic() - t0, "execution": execution, "machine": machine_info()}
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if frac <= alpha else 1


if __name__ == "__main__":
    sys.exit(main())
