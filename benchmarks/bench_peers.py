"""Throughput of the peer simulators (gtm_core.baselines) and of their quadrature false-halt laws.

    python -m benchmarks.bench_peers [--seconds 10]

A "step" is one live run advancing one step on the null stream p_t = 0 (nothing halts), so every
run stays alive for all T steps. Writes benchmarks/results/peers.json with machine information.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.machine import machine_info  # noqa: E402
from gtm_core.baselines import (  # noqa: E402
    AboveThreshold,
    CohenTest,
    GhaziRandomDropping,
    LiuTalwar,
    ThresholdSelectTester,
)
from gtm_core.baselines.liu_talwar_selection import LiuTalwarSelection  # noqa: E402


def peers(T):
    kw = dict(epsilon=1.0, eps_1=0.1, p_star=0.5, beta=0.05)
    return [LiuTalwar(T=T, **kw), CohenTest(**kw), GhaziRandomDropping(**kw), ThresholdSelectTester(**kw),
            AboveThreshold(T=T, **kw), LiuTalwarSelection(**kw)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "peers.json"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    T, n = 100, 20_000
    budget = args.seconds / 10
    for peer in peers(T):
        done, elapsed = 0, 0.0
        while elapsed < budget or done == 0:
            t0 = time.perf_counter()
            peer.simulate(np.zeros(T), n, rng)
            elapsed += time.perf_counter() - t0
            done += n * T
        t0 = time.perf_counter()
        reps = 0
        while time.perf_counter() - t0 < budget or reps == 0:
            peer.false_halt_probability(1e-5, T)
            reps += 1
        quad = (time.perf_counter() - t0) / reps
        row = {"peer": peer.name, "T": T, "n": n, "steps_per_second": done / elapsed, "quadrature_seconds": quad}
        if isinstance(peer, LiuTalwarSelection):
            row["note"] = ("no horizon: a run is one selection (its candidate count drawn at once, closed-form law), "
                           "so 'steps' = runs x T overstates its work; its false-halt law is closed-form, not quadrature")
        rows.append(row)
        print(f"{peer.name:18s} {done / elapsed / 1e6:8.2f} M steps/s   false_halt_probability(T={T}): {quad * 1e3:8.2f} ms")
    out = {"benchmark": "peers", "machine": machine_info(), "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
