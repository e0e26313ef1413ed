"""`gtm bench --workers N` vs in-process: same bench.json apart from timings, and the speed-up.

    python -m benchmarks.bench_dask_gtm_bench [--workers 2] [--T 10,100]

Runs ``gtm bench --quick --no-plots --T ...`` twice (in-process, then on a local cluster of N
workers), compares the two bench.json with every timing field and the execution section removed,
and writes benchmarks/results/dask_gtm_bench.json (wall times include the cluster's start-up).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gtm_core.files import write_atomic

from .machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = {"seconds", "execution", "plots"}


def without_timings(x):
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if k not in TIMINGS}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--T", default="10,100")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "dask_gtm_bench.json"))
    args = ap.parse_args(argv)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in (("in_process", []), ("dask", ["--workers", str(args.workers)])):
            out = Path(tmp) / name
            t0 = time.monotonic()
            res = subprocess.run([sys.executable, "-m", "audits.cli", "bench", "--quick", "--no-plots", "--T", args.T,
                                  "--out", str(out), *flags], cwd=ROOT, capture_output=True, text=True)
            wall = time.monotonic() - t0
            if res.returncode != 0:
                print(res.stderr, file=sys.stderr)
                return 1
            doc = json.loads((out / "bench.json").read_text())
            runs[name] = {"wall_seconds": wall, "bench_seconds": doc["seconds"], "cells": len(doc["cells"]),
                          "execution": doc.get("execution"), "doc": without_timings(doc)}
    same = json.dumps(runs["in_process"].pop("doc"), sort_keys=True) == json.dumps(runs["dask"].pop("doc"), sort_keys=True)
    result = {"benchmark": "dask_gtm_bench",
              "command": "python -m benchmarks.bench_dask_gtm_bench " + " ".join(argv if argv is not None else sys.argv[1:]),
              "same_json_apart_from_timings": same, **runs,
              "speed_up_wall": runs["in_process"]["wall_seconds"] / runs["dask"]["wall_seconds"],
              "speed_up_grid": runs["in_process"]["bench_seconds"] / runs["dask"]["bench_seconds"],
              "machine": machine_info()}
    write_atomic(Path(args.json), json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("same_json_apart_from_timings", "speed_up_wall", "speed_up_grid")}))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
