"""Statistical audit of BatchToCO and its broken variants with the generic finite-output auditor
(audits/finite.py, built on the `blackbox` branch): `python -m benchmarks.co_audit [SECONDS]`.

Target: gtm_core.batchtoco.codes (the whole output sequence as one code) on the 3-edge, 3-vertex
coverage stream of the exact witness and its neighbour (edge 2 absent); eps = 0.9, alpha = 0.05
(95% confidence), seed 0. Writes benchmarks/results/co/audit.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from audits.power.batchtoco import variant as broken
from gtm_core.batchtoco.codes import batchtoco_counts
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.streams import EdgeStream

OUT = Path(__file__).resolve().parent / "results" / "co" / "audit.json"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    seconds = float(argv[0]) if argv else 90.0
    try:
        from audits.finite import CallableFiniteTarget, audit_finite
    except ImportError:
        print("co_audit: audits.finite (the finite-output auditor) is not available in this tree", file=sys.stderr)
        return 2
    config = COConfig(epsilon=0.9, k=1, kappa=0.2)
    stream = EdgeStream("tiny", ("a", "b", "c"), ((0, 1), (0, 2), (1, 2)))
    inputs = {"S": stream, "S-2": stream.neighbour(2)}
    out = {"seconds_budget": seconds, "epsilon": 0.9, "summary": "sequence", "variants": {}}
    for variant in ("correct", "unnoised_score", "batch_eps_level"):
        def fn(inp, n, seed, variant=variant):
            return dict(batchtoco_counts(config, inputs[inp], n, seed, implementation=broken(variant)))

        t = time.time()
        res = audit_finite(CallableFiniteTarget(fn, name=f"batchtoco-{variant}"), [("S", "S-2")], epsilon=0.9,
                           seconds=seconds, seed=0, pilot=100).to_dict()
        out["variants"][variant] = {k: res.get(k) for k in
                                    ("verdict", "epsilon_claimed", "epsilon_lower_bound", "confidence", "samples")}
        out["variants"][variant]["wall_seconds"] = time.time() - t
        print(variant, out["variants"][variant], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
