"""Can a reproducible ``--max-samples`` audit on Dask workers flag the fixed-count broken GTM?

    python -m benchmarks.bench_dask_fixed_count [--workers 2] [--max-samples 1e9] [--seed 1]

The audit runs the fixed-count deployment (:mod:`audits.power.broken`) in the simulator on a local
Dask cluster, streams up to T = 2, with the best witness of benchmarks/fixed_count_limits.py given to
the selection phase as an extra candidate (the "exact engine's witness as proposer" of the issue).
fixed_count_limits.json says a known-witness audit needs ~2.2e8 runs per input for a median bound
above epsilon (so even at that budget the chance of flagging is about one half). The default
``--max-samples`` gives the final phase (45 % of the budget) about that many runs per input.

Writes benchmarks/results/dask_fixed_count.json: the audit JSON (verdict, bound, witness), its
execution section (workers, batches, runs per second per worker) and the wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from audits.gtm_audit import audit
from audits.execution import DaskExecutor
from audits.power.broken import variant
from audits.pair_search import Candidate
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.files import write_atomic

from .machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
LIMITS = ROOT / "benchmarks" / "results" / "fixed_count_limits.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-samples", type=float, default=1e9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "dask_fixed_count.json"))
    args = ap.parse_args(argv)
    limits = json.loads(LIMITS.read_text())
    best = limits["variants"]["fixed-count"]["best_margin"]
    plan = make_plan(GTMConfig.load(ROOT / limits["config"]))
    witness = Candidate(tuple(best["p"]), tuple(best["p_prime"]), "fixed-count-limits")
    load_before = machine_info().get("loadavg")
    t0 = time.monotonic()
    with DaskExecutor(workers=args.workers) as ex:
        r = audit(SimulatorTarget(plan, variant("fixed-count")), epsilon=limits["epsilon"], eps_t=limits["eps_t"],
                  seconds=None, max_samples=int(args.max_samples), seed=args.seed, progress=sys.stderr.isatty(),
                  max_T=2, extra_candidates=[witness], executor=ex)
        info = ex.info(reproducible=True)
    wall = time.monotonic() - t0
    out = {"benchmark": "dask_fixed_count",
           "command": "python -m benchmarks.bench_dask_fixed_count " + " ".join(argv if argv is not None else sys.argv[1:]),
           "audit": r.to_dict(), "execution": info, "wall_seconds": wall, "flagged": bool(r.violation),
           "runs_per_input_needed_for_median_detection": limits["runs_per_side_needed_at_best_witness"],
           "machine": machine_info(), "loadavg_before": load_before}
    write_atomic(Path(args.json), json.dumps(out, indent=2) + "\n")
    print(f"{r.verdict}: bound {r.epsilon_lower_bound:.5f} vs eps {limits['epsilon']}; {r.samples:,} samples in "
          f"{wall:.0f} s on {info['workers']} workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
