"""Soak run of a persisted deployment: per-step overhead, memory and state size over >= 1e5 steps.

    python -m benchmarks.bench_soak [--steps 100000] [--dir DIR] [--disk-steps 300] [--seconds S]

A deployment of ``examples/default.toml`` (horizon = --steps) steps a cheap mechanism
(Bernoulli(0) with the ``batch`` fast path: the GTM always continues, so the run lasts all
steps) through the full write-ahead protocol: two atomic, fsync'ed state writes per step.

* Main run in ``--dir`` (default: a fresh directory in /dev/shm when it exists, else the
  system temporary directory). On tmpfs fsync is free, so this isolates the CPU overhead of
  the protocol (planning the step, sealing and writing the state) from the disk.
* Durable run: ``--disk-steps`` steps in ``--disk-dir`` (default: the system temporary
  directory; its filesystem type is recorded),
  where each step pays two fsync'ed renames plus a directory fsync.
* Traced run: ``--traced-steps`` steps with tracemalloc on (it slows every allocation down, so
  the main run does without it).
* Baseline: the same steps through the in-memory reference driver (GTMRun, no persistence).

Every ``--every`` steps (after a ``gc.collect()``) it records the mean per-step time of the
window, the process RSS (/proc/self/status), the tracemalloc current/peak (traced run) and the
state file size. A step that
fails (evaluation budget exceeded, probability as planned) starts a new deployment and is
counted. Writes benchmarks/results/soak.json with machine information.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.machine import machine_info  # noqa: E402
from gtm_core import GTMConfig, make_plan  # noqa: E402
from gtm_core.deployment import Deployment  # noqa: E402
from gtm_core.errors import EvaluationBudgetExceeded  # noqa: E402
from gtm_core.evaluation import BernoulliMechanism  # noqa: E402
from gtm_core.reference import GTMRun  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def filesystem_of(path: Path) -> str:
    """Type of the filesystem holding path (longest matching mount point in /proc/mounts)."""
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as fh:
            for line in fh:
                parts = line.split()
                mount, kind = parts[1], parts[2]
                if str(path.resolve()).startswith(mount) and len(mount) > len(best):
                    best, fstype = mount, kind
    except OSError:
        pass
    return fstype


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def soak(directory: Path, steps: int, every: int, use_tracemalloc: bool, seconds: float | None) -> dict:
    config = GTMConfig.load(ROOT / "examples" / "default.toml").with_changes(horizon=steps)
    mech = BernoulliMechanism(0.0, np.random.default_rng(1))
    windows = []
    step_times = np.empty(steps)  # preallocated: the benchmark's own bookkeeping must not grow
    failures, deployments = 0, 1
    path = directory / "soak.state"
    dep = Deployment.create(path, config)
    if use_tracemalloc:
        tracemalloc.start()
    start = time.perf_counter()
    window_start, done = start, 0
    while done < steps:
        t0 = time.perf_counter()
        try:
            dep.step(mech)
        except EvaluationBudgetExceeded:
            failures += 1
            dep.close()
            deployments += 1
            path = directory / f"soak{deployments}.state"
            dep = Deployment.create(path, config.with_changes(horizon=steps))
        step_times[done] = time.perf_counter() - t0
        done += 1
        if done % every == 0 or done == steps:
            gc.collect()  # count live memory only (numpy/scipy leave collectable cycles behind)
            now = time.perf_counter()
            cur, peak = tracemalloc.get_traced_memory() if use_tracemalloc else (None, None)
            row = {
                "steps": done,
                "deployment_step": dep.steps_done,
                "elapsed_s": round(now - start, 3),
                "window_ms_per_step": round((now - window_start) * 1000 / every, 4),
                "rss_mb": rss_mb(),
                "tracemalloc_current_mb": None if cur is None else round(cur / 2**20, 3),
                "tracemalloc_peak_mb": None if peak is None else round(peak / 2**20, 3),
                "state_bytes": os.stat(path).st_size,
            }
            windows.append(row)
            print(f"[soak] {done:>7} steps  {row['window_ms_per_step']:.3f} ms/step  rss {row['rss_mb']:.1f} MB  "
                  f"traced {row['tracemalloc_current_mb']} MB  state {row['state_bytes']} B", file=sys.stderr)
            window_start = time.perf_counter()
            if seconds is not None and now - start > seconds:
                print(f"[soak] time budget of {seconds} s reached", file=sys.stderr)
                break
    if use_tracemalloc:
        tracemalloc.stop()
    status = dep.status_dict()
    dep.close()
    ms = (step_times[:done] * 1000).tolist()
    return {
        "directory_filesystem": filesystem_of(directory),
        "steps": done,
        "completed": done >= steps,
        "tracemalloc": use_tracemalloc,
        "deployments": deployments,
        "budget_exceeded_failures": failures,
        "final_status": status["status"],
        "transcript": status["transcript"],
        "per_step_ms": {"mean": statistics.fmean(ms), "p50": percentile(ms, 0.5), "p99": percentile(ms, 0.99),
                        "max": max(ms)},
        "windows": windows,
        "state_bytes": {"min": min(w["state_bytes"] for w in windows), "max": max(w["state_bytes"] for w in windows)},
        "rss_mb": {"first_window": windows[0]["rss_mb"], "last_window": windows[-1]["rss_mb"],
                   "max": max(w["rss_mb"] or 0 for w in windows)},
    }


def durable(directory: Path, steps: int) -> dict:
    config = GTMConfig.load(ROOT / "examples" / "default.toml").with_changes(horizon=max(steps, 1))
    mech = BernoulliMechanism(0.0, np.random.default_rng(2))
    times = []
    with Deployment.create(directory / "durable.state", config) as dep:
        for _ in range(steps):
            t0 = time.perf_counter()
            dep.step(mech)
            times.append((time.perf_counter() - t0) * 1000)
    return {"directory_filesystem": filesystem_of(directory), "steps": steps,
            "per_step_ms": {"mean": statistics.fmean(times), "p50": percentile(times, 0.5),
                            "p99": percentile(times, 0.99), "max": max(times)}}


def baseline(steps: int) -> dict:
    config = GTMConfig.load(ROOT / "examples" / "default.toml").with_changes(horizon=steps)
    run = GTMRun(make_plan(config), seed=3)
    mech = BernoulliMechanism(0.0, np.random.default_rng(3))
    t0 = time.perf_counter()
    for _ in range(steps):
        run.step(mech)
    return {"steps": steps, "per_step_ms": (time.perf_counter() - t0) * 1000 / steps,
            "note": "in-memory GTMRun (cached planner), no persistence"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=10_000)
    ap.add_argument("--dir", default=None, help="directory for the main run (default: /dev/shm if present)")
    ap.add_argument("--disk-steps", type=int, default=300)
    ap.add_argument("--disk-dir", default=None, help="directory on a real disk for the durable run (default: system temp)")
    ap.add_argument("--baseline-steps", type=int, default=2000)
    ap.add_argument("--traced-steps", type=int, default=10_000, help="steps of the tracemalloc run (0: skip)")
    ap.add_argument("--seconds", type=float, default=None, help="stop the main run after this many seconds")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "soak.json"))
    args = ap.parse_args(argv)
    if args.steps < 1 or args.every < 1 or args.disk_steps < 0:
        ap.error("--steps and --every must be >= 1, --disk-steps >= 0")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    base_dir = Path(args.dir) if args.dir else (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    main_dir = Path(tempfile.mkdtemp(prefix="gtm-soak-", dir=base_dir))
    disk_dir = Path(tempfile.mkdtemp(prefix="gtm-soak-disk-", dir=args.disk_dir))
    try:
        result = {"benchmark": "soak", "machine": machine_info(),
                  "command": "python -m benchmarks.bench_soak " + " ".join(sys.argv[1:] if argv is None else argv)}
        result["baseline"] = baseline(args.baseline_steps)
        print(f"[soak] baseline (in-memory, no persistence): {result['baseline']['per_step_ms']:.3f} ms/step",
              file=sys.stderr)
        if args.disk_steps:
            result["durable_disk"] = durable(disk_dir, args.disk_steps)
            d = result["durable_disk"]
            print(f"[soak] durable run on {d['directory_filesystem']}: {d['per_step_ms']['mean']:.2f} ms/step "
                  f"(p99 {d['per_step_ms']['p99']:.2f})", file=sys.stderr)
        if args.traced_steps:
            traced_dir = main_dir / "traced"
            traced_dir.mkdir()
            result["traced"] = soak(traced_dir, args.traced_steps, max(1, args.traced_steps // 10), True, None)
            tr = result["traced"]["windows"]
            print(f"[soak] traced run: tracemalloc current {tr[0]['tracemalloc_current_mb']} -> "
                  f"{tr[-1]['tracemalloc_current_mb']} MB over {result['traced']['steps']} steps", file=sys.stderr)
        result["main"] = soak(main_dir, args.steps, args.every, False, args.seconds)
    finally:
        shutil.rmtree(main_dir, ignore_errors=True)
        shutil.rmtree(disk_dir, ignore_errors=True)
    m = result["main"]
    print(f"main run on {m['directory_filesystem']}: {m['steps']} steps, {m['per_step_ms']['mean']:.3f} ms/step "
          f"(p50 {m['per_step_ms']['p50']:.3f}, p99 {m['per_step_ms']['p99']:.3f}); RSS {m['rss_mb']['first_window']:.1f} "
          f"-> {m['rss_mb']['last_window']:.1f} MB; state file {m['state_bytes']['min']}-{m['state_bytes']['max']} bytes; "
          f"{m['budget_exceeded_failures']} budget failures")
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
