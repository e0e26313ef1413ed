"""Final-phase sampling on Dask: 2 local worker processes vs one in-process core.

    python -m benchmarks.bench_dask [--samples 1e7] [--workers 2]

What is timed is exactly what the auditor's estimation phase does: pairs of requests of the witness
pair (p, p') of up to ESTIMATION_CHUNK runs each (10^6-run batches) (:meth:`audits.sampling.SampleBook.draw_many` ->
:meth:`audits.execution.Executor.histograms`), on the fixed-count broken GTM
(:mod:`audits.power.broken`) at the best witness of benchmarks/fixed_count_limits.py (T = 2). Both
executors must give identical histograms (asserted). Also measured: the round-trip overhead of one
batch on the cluster, the cluster's start-up time, the sample count from which Dask pays off, and
the projection for flagging fixed-count (the runs per input it needs, from
benchmarks/results/fixed_count_limits.json, at the measured per-worker throughput on 64 workers).

The machine is shared (see ``machine.loadavg`` before and after): on a loaded 2-core machine the
speed-up is bounded by the cores the other processes leave free, and this is stated in the output.

Writes benchmarks/results/dask.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from audits.audit_engine import ESTIMATION_CHUNK
from audits.gtm_audit import GTMProblem
from audits.execution import BATCH_RUNS, DaskExecutor, InProcess, Request, worker_sample_batch
from audits.power.broken import variant
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.files import write_atomic

from .machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "dask.json"
LIMITS = ROOT / "benchmarks" / "results" / "fixed_count_limits.json"


def final_phase(executor, problem, a, b, samples: int, n_codes: int, seed: int = 7):
    """The estimation phase's request pattern with a sample budget: pairs of requests of at most
    :data:`audits.audit_engine.ESTIMATION_CHUNK` runs each (10^6-run batches) until ``samples`` runs."""
    rng = np.random.default_rng(seed)
    ha = np.zeros(n_codes, dtype=np.int64)
    hb = np.zeros(n_codes, dtype=np.int64)
    done, i = 0, 0
    t0 = time.monotonic()
    while done < samples:
        m = min(ESTIMATION_CHUNK, (samples - done) // 2)
        (da, _), (db, _) = executor.histograms(problem, [Request(a, m, int(rng.integers(2**32))),
                                                         Request(b, m, int(rng.integers(2**32)))], n_codes)
        ha += da
        hb += db
        done += 2 * m
        i += 1
    return time.monotonic() - t0, ha, hb


def batch_overhead(ex: DaskExecutor, problem, a, n_codes: int, count: int = 40) -> float:
    """Seconds per 1-run batch round trip on the cluster (submit, run, gather), sequentially."""
    t0 = time.monotonic()
    for k in range(count):
        ex.client.submit(worker_sample_batch, problem, a, 1, k, n_codes, False, pure=False).result()
    return (time.monotonic() - t0) / count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=float, default=1e7, help="final-phase runs (both inputs together)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=str(OUT))
    args = ap.parse_args(argv)
    samples = int(args.samples)
    limits = json.loads(LIMITS.read_text())
    best = limits["variants"]["fixed-count"]["best_margin"]
    plan = make_plan(GTMConfig.load(ROOT / limits["config"]))
    problem = GTMProblem(SimulatorTarget(plan, variant("fixed-count")), limits["eps_t"])
    a, b = tuple(best["p"]), tuple(best["p_prime"])
    n_codes = len(a) + 1
    load_before = machine_info().get("loadavg")

    _, _, _ = final_phase(InProcess(), problem, a, b, min(samples, 2 * 10**6), n_codes)  # warm-up
    here = InProcess()
    t_in, ha, hb = final_phase(here, problem, a, b, samples, n_codes)
    cpu_rate_in = here.info(reproducible=True)["per_worker"]["in-process"]["runs_per_cpu_second"]
    print(f"in-process: {samples:.3g} runs in {t_in:.2f} s ({samples / t_in:,.0f} runs/s)", file=sys.stderr)

    t0 = time.monotonic()
    ex = DaskExecutor(workers=args.workers)
    startup = time.monotonic() - t0
    try:
        final_phase(ex, problem, a, b, 4 * BATCH_RUNS, n_codes)  # warm-up (imports on the workers)
        ex.stats.__init__()
        t_dk, ha2, hb2 = final_phase(ex, problem, a, b, samples, n_codes)
        assert np.array_equal(ha, ha2) and np.array_equal(hb, hb2), "placement changed the histograms"
        info = ex.info(reproducible=True)
        overhead = batch_overhead(ex, problem, a, n_codes)
    finally:
        t0 = time.monotonic()
        ex.close()
        shutdown = time.monotonic() - t0
    print(f"dask x{args.workers}: {samples:.3g} runs in {t_dk:.2f} s ({samples / t_dk:,.0f} runs/s); "
          f"speed-up {t_in / t_dk:.2f}", file=sys.stderr)

    rate_in = samples / t_in
    rate_dk = samples / t_dk
    per_worker = [v["runs_per_second"] for v in info["per_worker"].values() if v["runs_per_second"]]
    worker_rate = float(np.median(per_worker)) if per_worker else rate_dk / args.workers
    # Dask pays off from N runs with startup + N / rate_dk < N / rate_in (batch overheads are inside rate_dk)
    gain = 1 / rate_in - 1 / rate_dk
    break_even = startup / gain if gain > 0 else math.inf
    # the machine is shared: CPU seconds show what the workers would do on cores of their own
    cpu_rates = [v["runs_per_cpu_second"] for v in info["per_worker"].values() if v["runs_per_cpu_second"]]
    cpu_rate_worker = float(np.median(cpu_rates)) if cpu_rates else None
    batches = samples / BATCH_RUNS
    t_in_free = samples / cpu_rate_in
    t_dk_free = (samples / args.workers / cpu_rate_worker + batches / args.workers * overhead) if cpu_rate_worker else None
    needed = float(limits["runs_per_side_needed_at_best_witness"])
    # an audit with --max-samples S gives the final phase (1 - 0.4 - 0.15) S, half per input (less 5 sd)
    max_samples_needed = 2 * needed / 0.45
    result = {
        "benchmark": "dask",
        "command": "python -m benchmarks.bench_dask " + " ".join(argv if argv is not None else sys.argv[1:]),
        "target": "simulator(fixed-count broken GTM), examples/default.toml, witness of fixed_count_limits.json",
        "pair": {"p": list(a), "p_prime": list(b)},
        "samples": samples,
        "measured_at": f"{samples:.3g} runs",
        "in_process": {"seconds": t_in, "runs_per_second": rate_in},
        "dask": {"workers": args.workers, "seconds": t_dk, "runs_per_second": rate_dk, "startup_seconds": startup,
                 "shutdown_seconds": shutdown, "execution": info},
        "speed_up": t_in / t_dk,
        "batch_overhead_seconds": overhead,
        "cpu": {"in_process_runs_per_cpu_second": cpu_rate_in, "worker_runs_per_cpu_second": cpu_rate_worker,
                "projected_speed_up_on_free_cores": (t_in_free / t_dk_free) if t_dk_free else None,
                "label": "PROJECTION, not a measured wall-clock speed-up: runs per CPU-second of each process "
                         "(worker threads included) with the measured per-batch round trip added, i.e. what "
                         "the same code gives when each worker has a core to itself"},
        "batch_runs": BATCH_RUNS,
        "break_even_runs": break_even,
        "identical_histograms": True,
        "fixed_count": {
            "runs_per_input_needed": needed,
            "max_samples_needed": max_samples_needed,
            "per_worker_runs_per_second": worker_rate,
            "projected_seconds_on_2_workers": max_samples_needed / (2 * worker_rate)
            + max_samples_needed / BATCH_RUNS / 2 * overhead,
            "projected_seconds_on_64_workers": max_samples_needed / (64 * worker_rate)
            + max_samples_needed / BATCH_RUNS / 64 * overhead,
            "projected_seconds_on_64_free_cores": (max_samples_needed / (64 * cpu_rate_worker)
                                                   + max_samples_needed / BATCH_RUNS / 64 * overhead)
            if cpu_rate_worker else None,
            "note": "PROJECTION: the whole audit budget (selection + validation + final) spread evenly over 64 "
                    "workers, each as fast as one of this run's workers (loaded machine: wall rate; free "
                    "cores: rate per CPU-second), plus the measured round trip per 10^6-run batch. The "
                    "runs needed are for a MEDIAN bound above epsilon at the known witness (about one half "
                    "chance of flagging); see benchmarks/results/dask_fixed_count.json for the 1e9 run.",
        },
        "machine": machine_info(),
        "loadavg_before": load_before,
        "load_note": "2 cores shared with other helpers' jobs (load averages above): speed-ups are what the "
                     "cores left free allowed, not the cluster's ceiling",
    }
    if samples < 10**8:
        result["extrapolation_to_1e8"] = {
            "label": "EXTRAPOLATED, not measured: linear in runs (batches are identical 10^6-run units)",
            "in_process_seconds": t_in * 1e8 / samples, "dask_seconds": startup + t_dk * 1e8 / samples,
            "speed_up_including_startup": (t_in * 1e8 / samples) / (startup + t_dk * 1e8 / samples)}
    write_atomic(Path(args.json), json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("speed_up", "batch_overhead_seconds", "break_even_runs")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
