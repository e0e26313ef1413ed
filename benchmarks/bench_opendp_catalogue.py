"""The OpenDP catalogue run: common OpenDP constructions audited against their own privacy maps.

    python -m benchmarks.bench_opendp_catalogue [--seconds 60] [--seed 1] [--calibration-runs 100]
        [--calibration-seconds 2] [--calibration-first-seed 0] [--only NAME ...] [--tight-seeds 1 2 3 4 5]
        [--out benchmarks/results/opendp_catalogue.json]
    python -m benchmarks.bench_opendp_catalogue --rewrite benchmarks/results/opendp_catalogue.json

Three parts (docs/opendp.md, "The catalogue run"):

1. **Catalogue** (:data:`audits.integrations.opendp_catalogue.CATALOGUE`): each construction audited
   for ``--seconds`` (alpha = 0.05, seed ``--seed``) - claim, lower bound, verdict, samples, wall time.
   For the constructions whose loss attains the claim (``tight``) the bound / claim ratio is reported
   against the target 0.9; ``--tight-seeds 1 2 3 4 5`` audits them with each seed too (the target is met
   when it holds on every seed: the rule is fixed before the run). Every audit's wall time is checked
   against its budget's bound (seconds x 1.02 + 1, :func:`audits.integrations.opendp_budget.wall_bound`).
2. **Power companions** (``POWER_COMPANIONS``): user measurements whose declared map is smaller than
   their true loss; each must be flagged.
3. **Calibration**: ``--calibration-runs`` audits of randomized response (eps = ln 3, attained exactly)
   with seeds 0, 1, ..., each ``--calibration-seconds`` long (short audits: 100 x 60 s is more than
   this shared 2-core machine affords; the test's validity does not depend on the budget), alpha =
   0.05: the false-alarm count with its two-sided 95% Clopper-Pearson interval; calibration holds when the
   rate (point estimate) is <= alpha (the rule of benchmarks/results/opendp_calibration_preregistration.md;
   runs written before it recorded the older rule "the interval does not lie above alpha"). Each audit's
   exact false-alarm probability (:func:`exact_false_alarm`: randomized response's law, the audit's witness
   and pooled Poisson mean) is recorded, and their sum - the count expected of an exact level-alpha test,
   slightly below alpha by the discreteness of Clopper-Pearson. Plus the *exact* false-alarm probability of the
   conditional test on randomized response when the Poisson run counts are fixed by the seed (the
   defect the engine seed's OS entropy removes, :func:`audits.integrations.opendp_audit.engine_seed`).

Writes the JSON (with machine information and load average before and after) and a markdown
table next to it (same stem, ``.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from audits.integrations.opendp_audit import audit_measurement  # noqa: E402
from audits.integrations.opendp_budget import wall_bound  # noqa: E402
from audits.integrations.opendp_catalogue import CATALOGUE, FEATURES, POWER_COMPANIONS  # noqa: E402
from audits.statistics import conditional_loss_lower_bound, cp_interval  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402

RESULTS = Path(__file__).parent / "results"
ALPHA = 0.05
TIGHT_TARGET = 0.9
UNDER_REPORTED = ("count_by_laplace_threshold", "count_by_noise_threshold")
# OpenDP 0.16's thresholded releases whose map under-reports delta (exact law and fresh samples:
# benchmarks/results/opendp_threshold_delta_reproducer.py) at the points the audit tests: it is expected to flag
# them. make_gaussian_threshold under-reports too, but only where the implied curve's delta_rho(eps) is below
# about 0.035 (eps > 2.3 at rho = 1/2); the audit tests the points where it is 0.2, 0.1, 0.05
# (opendp_claims.CURVE_DELTAS), so no violation is expected there (the reproducer shows it)


def audit_row(entry, *, seconds: float, seed: int) -> dict:
    """One audit of a catalogue entry: its claim, bound, verdict, samples and wall time (of the audit: the
    measurement is built before the clock starts), and whether the wall time kept to the budget's bound
    (:func:`audits.integrations.opendp_budget.wall_bound`: seconds * 1.02 + 1)."""
    measurement = entry.build()
    seconds = entry.budget(seconds)  # a slow measurement's own budget (CatalogueEntry.seconds)
    t0 = time.monotonic()
    result = audit_measurement(measurement, seconds=seconds, seed=seed, confidence=1 - ALPHA,
                               **entry.audit_kwargs())
    wall = time.monotonic() - t0
    d = result.to_dict()
    row = {"name": entry.name, "family": entry.family, "construction": entry.note, "measure": d["claim"]["measure"],
           "claim_kind": d["claim"]["kind"], "claim_points": d["claim"]["points"], "rho": d["claim"]["rho"],
           "verdict": result.verdict, "samples": d["samples"], "wall_seconds": wall, "budget_seconds": seconds,
           "wall_bound": wall_bound(seconds), "within_budget": wall <= wall_bound(seconds), "seed": seed,
           "poisson_entropy": d["poisson_entropy"],
           "pairs_searched": d["pairs_searched"], "witness": _short(d.get("witness"))}
    if result.pure is not None:
        claim = d["epsilon_claimed"]
        row.update(epsilon_claimed=claim, epsilon_lower_bound=d["epsilon_lower_bound"],
                   bound_over_claim=(d["epsilon_lower_bound"] / claim) if claim > 0 else None)
    else:
        row.update(epsilon_claimed=d["epsilon_claimed"], delta_claimed=d["delta_claimed"],
                   delta_lower_bound=d["delta_lower_bound"],
                   points=[{"epsilon": p["epsilon"], "delta_claimed": p["delta_claimed"],
                            "delta_lower_bound": p["delta_lower_bound"], "verdict": p["verdict"]}
                           for p in d["points"]])
    row.update(expectation(entry.name, entry.flagged, result.verdict))
    if entry.tight and row.get("bound_over_claim") is not None:
        row["tight_target"] = TIGHT_TARGET
        row["tight_target_met"] = row["bound_over_claim"] >= TIGHT_TARGET
    return row


def expectation(name: str, flagged: bool, verdict: str) -> dict:
    """The verdict expected of an entry (violation for the power companions and :data:`UNDER_REPORTED`)."""
    expected = "violation" if flagged or name in UNDER_REPORTED else "no-violation-found"
    return {"expected": expected, "as_expected": verdict == expected}


def summary(out: dict) -> dict:
    cat, comp, cal = out["catalogue"], out["power_companions"], out["calibration"]
    return {"entries": len(cat), "all_within_budget": all(within(r) for r in cat + comp),
            "over_budget": [r["name"] for r in cat + comp if not within(r)],
            "companions_flagged": all(r["verdict"] == "violation" for r in comp),
            "tight_targets": {r["name"]: r.get("bound_over_claim") for r in cat if "tight_target" in r},
            "unexpected": [r["name"] for r in cat + comp if not r["as_expected"]],
            "calibration_holds": None if cal is None else cal["holds"],
            "tight_seeds": None if not out.get("tight_seeds") else {
                name: {"min": t["bound_over_claim_min"], "median": t["bound_over_claim_median"], "met": t["met"]}
                for name, t in out["tight_seeds"].items()}}


def within(row: dict) -> bool:
    """The row's wall time kept to its budget's bound (rows of older runs: within_60s)."""
    return row["within_budget"] if "within_budget" in row else row["within_60s"]


def tight_seeds(cat: list, seeds: list, seconds: float) -> dict:
    """The tight entries (their loss attains the claim) audited with each of ``seeds`` (the rule, fixed before
    the run: the target bound >= TIGHT_TARGET x claim is met when it holds on every seed; median and min
    reported); a catalogue row with the same seed is reused."""
    out = {}
    for e in (e for e in CATALOGUE if e.tight):
        rows = {r["seed"]: r for r in cat if r["name"] == e.name}
        ratios = []
        for seed in seeds:
            row = rows.get(seed) or audit_row(e, seconds=seconds, seed=seed)
            ratios.append({"seed": seed, "bound_over_claim": row["bound_over_claim"], "samples": row["samples"],
                           "wall_seconds": row["wall_seconds"], "within_budget": row["within_budget"]})
            print(f"  tight {e.name:34s} seed {seed}: {row['bound_over_claim']:.3f} ({row['wall_seconds']:.1f} s)",
                  flush=True)
        values = [r["bound_over_claim"] for r in ratios]
        out[e.name] = {"seeds": seeds, "runs": ratios, "bound_over_claim_median": float(np.median(values)),
                       "bound_over_claim_min": float(min(values)), "target": TIGHT_TARGET,
                       "met": min(values) >= TIGHT_TARGET,
                       "rule": f"met when bound / claim >= {TIGHT_TARGET} on every seed of {seeds} (fixed before the run)"}
    return out


def rewrite(path: Path) -> None:
    """Recompute the expected verdicts, the summary and the table of a saved run (no audit is rerun)."""
    out = json.loads(path.read_text())
    flagged = {e.name for e in POWER_COMPANIONS}
    for r in out["catalogue"] + out["power_companions"]:
        r.update(expectation(r["name"], r["name"] in flagged, r["verdict"]))
    out["summary"] = summary(out)
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(markdown(out))


def _short(witness):
    if not isinstance(witness, dict):
        return None
    keep = ("input", "input_prime", "event", "event_outputs", "count_a", "count_b", "count", "count_prime", "n",
            "label")
    out = {k: witness[k] for k in keep if k in witness}
    for k in ("input", "input_prime", "event_outputs"):
        if k in out:
            out[k] = str(out[k])[:120]
    return out


RR_PROB = 0.75  # randomized_response_bool(): the true answer with probability 3/4


def rr_event_probability(value, outputs) -> float:
    """Exact probability that randomized response 3/4 on ``value`` lands in the event ``outputs`` (codes)."""
    return sum(RR_PROB if str(o) == str(value) else (1 - RR_PROB) for o in outputs if str(o) in ("True", "False"))


def exact_false_alarm(witness: dict, runs_mean: int, epsilon: float, alpha: float = ALPHA) -> float:
    """Exact probability, under randomized response's law, that the audit's pooled conditional test on
    ``witness`` (its pair and event, fixed before the tested samples) with Poisson mean ``runs_mean`` per
    input rejects ``epsilon``: hits K_A ~ Po(M p_A), K_B ~ Po(M p_B), independent; summed over +- 9 sd."""
    p_a = rr_event_probability(witness.get("input"), witness.get("event_outputs") or [])
    p_b = rr_event_probability(witness.get("input_prime"), witness.get("event_outputs") or [])
    if p_a <= 0 or runs_mean <= 0:
        return 0.0
    la, lb = runs_mean * p_a, runs_mean * p_b
    ka = np.arange(max(0, int(la - 9 * math.sqrt(la) - 1)), int(la + 9 * math.sqrt(la)) + 2)
    kb = np.arange(max(0, int(lb - 9 * math.sqrt(lb) - 1)), int(lb + 9 * math.sqrt(lb)) + 2) if lb > 0 else np.zeros(1)
    wa = stats.poisson.pmf(ka, la)
    wb = stats.poisson.pmf(kb, lb) if lb > 0 else np.ones(1)
    reject = conditional_loss_lower_bound(ka[:, None], kb[None, :], alpha) > epsilon
    return float((wa[:, None] * wb[None, :] * reject).sum())


CALIBRATION_RULE = ("calibration holds when the false-alarm rate (point estimate) is <= alpha; the two-sided 95% "
                    "Clopper-Pearson interval is reported beside it")


def calibration(runs: int, seconds: float, first_seed: int = 0) -> dict:
    """``runs`` audits of randomized response (attains eps = ln 3) with seeds first_seed, ..., at alpha. Per
    audit: the verdict, bound, witness, pooled Poisson mean and the exact probability that the test on that
    witness and mean rejects (:func:`exact_false_alarm`): their sum is the false-alarm count expected if the
    audit's test is exactly what it claims to be."""
    from audits.integrations.opendp_catalogue import randomized_response_bool

    rr = randomized_response_bool()
    epsilon = float(rr.map(1))
    bounds, alarms, walls, audits = [], 0, [], []
    for seed in range(first_seed, first_seed + runs):
        t0 = time.monotonic()
        r = audit_measurement(rr, seconds=seconds, seed=seed, confidence=1 - ALPHA)
        walls.append(time.monotonic() - t0)
        bounds.append(r.epsilon_lower_bound)
        alarms += r.violation
        w = r.to_dict().get("witness") or {}
        mean = int(w.get("runs_mean") or 0)
        audits.append({"seed": seed, "verdict": r.verdict, "bound": r.epsilon_lower_bound,
                       "input": w.get("input"), "input_prime": w.get("input_prime"),
                       "event_outputs": w.get("event_outputs"), "runs_mean": mean,
                       "exact_false_alarm": exact_false_alarm(w, mean, epsilon), "wall_seconds": walls[-1]})
    lo, hi = (float(x) for x in cp_interval(alarms, runs, 0.05))
    expected = float(sum(a["exact_false_alarm"] for a in audits))
    return {"mechanism": "make_randomized_response_bool(0.75), eps = ln 3 attained", "runs": runs,
            "seconds_per_audit": seconds, "alpha": ALPHA, "seeds": f"{first_seed}..{first_seed + runs - 1}",
            "wall_seconds_max": None if not walls else float(max(walls)), "wall_bound": wall_bound(seconds),
            "false_alarms": alarms,
            "rate": alarms / runs, "clopper_pearson_95": [lo, hi], "rule": CALIBRATION_RULE,
            "holds": alarms / runs <= ALPHA, "interval_above_alpha": lo > ALPHA,
            "expected_false_alarms_exact": expected, "expected_rate_exact": expected / runs if runs else None,
            "bound_median": float(np.median(bounds)), "bound_min": float(np.min(bounds)),
            "bound_max": float(np.max(bounds)), "wall_seconds_median": float(np.median(walls)), "audits": audits,
            "note": ("short audits: 100 x 60 s exceeds this shared machine's budget; the conditional test is exact "
                     "at any budget, so calibration does not depend on it")}


