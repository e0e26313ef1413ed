"""The exact engine's worst-case search with its starts on Dask vs in-process: same result, wall times.

    python -m benchmarks.bench_search_starts [--attempts 400] [--horizon 3] [--seed 1] [--workers 2]

Runs :func:`gtm_core.exact.worst_case_search` on the default configuration's plan with an attempt
budget (so the result depends only on the seed), once in-process and once with its structured and
random starts mapped on a local Dask cluster of N worker processes (``map_starts`` = the executor's
ordered map, :mod:`audits.execution`). The refinement phase (the remaining attempts) is sequential
and stays in this process either way. Writes benchmarks/results/search_starts.json: both wall
times (the cluster's start-up reported apart), whether the results are identical, and the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from audits.execution import DaskExecutor
from gtm_core.config import GTMConfig
from gtm_core.exact import worst_case_search
from gtm_core.files import write_atomic
from gtm_core.planners import make_plan

from .machine import machine_info

SAME = ("p", "p_prime", "transcript", "t", "loss", "loss_error", "claimed", "evaluations", "attempts", "complete")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attempts", type=int, default=400)
    ap.add_argument("--horizon", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--json", default=str(Path(__file__).parent / "results" / "search_starts.json"))
    args = ap.parse_args(argv)
    plan = make_plan(GTMConfig.load(args.config))
    kw = dict(horizon=args.horizon, seconds=3600.0, seed=args.seed, max_attempts=args.attempts)
    t0 = time.monotonic()
    local = worst_case_search(plan, **kw)
    t_local = time.monotonic() - t0
    print(f"in-process: loss {local.loss:.10g}, {local.attempts} attempts in {t_local:.1f} s", flush=True)
    t0 = time.monotonic()
    with DaskExecutor(workers=args.workers) as ex:
        startup = time.monotonic() - t0
        t1 = time.monotonic()
        remote = worst_case_search(plan, **kw, map_starts=ex.map_ordered, chunk=8 * ex.workers)
        t_remote = time.monotonic() - t1
    print(f"dask x{args.workers}: loss {remote.loss:.10g} in {t_remote:.1f} s (+ {startup:.1f} s cluster start-up)",
          flush=True)
    same = all(getattr(local, k) == getattr(remote, k) for k in SAME)
    result = {"benchmark": "search_starts",
              "command": "python -m benchmarks.bench_search_starts " + " ".join(argv if argv is not None else sys.argv[1:]),
              "attempts": args.attempts, "horizon": args.horizon, "seed": args.seed, "workers": args.workers,
              # the first 55 % of the attempts are starts (mapped); the rest refine the best one in order
              "mapped_starts": math.ceil(0.55 * args.attempts),
              "in_process_seconds": t_local, "dask_seconds": t_remote, "dask_startup_seconds": startup,
              "speed_up_excluding_startup": t_local / t_remote if t_remote > 0 else None,
              "identical_result": same, "loss": local.loss, "machine": machine_info()}
    write_atomic(Path(args.json), json.dumps(result, indent=2) + "\n")
    print(f"identical: {same}; speed-up {result['speed_up_excluding_startup']:.2f}x excluding start-up")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
