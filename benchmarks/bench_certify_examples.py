"""`gtm certify --quick` on every bundled example and `gtm tune` on the tuning questions: wall and CPU.

    python -m benchmarks.bench_certify_examples [--examples default,budget/capped] [--no-tune]
                                               [--no-certify] [--certify-tuned] [--capped default]
                                               [--full] [--out PATH]

Every run is a fresh ``python -m audits.cli ...`` subprocess (what a user runs, interpreter start-up
and imports included) with a fresh lemma-check cache (the first, uncached run is the one that counts)
and ``--seed 1``. Per run it records the wall time, the CPU time of the child (user + system, from
``getrusage(RUSAGE_CHILDREN)``), the load average before and after, the exit code, and for certify
the verdict and the per-witness stage timings of the certificate's provenance.

The targets (docs/horizon.md, README): ``--quick`` <= 120 s wall, full <= 900 s, ``gtm tune`` <= 30 s wall, each on the
idle 2-core machine. On a shared machine wall time is CPU time plus the time the process waited for a
core; ``wait_seconds`` = wall - CPU is that wall-clock overhead (the runs are single-threaded apart
from short numpy/flint bursts, so CPU <= wall in practice). ``within_target_cpu`` judges CPU time
against the wall target: what an idle machine would show, less the waiting.

Writes benchmarks/results/certify_examples.json with machine information.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import machine_info

ROOT = Path(__file__).resolve().parent.parent
QUICK_LIMIT, FULL_LIMIT, TUNE_LIMIT = 120.0, 900.0, 30.0
# gtm tune: the benchmark questions - T = 10, 100, 1000 for both --p-bar and --max-evaluations, at the
# setting of examples/horizon.toml (eps = 1, eps_t = 0.1, p* = 0.5; its p_bar 0.00142931)
TUNE_BASE = ("--epsilon", "1", "--eps-t", "0.1", "--p-star", "0.5")
TUNE_QUESTIONS = tuple(
    [(f"T{T}-p-bar", T, ("--p-bar", "0.00142931")) for T in (10, 100, 1000)]
    + [(f"T{T}-max-evaluations", T, ("--max-evaluations", str(n))) for T, n in ((10, 1e4), (100, 1e5), (1000, 1e6))])


def bundled_examples() -> list[str]:
    """Every GTM configuration under examples/ (a ``[gtm]`` table; ``budget/capped`` style names, without
    .toml; examples/co/ holds coverage-oracle configurations, which ``gtm certify`` does not take)."""
    ex = ROOT / "examples"
    return sorted(str(p.relative_to(ex).with_suffix("")) for p in ex.rglob("*.toml") if "[gtm]" in p.read_text())


def capped_variant(path: Path) -> str:
    """The TOML of the example at ``path`` with ``evaluation_budget = "refuse"`` (a capped deployment)."""
    from gtm_core import GTMConfig

    d = GTMConfig.load(path).to_dict()
    return GTMConfig.from_dict({**d, "gtm": {**d["gtm"], "evaluation_budget": "refuse"}}).to_toml()


def loadavg() -> list[float]:
    try:
        with open("/proc/loadavg") as fh:
            return [float(x) for x in fh.read().split()[:3]]
    except OSError:
        return []


def timed(args: list[str], *, env: dict) -> dict:
    """Run ``python -m audits.cli *args`` from the repository root; wall and child CPU seconds."""
    before, load0 = resource.getrusage(resource.RUSAGE_CHILDREN), loadavg()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "audits.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": "gtm " + " ".join(args), "exit_code": proc.returncode, "wall_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2), "wait_seconds": round(max(0.0, wall - cpu), 2),
            "loadavg_before": load0, "loadavg_after": loadavg(),
            "stderr_tail": proc.stderr.strip().splitlines()[-3:]}


def child_env(cache: str) -> dict:
    env = dict(os.environ, GTM_CACHE_DIR=cache)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def certify_one(config: Path, name: str, quick: bool, work: Path) -> dict:
    out = work / f"{name.replace('/', '_')}-{'quick' if quick else 'full'}.json"
    with tempfile.TemporaryDirectory() as cache:
        row = timed(["certify", str(config), *(["--quick"] if quick else []), "--seed", "1", "--json", str(out)],
                    env=child_env(cache))
    limit = QUICK_LIMIT if quick else FULL_LIMIT
    row.update(config=name, mode="quick" if quick else "full", limit_seconds=limit,
               within_target_wall=row["wall_seconds"] <= limit, within_target_cpu=row["cpu_seconds"] <= limit)
    if out.exists():
        body = json.loads(out.read_text())["body"]
        row["verdict"] = body["verdict"]
        row["stages"] = body["provenance"].get("timings_seconds")
        row["claims"] = {c["id"]: c["status"] for c in body["claims"]}
    return row


def tune_one(name: str, T: int, question: tuple, work: Path) -> dict:
    out = work / f"tune-{name}.toml"
    with tempfile.TemporaryDirectory() as cache:
        row = timed(["tune", *TUNE_BASE, "--horizon", str(T), *question, "--out", str(out)], env=child_env(cache))
    row.update(question=name, limit_seconds=TUNE_LIMIT, within_target_wall=row["wall_seconds"] <= TUNE_LIMIT,
               within_target_cpu=row["cpu_seconds"] <= TUNE_LIMIT, config_written=out.exists())
    return row


def _print(row: dict) -> None:
    what = row.get("config") or f"tune {row['question']}"
    print(f"{what:<34} {row.get('mode', ''):<6} exit {row['exit_code']} {row.get('verdict', ''):<10} "
          f"wall {row['wall_seconds']:7.1f} s  cpu {row['cpu_seconds']:7.1f} s  wait {row['wait_seconds']:6.1f} s  "
          f"load {row['loadavg_before']} -> {row['loadavg_after']}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--examples", default=None, help="comma-separated names under examples/ (default: all)")
    ap.add_argument("--no-tune", action="store_true", help="skip the gtm tune questions")
    ap.add_argument("--no-certify", action="store_true", help="skip the bundled examples (tune questions only)")
    ap.add_argument("--certify-tuned", action="store_true", help="also certify --quick each tuned design")
    ap.add_argument("--capped", default="", help="comma-separated example names also certified with "
                    "evaluation_budget = \"refuse\" (e.g. default: its (eps, delta) witnesses)")
    ap.add_argument("--full", action="store_true",
                    help="also time the full certificate (up to 15 min each; with --certify-tuned also of each "
                         "tuned design)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "certify_examples.json"))
    args = ap.parse_args(argv)
    names = bundled_examples() if args.examples is None else [n.strip() for n in args.examples.split(",")]
    names = [] if args.no_certify else names
    result = {"benchmark": "certify_examples", "machine_start": machine_info(), "targets_seconds":
              {"quick": QUICK_LIMIT, "full": FULL_LIMIT, "tune": TUNE_LIMIT}, "certify": [], "tune": [],
              "certify_tuned": []}

    def save():
        result["machine_end"] = machine_info()
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in names:
            for quick in ([True, False] if args.full else [True]):
                row = certify_one(ROOT / "examples" / f"{name}.toml", name, quick, work)
                result["certify"].append(row)
                _print(row)
                save()
        for name in [n.strip() for n in args.capped.split(",") if n.strip()]:
            cfg = work / f"{name}-refuse.toml"
            cfg.write_text(capped_variant(ROOT / "examples" / f"{name}.toml"))
            row = certify_one(cfg, f"{name}+refuse", True, work)
            result["certify"].append(row)
            _print(row)
            save()
        if not args.no_tune:
            for qname, T, question in TUNE_QUESTIONS:
                row = tune_one(qname, T, question, work)
                result["tune"].append(row)
                _print(row)
                save()
                cfg = work / f"tune-{qname}.toml"
                for quick in ([True, False] if args.full else [True]):
                    if args.certify_tuned and cfg.exists():
                        crow = certify_one(cfg, f"tuned/{qname}", quick, work)
                        result["certify_tuned"].append(crow)
                        _print(crow)
                        save()
    save()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