def seed_conditional_false_alarm(n_a: int, n_b: int, *, p_a=0.75, p_b=0.25, alpha=ALPHA) -> float:
    """Exact false-alarm probability of the conditional test (``conditional_loss_lower_bound`` > ln 3) on
    randomized response's witness event when the run counts n_a, n_b are fixed (hits binomial), summed
    over +- 9 standard deviations of each count."""
    eps = math.log(p_a / p_b)
    ka = np.arange(max(0, int(n_a * p_a - 9 * math.sqrt(n_a))), min(n_a, int(n_a * p_a + 9 * math.sqrt(n_a))) + 1)
    kb = np.arange(max(0, int(n_b * p_b - 9 * math.sqrt(n_b))), min(n_b, int(n_b * p_b + 9 * math.sqrt(n_b))) + 1)
    wa, wb = stats.binom.pmf(ka, n_a, p_a), stats.binom.pmf(kb, n_b, p_b)
    reject = conditional_loss_lower_bound(ka[:, None], kb[None, :], alpha) > eps
    return float((wa[:, None] * wb[None, :] * reject).sum())


def poisson_false_alarm(m: int, *, p_a=0.75, p_b=0.25, alpha=ALPHA) -> float:
    """The same with the run counts Poisson(m) and independent of everything (hits Poisson(m p))."""
    eps = math.log(p_a / p_b)
    ka = np.arange(max(0, int(m * p_a - 9 * math.sqrt(m))), int(m * p_a + 9 * math.sqrt(m)) + 1)
    kb = np.arange(max(0, int(m * p_b - 9 * math.sqrt(m))), int(m * p_b + 9 * math.sqrt(m)) + 1)
    wa, wb = stats.poisson.pmf(ka, m * p_a), stats.poisson.pmf(kb, m * p_b)
    reject = conditional_loss_lower_bound(ka[:, None], kb[None, :], alpha) > eps
    return float((wa[:, None] * wb[None, :] * reject).sum())


