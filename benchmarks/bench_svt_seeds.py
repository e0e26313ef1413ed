"""Seed robustness of the SVT audits: the bound as a distribution over audit seeds.

    python -m benchmarks.bench_svt_seeds [--seeds 10] [--max-samples 20000000] [--samples SVT4=100000000]
                                         [--variants SVT3,SVT4,SVT5,SVT6] [--workers 1] [--no-propose]

Seed rule (fixed before looking, the same as the pre-proposer run kept in svt_seeds-pre.json): audit
seeds 0..seeds-1, every variant audited once per seed (claimed eps = 0.1, confidence 0.95). The
exact-law proposer (:mod:`audits.power.svt_proposer`) runs once per variant with its own fixed seed
0 and the variant's sample budget (it is deterministic, so every audit seed gets the same proposals);
its candidates join the engine's other families (``--no-propose``: the engine alone). The
non-aborting variants (1024 output codes) get a shorter local search (VECTOR_ITERATIONS). Sample budget
per audit: ``--max-samples`` (2e7), overridden per variant by ``--samples NAME=N`` (SVT4 is
asked for at <= 1e8). Per variant: median, minimum and maximum bound, the fraction of seeds reaching
DP-Sniper's published value, min / published, and per seed the witness (family, event) and its
numerically computed true loss. Writes benchmarks/results/svt_seeds.json (after every audit, so a
cut run keeps its rows) with machine information.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from audits.audit_engine import run_audit
from audits.power.svt import PUBLISHED_DP_SNIPER, SVTProblem, exact_witness_loss, make
from audits.power.svt_proposer import ProposerSettings, propose
from benchmarks.machine import machine_info

PROPOSER_SEED = 0
VECTOR_ITERATIONS = 10  # local-search iterations for SVT5/SVT6 (a 1024-code law costs ~100x more per pair)


def one(name: str, seed: int, max_samples: int, proposals) -> dict:
    mech = make(name)
    t0 = time.monotonic()
    r = run_audit(SVTProblem(mech, proposals=proposals), epsilon=mech.eps, seconds=None, max_samples=max_samples,
                  seed=seed, progress=False, target_name=name)
    return {"variant": name, "seed": seed, "max_samples": max_samples, "lower_bound": r.epsilon_lower_bound,
            "witness_true_loss": exact_witness_loss(mech, r.witness.to_dict()), "event": r.witness.event,
            "family": r.witness.family, "samples": r.samples, "seconds": time.monotonic() - t0}


def budgets(names, default: int, overrides: list[str]) -> dict:
    out = {n: int(default) for n in names}
    for item in overrides:
        name, _, value = item.partition("=")
        if name not in out or not value:
            raise SystemExit(f"--samples: expected NAME=N with NAME in {','.join(names)}, got {item!r}")
        out[name] = int(float(value))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-samples", type=float, default=20_000_000)
    ap.add_argument("--samples", action="append", default=[], help="per-variant budget NAME=N (repeatable)")
    ap.add_argument("--variants", default="SVT3,SVT4,SVT5,SVT6")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-propose", action="store_true", help="the engine's own candidate families only")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "svt_seeds.json"))
    args = ap.parse_args(argv)
    names = args.variants.split(",")
    budget = budgets(names, int(args.max_samples), args.samples)
    proposals, proposer, rows = {}, {}, []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futs = []
        for n in names:  # a variant's audits start as soon as its proposals are ready
            t0 = time.monotonic()
            settings = ProposerSettings(samples=budget[n], seed=PROPOSER_SEED,
                                        iterations=40 if make(n).aborts else VECTOR_ITERATIONS)
            proposals[n] = [] if args.no_propose else propose(make(n), settings)
            proposer[n] = {"settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
                           "seconds": time.monotonic() - t0, "proposals": [p.to_dict() for p in proposals[n]]}
            if proposals[n]:
                print(f"{n}: {len(proposals[n])} exact-law proposals in {proposer[n]['seconds']:.1f} s, best expected "
                      f"bound {proposals[n][0].objective:.4f} (loss {proposals[n][0].loss:.4f}, "
                      f"{proposals[n][0].event})", file=sys.stderr, flush=True)
            futs += [pool.submit(one, n, s, budget[n], proposals[n]) for s in range(args.seeds)]
        for f in futs:
            r = f.result()
            rows.append(r)
            print(f"{r['variant']} seed {r['seed']}: bound {r['lower_bound']:.4f} (witness true loss "
                  f"{r['witness_true_loss']:.4f}, family {r['family']}) {r['seconds']:.0f} s", file=sys.stderr,
                  flush=True)
            write(args, names, budget, proposer, rows)
    for n, s in write(args, names, budget, proposer, rows).items():
        print(n, json.dumps(s))
    return 0


def write(args, names, budget, proposer, rows) -> dict:
    """Summaries over the seeds finished so far (called after every audit, so a cut run keeps its rows)."""
    summary = {}
    for n in names:
        b = [r["lower_bound"] for r in rows if r["variant"] == n]
        if not b:
            continue
        pub = PUBLISHED_DP_SNIPER[n]
        summary[n] = {"seeds": len(b), "max_samples": budget[n], "median": statistics.median(b), "min": min(b),
                      "max": max(b), "dp_sniper": pub, "fraction_reaching_dp_sniper": sum(x >= pub for x in b) / len(b),
                      "min_over_dp_sniper": min(b) / pub, "median_over_dp_sniper": statistics.median(b) / pub,
                      "median_reaches": statistics.median(b) >= pub, "min_at_least_0.9x": min(b) >= 0.9 * pub,
                      "witness_families": {f: sum(r["family"] == f for r in rows if r["variant"] == n)
                                           for f in sorted({r["family"] for r in rows if r["variant"] == n})}}
    Path(args.out).write_text(json.dumps({
        "benchmark": "svt_seeds", "command": "python -m benchmarks.bench_svt_seeds " + " ".join(sys.argv[1:]),
        "budgets": budget, "propose": not args.no_propose, "proposer_seed": PROPOSER_SEED,
        "seed_rule": f"audit seeds 0..{args.seeds - 1}", "proposer": proposer, "summary": summary, "rows": rows,
        "machine": machine_info()}, indent=2) + "\n")
    return summary


if __name__ == "__main__":
    sys.exit(main())
