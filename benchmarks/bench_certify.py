"""`gtm certify` wall time, quick and full, on the bundled examples.

    python -m benchmarks.bench_certify [--full] [--configs default,theorem23]

The issue's bar: `--quick` <= 2 minutes and the full run <= 15 minutes on 2 cores. Each run
uses a fresh lemma-check cache (the first, uncached run is the one that counts), records the
per-stage timings of the certificate's provenance, its verdict, and the machine's load average
(the budgets of the exact search are CPU time: on a loaded machine its wall time grows).
Writes benchmarks/results/certify.json with machine information.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine_info
from gtm_core import GTMConfig

ROOT = Path(__file__).parent.parent


def run_one(name: str, quick: bool) -> dict:
    from audits.certify import certify

    with tempfile.TemporaryDirectory() as cache:
        old = os.environ.get("GTM_CACHE_DIR")
        os.environ["GTM_CACHE_DIR"] = cache
        try:
            t0 = time.perf_counter()
            cert = certify(GTMConfig.load(ROOT / "examples" / f"{name}.toml"), quick=quick, seed=1, progress=True)
            wall = time.perf_counter() - t0
        finally:
            if old is None:
                os.environ.pop("GTM_CACHE_DIR", None)
            else:
                os.environ["GTM_CACHE_DIR"] = old
    return {"config": name, "mode": "quick" if quick else "full", "verdict": cert.verdict,
            "wall_seconds": round(wall, 2), "stages": cert.provenance["timings_seconds"],
            "limit_seconds": 120 if quick else 900, "within_limit": wall <= (120 if quick else 900)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--full", action="store_true", help="also time the full run (up to 15 minutes each)")
    ap.add_argument("--configs", default="default")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "certify.json"))
    args = ap.parse_args(argv)
    rows = []
    for name in args.configs.split(","):
        for quick in ([True, False] if args.full else [True]):
            row = run_one(name.strip(), quick)
            rows.append(row)
            print(f"{row['config']:<12} {row['mode']:<6} {row['verdict']:<11} {row['wall_seconds']:8.1f} s "
                  f"(limit {row['limit_seconds']} s)")
    out = {"benchmark": "certify", "machine": machine_info(), "runs": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
