"""Run every speed benchmark and write benchmarks/results/summary.md.

    python -m benchmarks.run_all [--seconds 10] [--only simulator,peers,exact,prove,audit,bench]

* simulator - benchmarks/bench_simulator.py (GTM simulator steps/s)          -> results/simulator.json
* peers     - benchmarks/bench_peers.py (peer simulators, quadrature laws)   -> results/peers.json
* exact     - benchmarks/bench_exact.py (exact engine, T = 10, 100), if it exists
* prove     - wall time of `gtm prove`, if the verb exists                   -> results/cli_prove.json
* audit     - wall time of `gtm audit` on benchmarks/targets/gtm_target.py, if the verb exists
* bench     - wall time of `gtm bench --quick`                                -> results/cli_bench.json
* soak      - benchmarks/bench_soak.py (persisted deployment overhead), if it exists

A component whose script or verb is not present is recorded as "not available" (the hook stays).
Every result carries machine information (benchmarks/machine.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import machine_info

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
COMPONENTS = ["simulator", "peers", "exact", "prove", "audit", "bench", "soak"]


def _run(name: str, argv: list[str], timeout: float) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    print(f"[run_all] {name}: {' '.join(argv)}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, exc.stdout or "", f"timeout after {timeout} s"
        out = out.decode() if isinstance(out, bytes) else out
    wall = time.perf_counter() - t0
    rec = {"component": name, "argv": argv, "exit_code": rc, "wall_seconds": wall,
           "stdout_tail": out.splitlines()[-15:], "stderr_tail": (err or "").splitlines()[-5:],
           "machine": machine_info()}
    print(f"[run_all] {name}: exit {rc} in {wall:.1f} s", file=sys.stderr, flush=True)
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0, help="time budget handed to each benchmark")
    ap.add_argument("--only", default=",".join(COMPONENTS))
    ap.add_argument("--timeout", type=float, default=1800.0)
    args = ap.parse_args(argv)
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    bad = [c for c in only if c not in COMPONENTS]
    if bad:
        ap.error(f"--only: unknown component {bad[0]!r} (choose from {', '.join(COMPONENTS)})")
    RESULTS.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    records = []
    for comp in only:
        if comp == "simulator":
            rec = _run(comp, [py, "-m", "benchmarks.bench_simulator", "--seconds", str(args.seconds)], args.timeout)
        elif comp == "peers":
            rec = _run(comp, [py, "-m", "benchmarks.bench_peers", "--seconds", str(args.seconds)], args.timeout)
        elif comp == "exact":
            if not (ROOT / "benchmarks" / "bench_exact.py").exists():
                rec = {"component": comp, "available": False,
                       "note": "benchmarks/bench_exact.py not present (exact engine not merged yet)"}
            else:
                rec = _run(comp, [py, "-m", "benchmarks.bench_exact"], args.timeout)
        elif comp == "prove":
            rec = _run(comp, [py, "-m", "audits.cli", "prove", "--json", str(RESULTS / "prove_run.json")],
                       args.timeout)
        elif comp == "audit":
            target = f"{py} -m benchmarks.targets.gtm_target examples/default.toml"
            rec = _run(comp, [py, "-m", "audits.cli", "audit", "--target", target, "--epsilon", "1",
                              "--eps-t", "0.1", "--seconds", str(max(args.seconds, 5)), "--seed", "1",
                              "--json", str(RESULTS / "audit_run.json")], args.timeout)
        elif comp == "soak":
            if not (ROOT / "benchmarks" / "bench_soak.py").exists():
                rec = {"component": comp, "available": False, "note": "benchmarks/bench_soak.py not present"}
            else:
                rec = _run(comp, [py, "-m", "benchmarks.bench_soak", "--seconds", str(args.seconds * 3)], args.timeout)
        else:  # bench
            rec = _run(comp, [py, "-m", "audits.cli", "bench", "--quick", "--out", str(RESULTS / "bench-quick"),
                              "--json", str(RESULTS / "bench_quick.json")], args.timeout)
        rec.setdefault("available", True)
        if comp in ("prove", "audit", "bench", "exact", "soak"):
            (RESULTS / f"cli_{comp}.json").write_text(json.dumps(rec, indent=2) + "\n")
        records.append(rec)
    write_summary(records)


def _load(name):
    p = RESULTS / name
    return json.loads(p.read_text()) if p.exists() else None


def write_summary(records):
    m = machine_info()
    lines = ["# Speed benchmarks", "",
             f"Machine: {m['processor']}, {m['cpu_count']} cores, {m['platform']}, Python {m['python']}, "
             f"numpy {m.get('numpy')}, load average {' '.join(m.get('loadavg', []))}; {m['utc']}.", "",
             "Re-run: `python -m benchmarks.run_all` (each component also runs alone, see the module docstring).", "",
             "| component | status | wall time (s) | headline |", "|---|---|---|---|"]
    for rec in records:
        comp = rec["component"]
        if not rec.get("available", True):
            lines.append(f"| {comp} | not available | - | {rec['note']} |")
            continue
        status = "ok" if rec.get("exit_code") == 0 else f"exit {rec.get('exit_code')}"
        lines.append(f"| {comp} | {status} | {rec['wall_seconds']:.1f} | {_headline(comp, rec)} |")
    sim = _load("simulator.json")
    if sim and any(r["component"] == "simulator" for r in records):
        lines += ["", "## Simulator (GTM steps per second, one core)", "", "| n | T | evaluations | M steps/s |",
                  "|---|---|---|---|"]
        for r in sim["rows"]:
            lines.append(f"| {r['n']} | {r['T']} | {r['evaluations']} | {r['steps_per_second'] / 1e6:.2f} |")
        lines.append(f"\nReference GTM: {sim['reference_steps_per_second']:,.0f} steps/s.")
    peers = _load("peers.json")
    if peers and any(r["component"] == "peers" for r in records):
        lines += ["", "## Peer simulators (null stream, T = 100, n = 20 000)", "",
                  "| peer | M steps/s | false_halt_probability (ms) |", "|---|---|---|"]
        for r in peers["rows"]:
            lines.append(f"| {r['peer']} | {r['steps_per_second'] / 1e6:.2f} | {r['quadrature_seconds'] * 1e3:.2f} |")
    (RESULTS / "summary.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'summary.md'}", file=sys.stderr)


def _headline(comp, rec):
    tail = [ln for ln in rec.get("stdout_tail", []) if ln.strip()]
    if comp == "bench" and tail:
        return tail[-1]
    if comp in ("prove", "audit", "exact", "soak") and tail:
        return tail[-1][:160]
    return "see below"


if __name__ == "__main__":
    main()
