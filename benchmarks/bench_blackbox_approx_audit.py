"""The statistical-audit witness of Algorithm 2 (approximate DP) at d = 1, 2, 3 ->
benchmarks/results/blackbox_approx_audit.{json,md}.

    python -m benchmarks.bench_blackbox_approx_audit [--seed 0]

audit_finite_delta at (eps, delta) = (0.9, 0.1), confidence 0.95, pairs searched by candidate_pairs, on the
tiny instances of the exact-law witness (audits/power/blackbox.py::approx_audit_instances); the correct
evaluator and the noiseless GAP-MAX variant. tests/audits/power/test_blackbox.py runs the same audits
(seed 0) and asserts the verdicts.
"""

import argparse
import json
import os
import time
from pathlib import Path

from audits.power.blackbox import run_approx_audits
from benchmarks.machine import machine_info


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    load_before, t0 = os.getloadavg(), time.monotonic()
    rows = run_approx_audits(a.seed)
    res = {"command": f"python -m benchmarks.bench_blackbox_approx_audit --seed {a.seed}", "rows": rows,
           "seconds": time.monotonic() - t0, "machine": machine_info(), "loadavg_before": list(load_before),
           "loadavg_after": list(os.getloadavg())}
    out = Path(__file__).parent / "results"
    (out / "blackbox_approx_audit.json").write_text(json.dumps(res, indent=2) + "\n")
    lb, la = res["loadavg_before"], res["loadavg_after"]
    lines = ["# Statistical audit of Algorithm 2 (audit_finite_delta), d = 1, 2, 3", "",
             f"Command: `{res['command']}`; {res['seconds']:.0f} s wall; load average before "
             f"{lb[0]:.2f}/{lb[1]:.2f}/{lb[2]:.2f}, after {la[0]:.2f}/{la[1]:.2f}/{la[2]:.2f}; "
             f"{res['machine']['platform']}, {res['machine']['cpu_count']} CPUs (shared).", "",
             "| d | C | variant | verdict | delta lower bound (claim 0.1) | confidence | samples | s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['d']} | {r['C']:g} | {r['variant']} | {r['verdict']} | {r['delta_lower_bound']:.3f} | "
                     f"{r['confidence']} | {r['samples']} | {r['seconds']:.1f} |")
    (out / "blackbox_approx_audit.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
