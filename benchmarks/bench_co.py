"""BatchToCO benchmark: `python -m benchmarks.bench_co [--quick] [--long]` writes
benchmarks/results/co/ (co_bench.json/.md, plots) and machine.json (load average included: the
timings depend on it)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from audits.bench.co import COMPARISON_STREAMS, compare, comparison_markdown, run_bench, stderr_progress
from benchmarks.machine import machine_info
from gtm_core.batchtoco.params import COConfig
from gtm_core.errors import ConfigError, GTMError
from gtm_core.files import jsonable

OUT = Path(__file__).resolve().parent / "results" / "co"


def parse_overrides(items) -> dict:
    """``KEY=VALUE`` strings to {key: int, float or bool (``true``/``false``)}; a malformed item is a
    ConfigError naming it."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--certified must be KEY=VALUE, got {item!r}")
        if value.strip().lower() in ("true", "false"):
            out[key] = value.strip().lower() == "true"
            continue
        try:
            out[key] = int(value) if value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            raise ConfigError(f"--certified {key}: not a number or true/false, got {value!r}") from None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--long", action="store_true", help="add the 1e5-update coverage stream")
    ap.add_argument("--comparison-only", action="store_true",
                    help="only the certified-variant comparison (writes co_comparison.json/.md)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="first stream seed of the comparison (seeds first .. first + seeds - 1; default 0)")
    ap.add_argument("--streams", default=",".join(COMPARISON_STREAMS), help="comma-separated comparison streams")
    ap.add_argument("--name", default="co_comparison", help="output file stem under benchmarks/results/co/")
    ap.add_argument("--horizon", type=int, default=10_000, help="comparison stream length T")
    ap.add_argument("--problem", default="coverage", choices=("coverage", "densest"),
                    help="comparison problem (densest: Section 8.2 on the <= 15-vertex streams)")
    ap.add_argument("--certified", action="append", default=[], metavar="KEY=VALUE",
                    help="set a certified key (levels, warmup_share, warmup_after_checkpoint=true, ...) on the "
                         "comparison's configuration; repeatable")
    args = ap.parse_args(argv)
    try:
        overrides = parse_overrides(args.certified)
        if args.first_seed < 0:
            raise ConfigError(f"--first-seed: first_seed must be an integer >= 0, got {args.first_seed}")
    except GTMError as e:  # bad input: one line, exit 2 (before any run)
        print(f"bench_co: {e}", file=sys.stderr)
        return 2
    before = machine_info()
    t0 = time.perf_counter()
    if args.comparison_only:
        payload = compare(COConfig(), streams=tuple(args.streams.split(",")), T=args.horizon, seeds=args.seeds,
                          progress=stderr_progress, problem=args.problem, certified=overrides,
                          first_seed=args.first_seed)
        payload["machine"] = {"before": before, "after": machine_info(), "seconds": time.perf_counter() - t0,
                              "command": f"python -m benchmarks.bench_co --comparison-only --seeds {args.seeds} "
                                         + (f"--first-seed {args.first_seed} " if args.first_seed else "")
                                         + f"--streams {args.streams} --horizon {args.horizon} --name {args.name} "
                                         f"--problem {args.problem}"
                                         + "".join(f" --certified {o}" for o in args.certified)}
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{args.name}.json").write_text(json.dumps(jsonable(payload), indent=2, sort_keys=True) + "\n")
        (OUT / f"{args.name}.md").write_text(comparison_markdown(payload) + "\n")
        return 0
    run_bench(COConfig(), quick=args.quick, out_dir=OUT, progress=stderr_progress, long_stream=args.long)
    info = {"before": before, "after": machine_info(), "seconds": time.perf_counter() - t0,
            "command": "python -m benchmarks.bench_co" + (" --quick" if args.quick else "") + (" --long" if args.long else "")}
    (OUT / "machine.json").write_text(json.dumps(info, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
