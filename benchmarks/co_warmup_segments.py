"""Where the certified BatchToCO's mean error comes from, by segment of the stream:
`python -m benchmarks.co_warmup_segments --stream synthetic --seeds 10 --horizon 10000 --name NAME
[--certified KEY=VALUE ...]` replays the comparison's runs (the same seed rule as `benchmarks.bench_co
--comparison-only`: stream seed s, run seed [s, 1], doubling baseline [s, 2, 2]; the same errors to the
last digit) and writes NAME.json / .md under benchmarks/results/co/.

Per seed the stream is cut at the first checkpoint t_c (if any) and at the last doubling time 2^R <= T:
[1, t_c) - output from the warm-up; [t_c, 2^R) - a ThresholdSelect solution until the next doubling time
(with ``warmup_after_checkpoint``) or held; [2^R, T] - the last segment. Each segment's contribution is
sum_t (OPT_t - f(X_t, Y_t)) / T, so the three add up to the mean error of the comparison.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from audits.bench.co import DELTA_PRIME, certified_config, comparison_stream
from benchmarks.bench_co import parse_overrides
from benchmarks.machine import machine_info
from gtm_core.batchtoco.baselines import BASELINES, doubling_times, run_baseline
from gtm_core.batchtoco.driver import run_stream
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.files import jsonable

OUT = Path(__file__).resolve().parent / "results" / "co"
SEGMENTS = ("before_checkpoint", "checkpoint_to_last_doubling", "last_doubling_to_T")


def segments_one(name: str, T: int, seed: int, certified=None) -> dict:
    """One seed: per-segment error contributions of the certified run and of the doubling baseline."""
    stream = comparison_stream("coverage", name, T, seed)
    cfg = certified_config(COConfig(), T, "coverage", certified)
    problem = make_problem("coverage", len(stream.vertices), 2)
    recs = run_stream(cfg, problem, stream.edges, np.random.default_rng([seed, 1]))
    i = BASELINES.index("doubling")
    doubling, _ = run_baseline("doubling", problem, stream.edges, cfg.epsilon, np.random.default_rng([seed, 2, i]),
                               delta_prime=DELTA_PRIME)
    checkpoints = [r.t for r in recs if r.checkpoint]
    last = doubling_times(T)[-1]
    t_c = min(checkpoints[0], last) if checkpoints else last
    cuts = (t_c, last)
    state = problem.empty_state()
    contrib = {a: dict.fromkeys(SEGMENTS, 0.0) for a in ("certified", "doubling")}
    for t, e in enumerate(stream.edges, start=1):
        problem.insert(state, e)
        opt = problem.optimum(state)[0]
        seg = SEGMENTS[0] if t < cuts[0] else SEGMENTS[1] if t < cuts[1] else SEGMENTS[2]
        contrib["certified"][seg] += (opt - problem.value(state, recs[t - 1].solution)) / T
        contrib["doubling"][seg] += (opt - problem.value(state, doubling[t - 1])) / T
    return {"seed": seed, "checkpoints": checkpoints, "cuts": list(cuts), "contribution": contrib,
            "mean": {a: float(sum(v.values())) for a, v in contrib.items()},
            "warmup_calls": sum(r.warmup_calls for r in recs)}


def segments(name: str, T: int, seeds: int, certified=None) -> dict:
    runs = [segments_one(name, T, s, certified) for s in range(seeds)]
    med = {a: {g: float(np.median([r["contribution"][a][g] for r in runs])) for g in SEGMENTS}
           for a in ("certified", "doubling")}
    return {"stream": name, "T": T, "seeds": seeds, "certified_overrides": dict(certified or {}),
            "seed_rule": "stream seed s, run seed [s, 1], doubling [s, 2, 2], s = 0..seeds-1; median over seeds",
            "median_contribution": med, "runs": runs}


def markdown(payload: dict) -> str:
    lines = [f"## Mean error by segment, {payload['stream']}, T = {payload['T']} (median over "
             f"{payload['seeds']} seeds; certified overrides {payload['certified_overrides']})", "",
             "| segment | certified | doubling |", "|---|---|---|"]
    for g in SEGMENTS:
        lines.append(f"| {g} | {payload['median_contribution']['certified'][g]:.1f} | "
                     f"{payload['median_contribution']['doubling'][g]:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stream", default="synthetic")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--horizon", type=int, default=10_000)
    ap.add_argument("--name", default="co_warmup_segments")
    ap.add_argument("--certified", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    before, t0 = machine_info(), time.perf_counter()
    payload = segments(args.stream, args.horizon, args.seeds, parse_overrides(args.certified))
    payload["machine"] = {"before": before, "after": machine_info(), "seconds": time.perf_counter() - t0,
                          "command": f"python -m benchmarks.co_warmup_segments --stream {args.stream} --seeds "
                                     f"{args.seeds} --horizon {args.horizon} --name {args.name}"
                                     + "".join(f" --certified {o}" for o in args.certified)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.name}.json").write_text(json.dumps(jsonable(payload), indent=2, sort_keys=True) + "\n")
    (OUT / f"{args.name}.md").write_text(markdown(payload) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