def exact_seed_conditional(m: int = 4000) -> dict:
    rows = [{"n_a_minus_m_in_sd": z, "n_a": int(round(m + z * math.sqrt(m))), "n_b": m,
             "false_alarm": seed_conditional_false_alarm(int(round(m + z * math.sqrt(m))), m)}
            for z in (-2.3, -1.0, 0.0, 1.0, 2.3)]
    return {"mechanism": "randomized response 3/4 (eps = ln 3), witness event out=True, alpha = 0.05", "M": m,
            "fixed_counts": rows, "poisson_counts": poisson_false_alarm(m),
            "note": ("the engine's conditional test is exact when each input's run count is Poisson(M) and random; "
                     "a seed that fixes the counts while the noise stays random (OpenDP cannot be seeded) makes the "
                     "false-alarm rate depend on the seed's draw")}


def markdown(out: dict) -> str:
    m = out["machine"]
    lines = ["# OpenDP catalogue: each construction audited against its own privacy map", "",
             f"Command: `{out['command']}`", "",
             f"Machine: {m.get('platform')}, {m.get('cpu_count')} cores, Python {m.get('python')}, OpenDP "
             f"{out['opendp']}; load average {' '.join(out['loadavg_before'])} before, "
             f"{' '.join(out['loadavg_after'])} after; {m.get('utc')}.", "",
             f"alpha = {ALPHA} (confidence {1 - ALPHA}), seed {out['seed']}, {out['seconds']:g} s per audit"
             + "".join(f"; {r['name']}: {r['budget_seconds']:g} s (its own budget)"
                       for r in out["catalogue"] + out["power_companions"]
                       if r.get("budget_seconds") not in (None, out["seconds"])) + ". "
             "Pure claims: the lower bound on eps; approximate / zCDP claims: the worst tested point (largest "
             "delta lower bound minus claimed delta).", "",
             "| entry | construction | measure | claim | lower bound | bound/claim | verdict | expected | samples | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["catalogue"] + out["power_companions"]:
        if "epsilon_lower_bound" in r:
            claim, bound = f"eps = {r['epsilon_claimed']:.4g}", f"{r['epsilon_lower_bound']:.4g}"
            ratio = f"{r['bound_over_claim']:.3f}" if r.get("bound_over_claim") is not None else "-"
        else:
            claim = f"delta({r['epsilon_claimed']:.4g}) = {r['delta_claimed']:.4g}"
            bound = f"{r['delta_lower_bound']:.4g}"
            ratio = "-"
        mark = "" if r["as_expected"] else " (!)"
        lines.append(f"| {r['name']} | {r['construction']} | {r['measure']} | {claim} | {bound} | {ratio} | "
                     f"{r['verdict']}{mark} | {r['expected']} | {r['samples']} | {r['wall_seconds']:.1f} |")
    over = [r["name"] for r in out["catalogue"] + out["power_companions"] if not within(r)]
    lines += ["", f"Wall time over the budget's bound (seconds x 1.02 + 1, docs/opendp.md \"Budget\"): "
              f"{', '.join(over) if over else 'none'}. {out.get('wall_note', '')}".rstrip()]
    t = out.get("tight_seeds")
    if t:
        lines += ["", "## Mechanisms that attain their claim, over seeds", "",
                  f"Rule (fixed before the run): {next(iter(t.values()))['rule']}.", "",
                  "| entry | seeds | bound/claim per seed | median | min | met |", "|---|---|---|---|---|---|"]
        for name, v in t.items():
            per = ", ".join(f"{r['bound_over_claim']:.3f}" + (" (false alarm)" if r["bound_over_claim"] > 1 else "")
                            for r in v["runs"])
            lines.append(f"| {name} | {v['seeds'][0]}..{v['seeds'][-1]} | {per} | {v['bound_over_claim_median']:.3f} | "
                         f"{v['bound_over_claim_min']:.3f} | {'yes' if v['met'] else 'NO'} |")
        lines += ["", "A bound above the claim (bound/claim > 1) is a violation verdict on a mechanism that attains its "
                  "claim: a false alarm, of probability at most alpha = 0.05 per audit (the conditional test is exact; "
                  "the calibration counts them)."]
    c = out.get("calibration")
    if c:
        if "rule" in c:
            verdict = (f"calibration {'holds' if c['holds'] else 'FAILS'} by the pre-registered rule ({c['rule']}); "
                       f"the interval {'lies above' if c['interval_above_alpha'] else 'does not lie above'} alpha. "
                       f"Expected false alarms under the exact law of each audit's test (its witness and pooled "
                       f"Poisson mean): {c['expected_false_alarms_exact']:.2f} (rate {c['expected_rate_exact']:.4f})")
        else:
            verdict = f"calibration {'holds' if c['holds'] else 'FAILS'} (interval not above alpha)"
        lines += ["", "## Calibration", "",
                  f"{c['runs']} audits of {c['mechanism']} (seeds {c['seeds']}, {c['seconds_per_audit']:g} s each, "
                  f"alpha = {c['alpha']}): **{c['false_alarms']} false alarms** (rate {c['rate']:.3f}, 95% "
                  f"Clopper-Pearson [{c['clopper_pearson_95'][0]:.3f}, {c['clopper_pearson_95'][1]:.3f}]); "
                  f"{verdict}. Lower bounds: "
                  f"median {c['bound_median']:.3f}, range [{c['bound_min']:.3f}, {c['bound_max']:.3f}] "
                  f"(claim ln 3 = {math.log(3):.3f}). {c['note']}."]
    e = out["exact_seed_conditional"]
    lines += ["", "## Why the engine seed takes fresh entropy (exact law)", "", e["note"] + ".", "",
              f"{e['mechanism']}, M = {e['M']} runs per input:", "",
              "| run counts | n_A | n_B | false-alarm probability |", "|---|---|---|---|"]
    for r in e["fixed_counts"]:
        lines.append(f"| fixed, n_A = M {r['n_a_minus_m_in_sd']:+g} sd | {r['n_a']} | {r['n_b']} | {r['false_alarm']:.4f} |")
    lines.append(f"| Poisson(M), random | - | - | {e['poisson_counts']:.4f} |")
    lines += ["", "## OpenDP discrepancy", "",
              "OpenDP 0.16's `make_laplace_threshold` (and `make_noise_threshold`, whose map is the same) reports "
              "delta = Pr[Z >= threshold] for a key absent from the neighbour, while a key of count 1 is released "
              "with probability Pr[1 + Z >= threshold] = Pr[Z >= threshold - 1] (one atom more: a factor e^(1/scale)); "
              "`make_gaussian_threshold` reports the continuous normal tail for its discrete Gaussian noise. "
              "Standalone reproducer (exact law and fresh samples at 99.9%): "
              "`python benchmarks/results/opendp_threshold_delta_reproducer.py` (output: "
              "`opendp_threshold_delta_reproducer.txt`)."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calibration-runs", type=int, default=100)
    ap.add_argument("--calibration-seconds", type=float, default=2.0)
    ap.add_argument("--calibration-first-seed", type=int, default=0, help="the calibration's seeds start here")
    ap.add_argument("--only", nargs="*", default=None, help="catalogue / companion names to run (default: all)")
    ap.add_argument("--tight-seeds", type=int, nargs="*", default=[],
                    help="also audit the entries that attain their claim with each of these seeds")
    ap.add_argument("--out", default=str(RESULTS / "opendp_catalogue.json"))
    ap.add_argument("--rewrite", default=None, metavar="JSON",
                    help="only recompute the expected verdicts, summary and table of a saved run")
    args = ap.parse_args(argv)
    if args.rewrite:
        rewrite(Path(args.rewrite))
        return
    import opendp.prelude as dp
    from importlib.metadata import version

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    dp.enable_features(*FEATURES)  # the benchmark is the user here: it enables what its measurements need
    before = machine_info().get("loadavg", [])
    selected = lambda es: [e for e in es if not args.only or e.name in args.only]  # noqa: E731
    cat, comp = [], []
    for e in selected(CATALOGUE):
        cat.append(audit_row(e, seconds=args.seconds, seed=args.seed))
        print(f"{e.name:40s} {cat[-1]['verdict']:20s} {cat[-1]['wall_seconds']:.1f} s", flush=True)
    for e in selected(POWER_COMPANIONS):
        comp.append(audit_row(e, seconds=args.seconds, seed=args.seed))
        print(f"{e.name:40s} {comp[-1]['verdict']:20s} {comp[-1]['wall_seconds']:.1f} s", flush=True)
    cal = (calibration(args.calibration_runs, args.calibration_seconds, args.calibration_first_seed)
           if args.calibration_runs > 0 else None)
    if cal:
        print(f"calibration: {cal['false_alarms']}/{cal['runs']} false alarms, CP95 {cal['clopper_pearson_95']}")
    out = {"benchmark": "opendp_catalogue", "opendp": version("opendp"),
           "command": "python -m benchmarks.bench_opendp_catalogue " + " ".join(argv if argv is not None else
                                                                                 __import__("sys").argv[1:]),
           "seconds": args.seconds, "seed": args.seed, "alpha": ALPHA, "machine": machine_info(),
           "loadavg_before": before, "loadavg_after": machine_info().get("loadavg", []),
           "catalogue": cat, "power_companions": comp, "calibration": cal,
           "exact_seed_conditional": exact_seed_conditional()}
    if args.tight_seeds:
        out["tight_seeds"] = tight_seeds(cat, list(args.tight_seeds), args.seconds)
        out["loadavg_after"] = machine_info().get("loadavg", [])
    out["summary"] = summary(out)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    path.with_suffix(".md").write_text(markdown(out))
    print(f"wrote {path} and {path.with_suffix('.md')}")


if __name__ == "__main__":
    main()
