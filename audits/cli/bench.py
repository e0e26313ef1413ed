"""`gtm bench [--quick] [--out DIR] [--json PATH] [--seconds S]`: GTM and its peers side by side.

Writes DIR/bench.md (readable report), DIR/bench.json and the plots DIR/pbar_vs_T.png,
DIR/evaluations_vs_T.png (median eps, eps1/eps slice; log scales). Progress goes to stderr.
The full grid (81 cells) is the default; --quick runs the median slice (eps = 1, eps1/eps = 0.1,
p* in {0.1, 0.5, 0.9}, T in {10, 100, 1000}) with fewer samples. --seconds stops starting new
cells once the budget is spent (the report says so). --workers N / --scheduler ADDRESS run the cells on
Dask (docs/distributed.md); every cell has its own random stream (seed, cell index), so bench.json is
the same wherever the cells ran, apart from timings and its "execution" section. Exit 0 when the run completed; the done-when
checks are reported, not enforced (a benchmark measures, it does not fail).
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from gtm_core.files import write_atomic

from ..bench import FULL_GRID, QUICK_GRID, BenchSettings, bench_markdown, run_grid, write_plots
from .common import (EXIT_CHECK_FAILED, UsageFailure, check_writable, execution_options, guard, make_executor,
                     parse_float_list, parse_int_list, write_json)


@click.command()
@click.option("--quick", is_flag=True, help="median slice, fewer samples (<= 2 minutes on 2 cores)")
@click.option("--out", "out_dir", default="bench-out", show_default=True, help="directory for bench.md, bench.json and plots")
@click.option("--json", "json_path", default=None, help="also write the machine-readable result here")
@click.option("--seconds", type=float, default=None, help="time budget: start no new cell after S seconds")
@click.option("--epsilon", default=None, help="override the eps grid (comma-separated)")
@click.option("--ratio", default=None, help="override the eps1/eps grid (comma-separated)")
@click.option("--p-star", "p_star", default=None, help="override the p* grid (comma-separated)")
@click.option("--T", "horizons", default=None, help="override the T grid (comma-separated)")
@click.option("--seed", type=int, default=20261130, show_default=True,
              help="seed of the grid's simulations (recorded in bench.json)")
@click.option("--exact-max-T", "exact_max_t", type=int, default=None,
              help="use the exact engine (when installed) for GTM cells with T <= this; simulation beyond "
                   "[default: 10; 0 with --quick, where ~15 s per exact bisection would break the 2-minute budget]")
@click.option("--no-plots", is_flag=True, help="skip the PNG plots")
@click.option("--quiet", "--no-progress", "quiet", is_flag=True, help="no progress messages on stderr")
@execution_options
@guard
def command(quick, out_dir, json_path, seconds, epsilon, ratio, p_star, horizons, seed, exact_max_t, no_plots, quiet,
            workers, scheduler):
    """Side-by-side accuracy / sample-complexity table of GTM and its peers (Table 1 of the paper)."""
    json_out = check_writable(json_path)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageFailure(f"--out is not a directory: {out_dir!r}")
    if seconds is not None and not seconds > 0:
        raise UsageFailure(f"--seconds must be > 0, got {seconds!r}")
    grid = dict(QUICK_GRID if quick else FULL_GRID)
    if epsilon:
        grid["epsilon"] = parse_float_list(epsilon, "--epsilon")
    if ratio:
        grid["ratio"] = parse_float_list(ratio, "--ratio")
    if p_star:
        grid["p_star"] = parse_float_list(p_star, "--p-star")
    if horizons:
        grid["T"] = parse_int_list(horizons, "--T")
    _validate_grid(grid)
    if exact_max_t is None:
        exact_max_t = 0 if quick else 10
    settings = (BenchSettings.quick if quick else BenchSettings)(seed=seed, exact_max_T=exact_max_t)
    out.mkdir(parents=True, exist_ok=True)
    check_writable(out / "bench.json", "--out")

    t0 = time.perf_counter()

    def progress(i, n, cell):
        if quiet:
            return
        click.echo(f"[{i}/{n}] eps={cell['epsilon']:g} eps1/eps={cell['ratio']:g} p*={cell['p_star']:g} "
                   f"T={cell['T']}: {cell['seconds']:.1f} s (total {time.perf_counter() - t0:.0f} s)", err=True)

    with make_executor(workers, scheduler) as executor:
        result = run_grid(grid, settings, seconds=seconds, progress=progress, executor=executor)
        # cells are whole units of work; reproducible from --seed unless --seconds cut the grid short
        result["execution"] = {**executor.info(reproducible=result["complete"]), "cells": len(result["cells"])}
    result["mode"] = "quick" if quick else "full"
    report = bench_markdown(result)
    plots = [] if no_plots else write_plots(result, out)
    result["plots"] = plots
    write_atomic(out / "bench.md", report)
    write_json(out / "bench.json", result)
    write_json(json_out, result)
    ck = result["checks"]["table1"]
    click.echo(f"{len(result['cells'])}/{result['cells_total']} cells in {result['seconds']:.0f} s; "
               f"GTM p_bar >= comparable peer's in {ck['best_gtm_wins']}/{ck['comparisons']} comparisons "
               f"(theorem21 alone {ck['theorem21_wins']}); report {out / 'bench.md'}")
    if result["errors"]:
        click.echo(f"gtm: {len(result['errors'])} cell(s) failed, see the report", err=True)
        raise SystemExit(EXIT_CHECK_FAILED)


def _validate_grid(grid):
    for e in grid["epsilon"]:
        if not e > 0:
            raise UsageFailure(f"--epsilon values must be > 0, got {e!r}")
    for r in grid["ratio"]:
        if not 0 < r < 0.5:
            raise UsageFailure(f"--ratio values must be in (0, 0.5) (peers need eps > 2 eps1), got {r!r}")
    for p in grid["p_star"]:
        if not 0 < p < 1:
            raise UsageFailure(f"--p-star values must be in (0, 1), got {p!r}")
    for T in grid["T"]:
        if not 2 <= T <= 100_000:
            raise UsageFailure(f"--T values must be in [2, 100000], got {T!r}")
