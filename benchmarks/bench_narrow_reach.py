"""How far is the narrow planted target from this machine? A budget account, computed, not searched.

    python -m benchmarks.bench_narrow_reach [--seeds 50] [--repeats 7]

The narrow suite's target is >= 90% flagged within 60 s. A pair-based first round can only rank a band one
neighbour move wide if it samples an input inside it: at half-move spacing (``pair_search.FINE_SPACING``) every
planted band of half width >= 0.5 moves holds a level of every length and pattern it is sampled at, and at
``audit_scoring.fine_runs_needed()`` runs per input (10 500 at claim 1) the stated (2e-3, loss 2) event is kept
with probability 0.9. This module prices that, on this machine:

1. **Cost per request** of the planted target the suite audits (``CallableTarget`` around
   ``PlantedDeployment``, as ``bench_planted``): wall time of ``sample(p, n)`` at n = 1 000 and n = 10 500 on
   constant streams of each length 1..20 at p = 0.01 (median of ``--repeats`` timings), fitted as a + b n.
   The audit adds its own bookkeeping per request, so the costs below are lower bounds on an audit's.
2. **Inputs** a family needs at half-move spacing over the whole range [P_MIN, P_MAX]: per level 1 input at
   length 1, 2 at length 2, T + 1 at length T >= 3 (the constant stream, its T - 1 one-splits and the
   alternating move; the constant up move and the reversed patterns reuse inputs). The count is checked
   against the fine family itself (``pair_search.fine_candidates``: all levels on lengths 1-3, the plan's
   region on 4-10; it has up to EDGE_INPUTS more per length: near P_MAX a constant up move is clipped and
   becomes an input of its own) - the run fails if they differ by more.
3. **Seconds** to give every input of (a) today's fine family, (b) every length 1..10 everywhere (the issue's
   item 2 asks for lengths <= 10), (c) every length 1..20 (the narrow suite's lengths) the needed runs (and
   FLOOR_RUNS = 2 500, five expected hits of the event on its loaded input: a rough floor for any screen), and the
   runs per input a ``--max-samples 4e7`` budget affords if it spent all of it on that family.
4. **Reach of the planted draws**: for narrow seeds 0..``--seeds``-1 (``plant_narrow``, the suite's seed rule),
   whether each planted region lies inside (a), (b), (c): its length and, for (a), whether its centre is within
   the plan's fine region.
5. ``--planted FILE ...`` (results of ``bench_planted --narrow``): their rows' verdicts split by (a), so a
   suite's flagged fraction reads against what the fine family can reach.

Writes benchmarks/results/narrow_reach.{json,md} with machine information and load averages. A budget
account only: no audit is run, and no verdict depends on a random seed (the timings are wall clock)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from audits.audit_scoring import fine_runs_needed
from audits.pair_search import FINE_SHORT, fine_candidates, fine_levels, fine_region, move_units
from audits.power.planted import PlantedDeployment, plant_narrow
from audits.targets import CallableTarget
from gtm_core import GTMConfig
from gtm_core.planners import make_plan

from .machine import machine_info

SIZES = (1_000, 10_500)
LENGTHS = tuple(range(1, 21))
FLOOR_RUNS = 2_500  # 5 expected hits of the stated 2e-3 event on its loaded input: a rough floor for any screen
EDGE_INPUTS = 3  # inputs per length the formula may miss at the top of the range (clipped up moves)


def inputs_per_level(T: int) -> int:
    """Distinct inputs of one level and length T at half-move spacing (constant stream + one-split and
    alternating moves; the constant up move is another level's constant stream)."""
    return 1 if T == 1 else 2 if T == 2 else T + 1


def request_costs(plan, repeats: int) -> dict[int, tuple[float, float]]:
    """Fitted (a, b) seconds of one request ``a + b n`` per length, from the median timing at each of SIZES."""
    target = CallableTarget(PlantedDeployment(plan, plant_narrow(plan, 0)), name="planted-0", max_T=max(LENGTHS))
    out = {}
    for T in LENGTHS:
        med = []
        for n in SIZES:
            times = []
            for k in range(repeats):
                t0 = time.perf_counter()
                target.sample([0.01] * T, n, k)
                times.append(time.perf_counter() - t0)
            med.append(statistics.median(times))
        b = (med[1] - med[0]) / (SIZES[1] - SIZES[0])
        out[T] = (max(med[0] - b * SIZES[0], 0.0), max(b, 0.0))
    return out


def fine_family_inputs(plan, eps: float, max_T: int) -> dict[int, int]:
    """Distinct inputs of today's fine family per length (``pair_search.fine_candidates``)."""
    seen: dict[int, set] = {}
    for c in fine_candidates(eps, max_T, plan):
        seen.setdefault(len(c.p), set()).update((c.p, c.p_prime))
    return {T: len(v) for T, v in sorted(seen.items())}


def split_by_reach(files: list[str], inside: dict[int, bool]) -> dict:
    """Flagged / audited of the rows of ``files`` whose planted seed is inside today's fine family, and outside
    (``inside``: seed -> in reach; a row whose seed is not in it is an error)."""
    out = {"files": [Path(f).name for f in files], "inside": {"flagged": 0, "of": 0},
           "outside": {"flagged": 0, "of": 0}}
    for f in files:
        for row in json.loads(Path(f).read_text())["rows"]:
            if row["seed"] not in inside:
                raise SystemExit(f"{f}: seed {row['seed']} is beyond --seeds")
            side = out["inside" if inside[row["seed"]] else "outside"]
            side["of"] += 1
            side["flagged"] += int(bool(row["flagged"]))
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="examples/default.toml")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--results-dir", default="benchmarks/results")
    ap.add_argument("--planted", nargs="*", default=[], help="bench_planted --narrow result files to split by reach")
    args = ap.parse_args(argv)
    load_start = [round(x, 2) for x in os.getloadavg()]
    t_start = time.monotonic()
    plan = make_plan(GTMConfig.load(args.config))
    eps = plan.step(1).eps_t
    levels = len(fine_levels(eps))
    region = fine_region(plan, eps, 20)
    region_levels = sum(1 for x in fine_levels(eps) if region[0] <= move_units(x, eps) <= region[1])
    fine = fine_family_inputs(plan, eps, 20)
    expected = {T: inputs_per_level(T) * (levels if T <= FINE_SHORT else region_levels) for T in fine}
    if set(expected) != set(fine) or any(not 0 <= fine[T] - expected[T] <= EDGE_INPUTS for T in fine):
        raise SystemExit(f"input count formula disagrees with fine_candidates: {expected} vs {fine}")
    n_needed = fine_runs_needed()
    costs = request_costs(plan, args.repeats)

    def account(counts: dict[int, int]) -> dict:
        def seconds(n: int) -> float:
            return sum(k * (costs[T][0] + costs[T][1] * n) for T, k in counts.items())

        total = sum(counts.values())
        return {"inputs": total, "seconds_at_needed_runs": seconds(n_needed), "runs_needed_per_input": n_needed,
                "seconds_at_floor_runs": seconds(FLOOR_RUNS), "floor_runs_per_input": FLOOR_RUNS,
                "runs_per_input_at_4e7": 4e7 / total, "lengths": [min(counts), max(counts)]}

    families = {
        "fine (today: lengths 1-3 everywhere, 4-10 in the plan's region)": account(fine),
        "lengths 1-10 everywhere": account({T: inputs_per_level(T) * levels for T in range(1, 11)}),
        "lengths 1-20 everywhere": account({T: inputs_per_level(T) * levels for T in LENGTHS}),
    }
    reach = []
    for s in range(args.seeds):
        r = plant_narrow(plan, s)
        inside = region[0] <= move_units(r.centre, eps) <= region[1]
        reach.append({"seed": s, "T": r.T, "location": r.location, "pattern": r.pattern, "q_hi": r.q_hi,
                      "loss": r.loss, "in_fine_today": r.T <= FINE_SHORT or (r.T <= 10 and inside),
                      "in_lengths_1_10": r.T <= 10, "in_lengths_1_20": r.T <= 20})
    counts = {k: sum(x[k] for x in reach) for k in ("in_fine_today", "in_lengths_1_10", "in_lengths_1_20")}
    split = split_by_reach(args.planted, {x["seed"]: x["in_fine_today"] for x in reach}) if args.planted else None
    doc = {"benchmark": "narrow_reach", "config": args.config, "eps_t": eps, "levels": levels,
           "region_levels": region_levels, "fine_inputs_by_length": fine,
           "request_cost_seconds": {str(T): {"a": a, "b": b} for T, (a, b) in costs.items()},
           "families": families, "planted_reach": counts, "planted": reach, "seeds": args.seeds,
           "verdicts_by_reach": split,
           "repeats": args.repeats, "loadavg_start": load_start,
           "loadavg_end": [round(x, 2) for x in os.getloadavg()], "wall_seconds": time.monotonic() - t_start,
           "machine": machine_info()}
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "narrow_reach.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = ["# Narrow planted target: budget account (`python -m benchmarks.bench_narrow_reach`)", "",
             f"eps_t = {eps}, {levels} half-move levels, runs needed per input {n_needed}; request cost "
             f"a + b n fitted per length (T = 1: a = {costs[1][0] * 1e3:.3f} ms, b = {costs[1][1] * 1e9:.0f} ns; "
             f"T = 10: a = {costs[10][0] * 1e3:.3f} ms, b = {costs[10][1] * 1e9:.0f} ns; T = 20: "
             f"a = {costs[20][0] * 1e3:.3f} ms, b = {costs[20][1] * 1e9:.0f} ns). Load {load_start} -> "
             f"{doc['loadavg_end']}.", "",
             f"| family | inputs | seconds at {n_needed} runs per input (lower bound) | seconds at {FLOOR_RUNS} "
             "(5 expected hits) | runs per input at 4e7 |", "|---|---|---|---|---|"]
    lines += [f"| {k} | {v['inputs']:,} | {v['seconds_at_needed_runs']:.0f} | {v['seconds_at_floor_runs']:.0f} | "
              f"{v['runs_per_input_at_4e7']:.0f} |"
              for k, v in families.items()]
    lines += ["", f"Planted narrow seeds 0..{args.seeds - 1} inside: today's fine family "
              f"{counts['in_fine_today']}/{args.seeds}, lengths 1-10 {counts['in_lengths_1_10']}/{args.seeds}, "
              f"lengths 1-20 {counts['in_lengths_1_20']}/{args.seeds}.", ""]
    if split is not None:
        lines += [f"Verdicts of {', '.join(split['files'])}: inside today's fine family "
                  f"{split['inside']['flagged']}/{split['inside']['of']} flagged, outside "
                  f"{split['outside']['flagged']}/{split['outside']['of']}.", ""]
    (out / "narrow_reach.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return doc


if __name__ == "__main__":
    main()
