"""Power suite over audit seeds (results that do not depend on one seed): every broken GTM
deployment of :mod:`audits.power.broken`, audited in-process at a sample budget over several seeds.

    python -m benchmarks.bench_power_seeds [--seeds 5] [--max-samples 30000000] [--max-T 50]
                                           [--variants a,b,...] [--workers N | --scheduler ADDRESS]
                                           [--tag TAG] [--results-dir DIR]

Seed rule (fixed before looking at any result): audit seeds 1..seeds for every variant. The
deployments run in-process (:class:`audits.targets.CallableTarget` around
:func:`audits.power.broken.simulate_deployment`, the same code ``python -m audits.serve --broken``
serves), so a sample budget makes every row a function of (code, variant, seed) - rerunning the script
at another commit compares the auditor, not the machine's load. ``benchmarks.bench_audit_power`` is
the time-budgeted suite through the subprocess protocol (one seed).

Per variant: how many seeds flag it, the median and minimum bound, and the median numerical true loss
of the witnesses (:func:`benchmarks.bench_audit_power.witness_true_loss`). Writes
benchmarks/results/power_seeds[-TAG].json with machine information.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

from audits.gtm_audit import audit
from audits.power.broken import VARIANTS, simulate_deployment, variant
from audits.targets import CallableTarget
from benchmarks.bench_audit_power import witness_true_loss
from benchmarks.cluster import add_execution_arguments, execution_record, executor_from, ordered
from benchmarks.machine import machine_info
from gtm_core.config import GTMConfig
from gtm_core.errors import GTMError
from gtm_core.planners import make_plan


class Deployment:
    """``fn(p, n, seed)`` of a broken variant (picklable, so it can run on a Dask worker)."""

    def __init__(self, config: str, name: str):
        self.plan, self.name = make_plan(GTMConfig.load(config)), name
        self.impl = variant(name)

    def __call__(self, p, n: int, seed: int) -> np.ndarray:
        return simulate_deployment(self.plan, self.impl, p, int(n), np.random.default_rng(seed)).halt


def row(config: str, job: tuple[str, int], max_samples: int, max_T: int) -> dict:
    name, seed = job
    dep = Deployment(config, name)
    eps_t = dep.plan.step(1).eps_t
    t0 = time.monotonic()
    r = audit(CallableTarget(dep, name=name, max_T=max_T), epsilon=dep.plan.epsilon, eps_t=eps_t, seconds=None,
              max_samples=max_samples, seed=seed, progress=False, max_T=max_T)
    w = r.witness.to_dict()
    return {"variant": name, "seed": seed, "verdict": r.verdict, "lower_bound": r.epsilon_lower_bound,
            "witness_true_loss": witness_true_loss(dep.plan, dep.impl, w), "witness_T": len(w["p"]),
            "event": w["event"], "family": w["family"], "samples": r.samples,
            "seconds": time.monotonic() - t0}


def summarise(rows: list[dict]) -> dict:
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == name]
        bounds = [r["lower_bound"] for r in rs]
        out[name] = {"seeds": len(rs), "flagged": sum(r["verdict"] == "violation" for r in rs),
                     "median_bound": float(np.median(bounds)), "min_bound": float(min(bounds)),
                     "max_bound": float(max(bounds)),
                     "median_witness_true_loss": float(np.median([r["witness_true_loss"] for r in rs]))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-samples", type=float, default=3e7)
    ap.add_argument("--max-T", type=int, default=50)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--config", default="examples/default.toml")
    add_execution_arguments(ap)
    ap.add_argument("--tag", default="")
    ap.add_argument("--results-dir", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args(argv)
    names = args.variants.split(",")
    try:
        for name in names:
            variant(name)  # a bad name exits before any work
    except GTMError as exc:
        print(f"bench_power_seeds: error: {exc}", file=sys.stderr)
        return 2
    jobs = [(name, seed) for name in names for seed in range(1, args.seeds + 1)]
    t0 = time.monotonic()
    rows = []
    with executor_from(args, "bench_power_seeds") as executor:
        execution = execution_record(executor)
        fn = partial(row, args.config, max_samples=int(args.max_samples), max_T=args.max_T)
        for r in ordered(executor, fn, jobs):
            rows.append(r)
            print(f"{r['variant']:22s} seed {r['seed']}: {r['verdict']:18s} bound {r['lower_bound']:7.3f} "
                  f"(witness true loss {r['witness_true_loss']:.3f}, T={r['witness_T']}, {r['event']}, "
                  f"{r['family']}) {r['seconds']:.0f} s", flush=True)
    summary = summarise(rows)
    for name, s in summary.items():
        print(f"{name:22s} flagged {s['flagged']}/{s['seeds']}  median {s['median_bound']:.3f}  "
              f"min {s['min_bound']:.3f}  median witness loss {s['median_witness_true_loss']:.3f}")
    name = "power_seeds" + (f"-{args.tag}" if args.tag else "") + ".json"
    doc = {"benchmark": "power_seeds", "command": "python -m benchmarks.bench_power_seeds " + " ".join(
        sys.argv[1:] if argv is None else argv), "config": args.config, "seed_rule": "audit seeds 1..seeds",
        "max_samples": int(args.max_samples), "max_T": args.max_T, "execution": execution, "summary": summary,
        "rows": rows, "seconds_total": time.monotonic() - t0, "machine": machine_info()}
    (Path(args.results_dir) / name).write_text(json.dumps(doc, indent=2, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
