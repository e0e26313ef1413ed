"""Planted-violation suite (tests of the tester): how often does the auditor find a leak
planted in a small random region of the input space?

    python -m benchmarks.bench_planted [--narrow] [--count 50] [--first-seed 0] [--seconds 60 | --max-samples N]
                                       [--calibration 200] [--max-T 10] [--q-min 1e-3] [--no-claimed-plan]
                                       [--early-stop]
                                       [--workers N | --scheduler ADDRESS] [--results-dir DIR]

Seed rule (fixed before looking at any result): planted deployments 0..count-1
(:func:`audits.power.planted.plant`), each audited once with audit seed 1000 + planted seed;
the calibration audits (the correct GTM, same budget) use audit seeds 0..calibration-1. Default
configuration examples/default.toml (claimed eps = 1, eps_t = 0.1), in-process targets
(:class:`audits.targets.CallableTarget` around :class:`audits.power.planted.PlantedDeployment`, the
vectorised simulator plus the leak), ``--max-T`` = the audit's longest stream = the longest planted
region. A planted deployment is *flagged* when the audit's verdict is ``violation``; the witness'
true loss (planted law: the GTM's numerical law plus the leak) is reported for every audit, and
every miss with where it was planted. The fractions carry two-sided 95% Clopper-Pearson intervals.

``--narrow``: the narrow suite (:func:`audits.power.planted.plant_narrow`: bands 0.5-2 moves wide, lengths
1..10 and longer, losses 1.2-4, leak probabilities 1e-4..1e-2, centres uniform or near the plan's decision
levels); its defaults are ``--max-T 20`` and ``--q-min 1e-4``, the file is planted-narrow[-<tag>].json. Every
audit is given the claimed plan (``claimed_plan``, as ``gtm audit --config`` does: it decides where the fine
family is densest) unless ``--no-claimed-plan``. Every row records the load average when it finished.

``--early-stop``: every audit with early verdicts (:mod:`audits.early_stop`, as ``gtm audit`` by default;
off by default here, so the earlier results stay comparable); every row then records its time to verdict
(``time_to_verdict``: seconds and runs when the verdict was reached, the stopping look, whether a flagrant pair
ended the selection), and the summary the median and largest time to verdict of the flagged audits against
the budget. Time-to-verdict benchmark (rule fixed before running): wide suite, planted seeds 0..9,
60 s each, once with ``--early-stop`` and once without (``--tag early-60s-s0-9`` / ``--tag full-60s-s0-9``).

Writes benchmarks/results/planted[-<tag>].json with machine information (``--results-dir``: elsewhere).

``--workers N`` / ``--scheduler ADDRESS`` (:mod:`benchmarks.cluster`, Dask through
:mod:`audits.execution`): every audit is one unit of work on a worker; the seeds above fix each one,
so a ``--max-samples`` run gives the same rows wherever they ran (a ``--seconds`` budget is wall time:
not reproducible anywhere).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

from audits.gtm_audit import audit
from audits.power.distribution import event_loss, halting_distribution
from audits.power.planted import PlantedDeployment, best_grid_candidate, plant, plant_narrow, planted_pair, true_loss
from audits.statistics import cp_interval
from audits.targets import CallableTarget, SimulatorTarget
from benchmarks.cluster import add_execution_arguments, execution_record, executor_from, ordered
from benchmarks.machine import machine_info
from gtm_core.config import GTMConfig
from gtm_core.planners import make_plan

AUDIT_SEED_OFFSET = 1000


def _budget(args) -> dict:
    return dict(seconds=args.seconds if args.max_samples is None else None, max_samples=args.max_samples)


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def planted_row(config: str, seed: int, max_T: int, q_min: float, seconds, max_samples,
                confidence: float = 0.95, narrow: bool = False, claimed_plan: bool = True,
                early_stop: bool = False) -> dict:
    plan = make_plan(GTMConfig.load(config))
    region = (plant_narrow if narrow else plant)(plan, seed, max_T=max_T, q_min=q_min)
    dep = PlantedDeployment(plan, region)
    t0 = time.monotonic()
    r = audit(CallableTarget(dep, name=f"planted-{seed}", max_T=max_T), epsilon=plan.epsilon,
              eps_t=plan.step(1).eps_t, seconds=seconds, max_samples=max_samples, seed=AUDIT_SEED_OFFSET + seed,
              progress=False, max_T=max_T, confidence=confidence, claimed_plan=plan if claimed_plan else None,
              early_stop=early_stop)
    wall = time.monotonic() - t0
    w = r.witness.to_dict()
    loaded, other = planted_pair(region)
    return {"seed": seed, "flagged": r.violation, "lower_bound": r.epsilon_lower_bound, "wall_seconds": wall,
            "samples": r.samples, "witness_true_loss": true_loss(dep, w["p"], w["p_prime"], w["event_codes"]),
            "witness": {"p": w["p"], "p_prime": w["p_prime"], "event": w["event"], "family": w["family"]},
            "planted_pair_loss": true_loss(dep, loaded, other, [region.code]), "region": region.to_dict(),
            "budget_warning": r.search.budget.warning if r.search else None,
            "fine_first_round": r.search.coverage.searched.get("fine_first_round") if r.search else None,
            "time_to_verdict": _time_to_verdict(r, wall), "loadavg": _loadavg()}


def _time_to_verdict(result, wall: float) -> dict:
    """When the verdict was reached: the early verdict's runs and seconds, else the whole audit's."""
    early = result.early_stop
    if early is None:
        return {"seconds": wall, "samples": result.samples, "early": False, "stopped_look": None,
                "selection_ended_early": False}
    return {"seconds": early.seconds, "samples": early.samples, "early": early.stopped_look is not None,
            "stopped_look": early.stopped_look, "selection_ended_early": early.selection_ended_early}


def _verdict_times(rows) -> dict | None:
    """Median and largest time to verdict (seconds, runs) of the flagged rows, and how many stopped early."""
    flagged = [r["time_to_verdict"] for r in rows if r["flagged"]]
    if not flagged:
        return None
    secs, runs = [t["seconds"] for t in flagged], [t["samples"] for t in flagged]
    return {"flagged": len(flagged), "stopped_early": sum(t["early"] for t in flagged),
            "median_seconds": float(np.median(secs)), "max_seconds": max(secs),
            "median_samples": float(np.median(runs)), "max_samples": max(runs)}


def calibration_row(config: str, seed: int, max_T: int, seconds, max_samples, confidence: float = 0.95,
                    claimed_plan: bool = True, early_stop: bool = False) -> dict:
    plan = make_plan(GTMConfig.load(config))
    t0 = time.monotonic()
    r = audit(SimulatorTarget(plan), epsilon=plan.epsilon, eps_t=plan.step(1).eps_t, seconds=seconds,
              max_samples=max_samples, seed=seed, progress=False, max_T=max_T, confidence=confidence,
              claimed_plan=plan if claimed_plan else None, early_stop=early_stop)
    w = r.witness.to_dict()
    # The witness' true loss under the correct GTM's numerical law: how close to the claim the search
    # got (a calibration with weak witnesses would say nothing about false alarms at a tight pair).
    loss = event_loss(halting_distribution(plan, list(w["p"])), halting_distribution(plan, list(w["p_prime"])),
                      w["event_codes"])
    return {"seed": seed, "lower_bound": r.epsilon_lower_bound, "false_alarm": r.violation,
            "wall_seconds": time.monotonic() - t0, "samples": r.samples, "witness_true_loss": loss,
            "witness": {"T": len(w["p"]), "event": w["event"], "family": w["family"]},
            "fine_first_round": r.search.coverage.searched.get("fine_first_round") if r.search else None,
            "time_to_verdict": _time_to_verdict(r, time.monotonic() - t0), "loadavg": _loadavg()}


def annotate(path: Path) -> int:
    """Coverage vs allocation: for every miss of a results file, the strongest coverage-grid pair of the
    planted law (:func:`audits.power.planted.best_grid_candidate`)."""
    doc = json.loads(path.read_text())
    plan = make_plan(GTMConfig.load(doc["config"]))
    for m in doc["summary"]["misses"]:
        region = plant(plan, m["seed"], max_T=doc["max_T"], q_min=doc["q_min"])
        m["best_grid_candidate"] = best_grid_candidate(PlantedDeployment(plan, region))
        print(f"miss {m['seed']}: best grid pair loss {m['best_grid_candidate']['loss']:.3f} at event probability "
              f"{m['best_grid_candidate']['probability']:.2e} ({m['best_grid_candidate']['pattern']})", flush=True)
    doc["summary"]["misses_in_grid"] = sum(m["best_grid_candidate"]["loss"] > doc.get("epsilon", 1.0)
                                           for m in doc["summary"]["misses"])
    path.write_text(json.dumps(doc, indent=2, default=float) + "\n")
    return 0


def _partial(args, rows, cal=()) -> None:
    """The rows finished so far (a run cut short keeps them): results/planted[-tag].partial.json."""
    name = "planted" + ("-narrow" if args.narrow else "") + (f"-{args.tag}" if args.tag else "") + ".partial.json"
    (Path(args.results_dir) / name).write_text(json.dumps(
        {"benchmark": "planted", "partial": True, "finished": len(rows), **_budget(args), "max_T": args.max_T,
         "q_min": args.q_min, "flagged": _fraction(sum(r["flagged"] for r in rows), len(rows)), "rows": rows,
         "calibration": list(cal),
         "false_alarms": _fraction(sum(c["false_alarm"] for c in cal), len(cal)) if cal else None},
        indent=2, default=float) + "\n")


def _calibration_summary(cal, epsilon: float) -> dict | None:
    """Bounds and witness true losses of the calibration audits: a false-alarm count means something
    only if the witnesses sit near the claim (the default configuration attains it)."""
    if not cal:
        return None
    bounds = sorted(c["lower_bound"] for c in cal)
    losses = sorted(c["witness_true_loss"] for c in cal)
    return {"median_bound": float(np.median(bounds)), "max_bound": bounds[-1],
            "median_witness_true_loss": float(np.median(losses)),
            "witnesses_within_1pct_of_claim": sum(x >= 0.99 * epsilon for x in losses),
            "max_witness_true_loss": losses[-1]}


def _fraction(k: int, n: int) -> dict:
    lo, hi = cp_interval(k, n, 0.05)
    return {"count": k, "of": n, "fraction": k / max(n, 1), "ci95": [float(lo), float(hi)]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-samples", type=int, default=None)
    ap.add_argument("--calibration", type=int, default=0, help="audits of the correct deployment (seeds 0..N-1)")
    ap.add_argument("--narrow", action="store_true", help="the narrow planted suite (plant_narrow)")
    ap.add_argument("--no-claimed-plan", dest="claimed_plan", action="store_false",
                    help="audit black-box (no claimed plan for the fine family's density)")
    ap.add_argument("--max-T", type=int, default=None, help="[default: 10, --narrow: 20]")
    ap.add_argument("--q-min", type=float, default=None, help="[default: 1e-3, --narrow: 1e-4]")
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--confidence", type=float, default=0.95,
                    help="confidence of every audit's bound (a false alarm has probability <= 1 - confidence)")
    add_execution_arguments(ap)
    ap.add_argument("--early-stop", action="store_true", help="early verdicts (audits.early_stop) in every audit")
    ap.add_argument("--tag", default="")
    ap.add_argument("--results-dir", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--annotate", default=None, help="add the best grid pair of every miss to this results file")
    args = ap.parse_args(argv)
    if args.max_T is None:
        args.max_T = 20 if args.narrow else 10
    if args.q_min is None:
        args.q_min = 1e-4 if args.narrow else 1e-3
    if args.annotate:
        return annotate(Path(args.annotate))
    budget = _budget(args)
    load_start = _loadavg()
    t0 = time.monotonic()
    seeds = list(range(args.first_seed, args.first_seed + args.count))
    rows, cal = [], []
    with executor_from(args, "bench_planted") as executor:
        execution = execution_record(executor)
        planted = partial(planted_row, args.config, max_T=args.max_T, q_min=args.q_min, seconds=budget["seconds"],
                          max_samples=budget["max_samples"], confidence=args.confidence, narrow=args.narrow,
                          claimed_plan=args.claimed_plan, early_stop=args.early_stop)
        for row in ordered(executor, planted, seeds):
            rows.append(row)
            reg = row["region"]
            print(f"planted {row['seed']:3d}: {'FLAGGED' if row['flagged'] else 'missed '} bound {row['lower_bound']:.3f} "
                  f"(witness true loss {row['witness_true_loss']:.3f}; planted T={reg['T']} p~{reg['centre']:.3g} "
                  f"{reg['pattern']} hw {reg['half_width']:.2f} {reg.get('location', '')} loss {reg['loss']:.2f} "
                  f"q_hi {reg['q_hi']:.1e}) {row['wall_seconds']:.0f} s (verdict at "
                  f"{row['time_to_verdict']['seconds']:.1f} s, {row['time_to_verdict']['samples']:,} runs) "
                  f"load {row['loadavg'][0]}",
                  flush=True)
            _partial(args, rows)
        correct = partial(calibration_row, args.config, max_T=args.max_T, seconds=budget["seconds"],
                          max_samples=budget["max_samples"], confidence=args.confidence,
                          claimed_plan=args.claimed_plan, early_stop=args.early_stop)
        for c in ordered(executor, correct, range(args.calibration)):
            cal.append(c)
            _partial(args, rows, cal)
            print(f"calibration {c['seed']}: bound {c['lower_bound']:.3f} (witness true loss "
                  f"{c['witness_true_loss']:.3f}) {c['wall_seconds']:.0f} s load {c['loadavg'][0]}", flush=True)
            if len(cal) % 20 == 0:
                print(f"calibration {len(cal)}: {sum(c['false_alarm'] for c in cal)} false alarms", flush=True)
    flagged = sum(r["flagged"] for r in rows)
    within_60 = sum(r["flagged"] and r["wall_seconds"] <= 60 for r in rows)
    misses = [{"seed": r["seed"], "region": r["region"], "lower_bound": r["lower_bound"],
               "witness_true_loss": r["witness_true_loss"]} for r in rows if not r["flagged"]]
    summary = {"flagged": _fraction(flagged, len(rows)), "flagged_within_60s_wall": _fraction(within_60, len(rows)),
               "false_alarms": _fraction(sum(c["false_alarm"] for c in cal), len(cal)) if cal else None,
               "calibration_witnesses": _calibration_summary(cal, make_plan(GTMConfig.load(args.config)).epsilon),
               "time_to_verdict": _verdict_times(rows), "misses": misses}
    print(json.dumps({k: v for k, v in summary.items() if k != "misses"}))
    for m in misses:
        reg = m["region"]
        print(f"  missed seed {m['seed']}: T={reg['T']} centre p={reg['centre']:.3g} pattern={reg['pattern']} "
              f"code={reg['code']} loss={reg['loss']:.2f} q_hi={reg['q_hi']:.1e}; bound {m['lower_bound']:.3f}")
    name = "planted" + ("-narrow" if args.narrow else "") + (f"-{args.tag}" if args.tag else "") + ".json"
    payload = {"benchmark": "planted", "suite": "narrow" if args.narrow else "wide", "config": args.config,
               "seeds": seeds, "claimed_plan": args.claimed_plan, "loadavg_start": load_start,
               "loadavg_end": _loadavg(),
               "epsilon": make_plan(GTMConfig.load(args.config)).epsilon,
               "audit_seed_rule": f"audit seed = {AUDIT_SEED_OFFSET} + planted seed; calibration seeds 0..N-1",
               **budget, "early_stop": args.early_stop, "confidence": args.confidence, "max_T": args.max_T,
               "q_min": args.q_min, "workers": execution["workers"],
               "execution": execution,
               "summary": summary, "rows": rows, "calibration": cal, "seconds_total": time.monotonic() - t0,
               "machine": machine_info()}
    path = Path(args.results_dir) / name
    path.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    (Path(args.results_dir) / name.replace(".json", ".partial.json")).unlink(missing_ok=True)  # superseded
    ok = flagged >= 0.9 * len(rows) and not any(c["false_alarm"] for c in cal)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
