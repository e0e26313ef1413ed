"""A GTM deployment speaking the target protocol (docs/protocol.md), for timing `gtm audit`.

    python -m benchmarks.targets.gtm_target CONFIG

Reads JSON lines {"p": [...], "n": N, "seed": S} on stdin and answers {"halt": [...]} using
gtm_core.simulator for the plan of CONFIG (a correct deployment: the audit should find no violation).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from gtm_core import GTMConfig, make_plan
from gtm_core.simulator import simulate


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    plan = make_plan(GTMConfig.load(argv[0]))
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        res = simulate(plan, req["p"], int(req["n"]), np.random.default_rng(req.get("seed")))
        sys.stdout.write(json.dumps({"halt": res.halt.tolist()}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
