"""Power suite: every broken deployment, audited through the subprocess protocol.

    python -m benchmarks.bench_audit_power [--seconds 60] [--max-samples N] [--variants a,b,...]
                                           [--config examples/default.toml] [--workers N | --scheduler ADDRESS]

For each variant of :mod:`audits.power.broken`:

1. *Is it truly not eps-DP?* The numerical halting-time law (:mod:`audits.power.distribution`) is
   evaluated on the canonical mixed-direction pairs of :mod:`audits.pair_search` (k = 1, 3 continuation
   steps, 8 x 8 levels, both directions) and on the audit's own witness pair; the largest loss over
   all events with probability >= 1e-3 is reported. A variant is *non-DP* when that loss exceeds
   the claimed epsilon by more than the numerical tolerance (1e-3); otherwise it is reported as
   "no violation found numerically" (and, for off-by-one / no-offset, DP by Lemma 17, which holds
   for every c_t and mu_1).
2. *Is it flagged?* ``gtm audit`` runs against ``python -m audits.serve CONFIG --broken VARIANT``
   with the time budget (default 60 s; ``--max-samples``: also a sample budget, which makes an audit
   the clock does not cut short reproducible); the detection time is the wall time of that run.

``--workers N`` / ``--scheduler ADDRESS`` (:mod:`benchmarks.cluster`): one Dask cluster for the whole
suite (a local one of N workers is started once); every ``gtm audit`` runs its sampling on it
(``gtm audit --scheduler`` with the cluster's address; docs/distributed.md).

Writes benchmarks/results/audit_power.json (with machine information) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from audits.power.broken import DESCRIPTIONS, VARIANTS
from audits.power.distribution import event_loss, halting_distribution, worst_event
from audits.events import halting_events
from audits.pair_search import MIXED_LEVELS, neighbour
from benchmarks.cluster import add_execution_arguments, execution_record, executor_from, scheduler_address
from benchmarks.machine import machine_info
from gtm_core.config import GTMConfig
from gtm_core.input_privacy import InputPrivacy
from gtm_core.planners import make_plan

TOLERANCE = 1e-3
MIN_PROBABILITY = 1e-3


def canonical_pairs(eps_t: float):
    for k in (1, 3):
        for a in MIXED_LEVELS:
            for b in MIXED_LEVELS:
                p = [a] * k + [b]
                yield tuple(p), neighbour(p, [1] * k + [-1], eps_t)


def numerical_worst(plan, deployment, eps_t, extra_pairs=(), h=0.02):
    cache = {}

    def dist(p):
        if p not in cache:
            cache[p] = halting_distribution(plan, p, deployment, h=h)
        return cache[p]

    best = (-np.inf, None, None, None)
    for p, pp in list(canonical_pairs(eps_t)) + list(extra_pairs):
        loss, event, direction = worst_event(dist(tuple(p)), dist(tuple(pp)), halting_events(len(p)),
                                             min_probability=MIN_PROBABILITY)
        if loss > best[0]:
            best = (loss, event, direction, (list(p), list(pp)))
    return best


def witness_true_loss(plan, deployment, witness, h=0.02):
    """Numerical loss ln(P[E]/P'[E]) of the audit's own witness event (its set of halting codes;
    :func:`audits.power.distribution.event_loss`)."""
    return event_loss(halting_distribution(plan, witness["p"], deployment, h=h),
                      halting_distribution(plan, witness["p_prime"], deployment, h=h), witness["event_codes"])


def run_audit_cli(config, variant, seconds, seed, epsilon, eps_t, *, max_samples=None, scheduler=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit.json"
        cmd = [sys.executable, "-m", "audits.cli", "audit", "--target",
               f"{sys.executable} -m audits.serve {config} --broken {variant}",
               "--epsilon", str(epsilon), "--eps-t", str(eps_t), "--seconds", str(seconds),
               "--seed", str(seed), "--json", str(out), "--quiet"]
        if max_samples is not None:
            cmd += ["--max-samples", str(max_samples)]
        if scheduler is not None:
            cmd += ["--scheduler", scheduler]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        result = json.loads(out.read_text()) if out.exists() else None
    return proc.returncode, wall, result, proc.stderr.strip()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--skip-numerical", action="store_true")
    ap.add_argument("--max-samples", type=int, default=None, help="sample budget of every audit (with --seconds)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "audit_power.json"))
    add_execution_arguments(ap)
    args = ap.parse_args(argv)
    with executor_from(args, "bench_audit_power") as executor:
        return run_suite(args, execution_record(executor), scheduler_address(executor))


def run_suite(args, execution: dict, scheduler: str | None) -> int:
    cfg = GTMConfig.load(args.config)
    plan = make_plan(cfg)
    epsilon = plan.epsilon
    eps_t = InputPrivacy.from_user(cfg.stream.eps_t).at(1)  # the first step's
    rows = []
    print(f"{'variant':24s} {'numerical loss':>14s} {'truly non-DP':>12s} {'verdict':>20s} {'bound':>7s} "
          f"{'witness loss':>12s} {'time':>6s}")
    for name in args.variants.split(","):
        d = VARIANTS[name]
        code, wall, res, err = run_audit_cli(args.config, name, args.seconds, args.seed, epsilon, eps_t,
                                             max_samples=args.max_samples, scheduler=scheduler)
        extra = []
        if res and res.get("witness"):
            extra = [(tuple(res["witness"]["p"]), tuple(res["witness"]["p_prime"]))]
        if args.skip_numerical:
            num = (float("nan"), None, None, None)
        else:
            num = numerical_worst(plan, d, eps_t, extra)
        w_loss = witness_true_loss(plan, d, res["witness"]) if res and res.get("witness") else None
        if w_loss is not None and w_loss > num[0]:
            num = (w_loss, res["witness"]["event"], "audit witness", (res["witness"]["p"], res["witness"]["p_prime"]))
        non_dp = bool(num[0] > epsilon + TOLERANCE)
        row = {
            "variant": name, "mistake": DESCRIPTIONS[name], "numerical_worst_loss": num[0],
            "numerical_event": num[1], "numerical_direction": num[2], "numerical_pair": num[3],
            "witness_true_loss": w_loss, "truly_non_dp": non_dp, "exit_code": code, "wall_seconds": wall,
            "verdict": res["verdict"] if res else None,
            "epsilon_lower_bound": res["epsilon_lower_bound"] if res else None,
            "samples": res["samples"] if res else None, "error": err if code == 2 else None,
        }
        row["ok"] = (row["verdict"] == "violation") == non_dp if res else False
        rows.append(row)
        print(f"{name:24s} {num[0]:14.4f} {str(non_dp):>12s} {str(row['verdict']):>20s} "
              f"{(row['epsilon_lower_bound'] or 0):7.3f} {(w_loss if w_loss is not None else float('nan')):12.4f} "
              f"{wall:6.1f}", flush=True)
    summary = {
        "non_dp_variants": sum(r["truly_non_dp"] for r in rows),
        "non_dp_flagged": sum(r["truly_non_dp"] and r["verdict"] == "violation" for r in rows),
        "dp_variants_flagged": sum((not r["truly_non_dp"]) and r["verdict"] == "violation" for r in rows),
    }
    print(summary)
    payload = {"benchmark": "audit_power", "config": args.config, "seconds": args.seconds, "seed": args.seed,
               "max_samples": args.max_samples, "epsilon": epsilon, "eps_t": eps_t, "rows": rows,
               "summary": summary, "execution": execution, "machine": machine_info()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=2, default=float) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
