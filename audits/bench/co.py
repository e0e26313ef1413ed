"""`gtm co bench`: BatchToCO against its baselines on the bundled and synthetic streams.

For every stream and seeded run it records, step by step, OPT_t (exact enumeration where
feasible, else the non-private greedy, stated), the error OPT_t - f(X_t, Y_t) of BatchToCO and
of the three baselines (gtm_core.batchtoco.baselines) at the same eps, Theorem 42's explicit
accuracy bound (via Corollary 43, pre-O form: Lemma 39's slack and Lemma 41's loss), the
checkpoint count against Lemma 40's explicit bound, and the batch calls per step against the
explicit per-step bound (GTM evaluation budget, Lemma 22/55, plus Lemma 41's k_max at a
checkpoint). Seeded float64 samplers: a benchmark, not a deployment.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

from gtm_core.batchtoco import params as P
from gtm_core.batchtoco.baselines import BASELINES, doubling_times, run_baseline
from gtm_core.batchtoco.driver import run_stream
from gtm_core.batchtoco.gtm_instance import step_privacy_used
from gtm_core.batchtoco.params import COConfig
from gtm_core.batchtoco.problems import make_problem
from gtm_core.batchtoco.streams import DENSEST_STREAMS, bundled_stream, synthetic_stream
from gtm_core.errors import CheckFailed, ConfigError
from gtm_core.files import jsonable, write_atomic
from gtm_core.validation import check_nonnegative_int

from ..plotting import BOUND_COLOUR, NEUTRAL, colour_for, figure, save_png

DELTA_PRIME = 1e-6  # the advanced-composition baseline's delta


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def theorem42_rhs(config: COConfig, problem, opt: float, eps_t: float, last_level: int,
                  eps_at_checkpoint: float | None) -> float:
    """Theorem 42(2) with Corollary 43, explicit: f(X_t, Y_t) >= (alpha OPT_t - E_A(t))/(1+kappa) - slack."""
    kappa, p_bar = config.kappa, config.p_bar
    v = problem.approximation * opt - problem.batch_error(eps_t / 2, config.batch_failure)
    cont = float(P.test_slack(eps_t, p_bar)) / (1 + kappa)
    if last_level <= 1:
        return v / (1 + kappa) - (1 + kappa) - cont
    loss41 = float(P.checkpoint_quality_loss(last_level, eps_at_checkpoint, p_bar, config.beta))
    return v / (1 + kappa) - cont - loss41


def lemma40_bound(config: COConfig, opt: float, t: int) -> int:
    """Explicit Lemma 40: checkpoints by t <= max{l : h_l < OPT_t + (2/eps(l, t)) ln(1/p_bar)} - 1."""
    level = 2
    while level < 10_000:
        eps = step_privacy_used(config, level, P.planning_step(t))
        if not float(P.threshold_level(level, config.kappa)) < opt + float(P.test_slack(eps, config.p_bar)):
            break
        level += 1
    return level - 2


def measure(config: COConfig, stream, seed: int, *, baselines=True, progress=None) -> dict:
    problem = make_problem(config.problem, len(stream.vertices), config.k)
    rng = np.random.default_rng([seed, 1])
    t0 = time.perf_counter()
    recs = run_stream(config, problem, stream.edges, rng, progress=progress)
    seconds = time.perf_counter() - t0
    sols = {"batchtoco": [r.solution for r in recs]}
    if baselines:
        for name in BASELINES:
            sols[name], _ = run_baseline(name, problem, stream.edges, config.epsilon,
                                         np.random.default_rng([seed, 2, BASELINES.index(name)]),
                                         delta_prime=DELTA_PRIME)
    T = len(stream.edges)
    state = problem.empty_state()
    opt = np.zeros(T)
    err = {k: np.zeros(T) for k in sols}
    rhs = np.zeros(T)
    exact_opt = True
    last_level, eps_cp = 1, None
    for i, e in enumerate(stream.edges):
        problem.insert(state, e)
        o, exact = problem.optimum(state)
        exact_opt &= exact
        opt[i] = o
        for k, ys in sols.items():
            err[k][i] = o - problem.value(state, ys[i])
        r = recs[i]
        if r.checkpoint:
            last_level, eps_cp = r.level, r.eps_t
        rhs[i] = theorem42_rhs(config, problem, o, r.eps_t, last_level, eps_cp)
    values = opt - err["batchtoco"]
    checkpoints = np.cumsum([1 if r.checkpoint else 0 for r in recs])
    grid = sorted({int(x) for x in np.unique(np.geomspace(1, T, num=min(T, 40)).astype(int))} | {T})
    l40 = {t: lemma40_bound(config, opt[t - 1], t) for t in grid}
    calls = np.array([r.batch_calls for r in recs])
    bounds = np.array([r.call_bound for r in recs])
    return {
        "seed": seed, "T": T, "seconds": seconds, "opt_exact": bool(exact_opt),
        "opt": opt.tolist(), "errors": {k: v.tolist() for k, v in err.items()},
        "theorem42_rhs": rhs.tolist(),
        "bound_holds_every_step": bool(np.all(values >= rhs - 1e-9)),
        "bound_nonvacuous_steps": int(np.sum(rhs > 0)),
        "checkpoints": checkpoints.tolist(),
        "lemma40": {str(t): l40[t] for t in grid},
        "lemma40_holds": bool(all(checkpoints[t - 1] <= l40[t] for t in grid)),
        "calls": calls.tolist(), "call_bounds": bounds.tolist(),
        "calls_within_bound": bool(np.all(calls <= bounds)),
        "selection_failures": int(sum(1 for r in recs if r.checkpoint and not r.selected)),
    }


def stream_specs(quick: bool) -> list[dict]:
    specs = [
        {"stream": "karate", "problem": "coverage", "k": 2, "seeds": 10 if quick else 40},
        {"stream": "les_miserables", "problem": "coverage", "k": 2, "seeds": 4 if quick else 20},
        {"stream": "davis_southern_women", "problem": "coverage", "k": 2, "seeds": 6 if quick else 30},
        {"stream": "florentine_families", "problem": "coverage", "k": 2, "seeds": 10 if quick else 40},
        {"stream": "florentine_families", "problem": "maxcut", "k": 1, "seeds": 10 if quick else 40},
        {"stream": "florentine_families", "problem": "densest", "k": 1, "seeds": 10 if quick else 40},
    ]
    if not quick:
        specs += [
            {"stream": "synthetic", "n": 64, "m": 10_000, "problem": "coverage", "k": 2, "seeds": 3},
            {"stream": "synthetic", "n": 12, "m": 10_000, "problem": "maxcut", "k": 1, "seeds": 3},
        ]
    return specs


def make_stream(spec: dict):
    if spec["stream"] == "synthetic":
        return synthetic_stream(spec["n"], spec["m"], seed=spec.get("stream_seed", 0))
    return bundled_stream(spec["stream"], seed=spec.get("stream_seed", 0))


def summarise(config: COConfig, spec: dict, runs: list[dict]) -> dict:
    n = len(runs)
    holds = sum(r["bound_holds_every_step"] for r in runs)
    claimed = 1 - float(P.theorem42_failure(config.beta, config.c_beta))
    out = {
        "stream": spec["stream"] if spec["stream"] != "synthetic" else f"synthetic-n{spec['n']}-m{spec['m']}",
        "problem": config.problem, "k": config.k if config.problem == "coverage" else None,
        "updates": runs[0]["T"], "runs": n, "opt_exact": runs[0]["opt_exact"],
        "theorem42": {"holds_every_step": holds, "fraction": holds / n,
                      "clopper_pearson_95": clopper_pearson(holds, n), "claimed_at_least": claimed,
                      "nonvacuous_step_fraction": float(np.mean([r["bound_nonvacuous_steps"] / r["T"] for r in runs]))},
        "lemma40_holds_fraction": float(np.mean([r["lemma40_holds"] for r in runs])),
        "final_checkpoints_mean": float(np.mean([r["checkpoints"][-1] for r in runs])),
        "lemma40_final_bound": runs[0]["lemma40"][str(runs[0]["T"])],
        "calls_per_step_mean": float(np.mean([np.mean(r["calls"]) for r in runs])),
        "calls_within_bound_fraction": float(np.mean([r["calls_within_bound"] for r in runs])),
        "selection_failures": int(sum(r["selection_failures"] for r in runs)),
        "seconds_per_run": float(np.mean([r["seconds"] for r in runs])),
        "final_opt": runs[0]["opt"][-1],
        "errors": {},
    }
    for alg in runs[0]["errors"]:
        mean_err = [float(np.mean(r["errors"][alg])) for r in runs]
        final_err = [float(r["errors"][alg][-1]) for r in runs]
        out["errors"][alg] = {"mean": float(np.mean(mean_err)), "final": float(np.mean(final_err)),
                              "mean_relative": float(np.mean([np.mean(np.array(r["errors"][alg]) /
                                                                      np.maximum(np.array(r["opt"]), 1))
                                                              for r in runs]))}
    return out


def run_bench(config: COConfig, *, quick: bool, out_dir: Path, progress=print, long_stream: bool = False,
              seeds_override: int | None = None, comparison: bool = True) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = stream_specs(quick)
    if long_stream:
        specs.append({"stream": "synthetic", "n": 64, "m": 100_000, "problem": "coverage", "k": 2, "seeds": 1,
                      "baselines": True})
    results, series = [], []
    start = time.perf_counter()
    for spec in specs:
        cfg = replace(config, problem=spec["problem"], k=spec["k"], seed=None)
        stream = make_stream(spec)
        runs = []
        nseeds = seeds_override or spec["seeds"]
        for s in range(nseeds):
            label = f"{spec['stream']}/{spec['problem']} run {s + 1}/{nseeds}"

            def tick(i, T, label=label):
                if T >= 5000:
                    progress(f"  {label}: {i}/{T} updates ({time.perf_counter() - start:.0f} s)")

            runs.append(measure(cfg, stream, s, progress=tick))
            progress(f"{label} done ({time.perf_counter() - start:.0f} s)")
        summary = summarise(cfg, spec, runs)
        results.append(summary)
        series.append({"name": summary["stream"] + "/" + cfg.problem, "runs": runs})
    payload = {"config": config.to_dict(), "quick": quick, "seconds": time.perf_counter() - start,
               "delta_prime_advanced": DELTA_PRIME, "samplers": "float64 (seeded; benchmark, not deployment)",
               "streams": results}
    if comparison:  # quick: the bursty stream only, 2000 updates, 2 seeds (coverage and densest)
        payload["comparison"] = (compare(config, streams=("bursty",), T=2000, seeds=2, progress=progress) if quick
                                 else compare(config, seeds=seeds_override or 10, progress=progress))
        payload["densest"] = (compare(config, streams=("bursty",), T=2000, seeds=2, progress=progress,
                                      problem="densest") if quick
                              else compare(config, streams=DENSEST_STREAMS, seeds=seeds_override or 10,
                                           progress=progress, problem="densest"))
        payload["seconds"] = time.perf_counter() - start
    write_atomic(out_dir / "co_bench.json", json.dumps(jsonable(payload), indent=2, sort_keys=True) + "\n")
    write_atomic(out_dir / "co_bench.md", markdown(payload) + "\n")
    if "comparison" in payload:
        write_atomic(out_dir / "co_comparison.md", comparison_markdown(payload["comparison"]) + "\n")
        write_atomic(out_dir / "co_comparison_densest.md", comparison_markdown(payload["densest"]) + "\n")
    plot(series, out_dir)
    return payload


def markdown(payload: dict) -> str:
    c = payload["config"]
    lines = [f"# BatchToCO benchmark ({'quick' if payload['quick'] else 'full'})", "",
             f"eps = {c['epsilon']}, p* = {c['p_star']}, kappa = {c['kappa']}, gamma = {c['gamma']}, "
             f"beta = {c['beta']}, C_1 = {c['c_1']}, C_H = {c['c_h']}, C_beta = {c['c_beta']:.4g}; "
             f"baselines at the same eps (advanced composition also spends delta' = {payload['delta_prime_advanced']}). "
             f"{payload['samplers']}. Total {payload['seconds']:.0f} s.", "",
             "| stream | problem | T | runs | OPT exact | Thm 42 holds every step (95% CP) | claimed >= | "
             "non-vacuous steps | checkpoints (final mean / Lemma 40 bound) | calls/step (within bound) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in payload["streams"]:
        th = s["theorem42"]
        lo, hi = th["clopper_pearson_95"]
        lines.append(f"| {s['stream']} | {s['problem']}{'' if s['k'] is None else ' k=' + str(s['k'])} | "
                     f"{s['updates']} | {s['runs']} | {s['opt_exact']} | {th['holds_every_step']}/{s['runs']} "
                     f"[{lo:.3f}, {hi:.3f}] | {th['claimed_at_least']:.3f} | {100 * th['nonvacuous_step_fraction']:.1f}% | "
                     f"{s['final_checkpoints_mean']:.1f} / {s['lemma40_final_bound']} | "
                     f"{s['calls_per_step_mean']:.0f} ({100 * s['calls_within_bound_fraction']:.0f}% of runs) |")
    lines += ["", "## Error OPT_t - f(X_t, Y_t) at equal eps (mean over steps / final step, averaged over runs)", "",
              "| stream | problem | final OPT | " + " | ".join(payload["streams"][0]["errors"]) + " |",
              "|---|---|---|" + "---|" * len(payload["streams"][0]["errors"])]
    for s in payload["streams"]:
        cells = [f"{v['mean']:.1f} / {v['final']:.1f}" for v in s["errors"].values()]
        lines.append(f"| {s['stream']} | {s['problem']} | {s['final_opt']:.0f} | " + " | ".join(cells) + " |")
    if "comparison" in payload:
        lines += ["", comparison_markdown(payload["comparison"])]
    if "densest" in payload:
        lines += ["", comparison_markdown(payload["densest"])]
    return "\n".join(lines)


def plot(series: list, out_dir: Path) -> None:
    """co_error.png, co_calls.png, co_checkpoints.png: one panel per stream, in the shared report style."""
    for kind in ("error", "calls", "checkpoints"):
        n = len(series)
        cols = min(4, n)
        rows = math.ceil(n / cols)
        with figure(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False) as (fig, axes):
            for ax in axes.flat[n:]:
                ax.set_visible(False)
            for ax, s in zip(axes.flat, series):
                _panel(ax, kind, s)
            fig.tight_layout()
            save_png(fig, out_dir / f"co_{kind}.png", dpi=110)


def _panel(ax, kind: str, s: dict) -> None:
    runs = s["runs"]
    T = runs[0]["T"]
    x = np.arange(1, T + 1)
    if kind == "error":
        for alg in runs[0]["errors"]:  # BatchToCO on top: the per-step baselines are noisy
            top = alg == "batchtoco"
            ax.plot(x, np.mean([r["errors"][alg] for r in runs], axis=0), label=alg, lw=1.6 if top else 0.7,
                    zorder=3 if top else 2, alpha=1.0 if top else 0.6, color=colour_for(alg))
        ax.plot(x, runs[0]["opt"], ":", color=NEUTRAL, lw=1, label="OPT_t")
        ax.set_ylabel("OPT_t - f(X_t, Y_t)")
    elif kind == "calls":
        ax.plot(x, np.mean([np.cumsum(r["calls"]) for r in runs], axis=0), label="BatchToCO",
                color=colour_for("batchtoco"))
        ax.plot(x, np.mean([np.cumsum(r["call_bounds"]) for r in runs], axis=0), "--", color=BOUND_COLOUR,
                label="explicit bound")
        ax.set_yscale("log")
        ax.set_ylabel("cumulative batch calls")
    else:
        ax.plot(x, np.mean([r["checkpoints"] for r in runs], axis=0), label="checkpoints (mean)",
                color=colour_for("batchtoco"))
        ts = [int(t) for t in runs[0]["lemma40"]]
        ax.plot(ts, [runs[0]["lemma40"][str(t)] for t in ts], "--", color=BOUND_COLOUR, label="Lemma 40 bound (run 1)")
        ax.set_ylabel("checkpoints")
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_title(s["name"], fontsize=9)
    ax.legend(fontsize=6)


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# the certified variant against the baselines on streams where adaptivity matters
# ---------------------------------------------------------------------------

#: seed rule, fixed before any measurement: stream seed s and run seed [s, 1] (baselines [s, 2, i])
#: for s = 0 .. seeds - 1; the verdict is the median over seeds of the per-seed ratio of mean errors.
#: The densest-subgraph application (Section 8.2) uses the same rule, fixed before its first run: streams
#: densest_stream(name, T, s) for name in DENSEST_STREAMS, s = 0 .. 9, T = 10^4, run seed [s, 1].
COMPARISON_STREAMS = ("bursty", "periodic", "contact", "synthetic")


def certified_config(config: COConfig, T: int, problem: str = "coverage", certified=None) -> COConfig:
    """The certified variant of ``config`` planned for horizon T (coverage with k = 2, or densest);
    ``certified``: optional {key: value} of certified keys (P.CERTIFIED_KEYS, not horizon) set on top."""
    extra = dict(certified or {})
    bad = sorted(set(extra) - (set(P.CERTIFIED_KEYS) - {"horizon"}))
    if bad:
        raise ConfigError(f"certified override {bad[0]!r} is not a certified key (one of {', '.join(P.CERTIFIED_KEYS[1:])})")
    d = {k: v for k, v in config.to_dict().items() if k not in P.CERTIFIED_KEYS and k not in ("variant", "seed")}
    d.update(problem=problem, k=2, variant="certified", horizon=T, **extra)
    return COConfig(**d)


def comparison_stream(problem: str, name: str, T: int, seed: int):
    """The comparison's stream ``name`` for ``problem`` (densest: the <= 15-vertex streams)."""
    from gtm_core.batchtoco.streams import adaptive_stream, densest_stream

    if problem == "densest":
        return densest_stream(name, T, seed)
    return synthetic_stream(64, T, seed=seed) if name == "synthetic" else adaptive_stream(name, T, seed)


def maxflow_checkpoints(problem, stream, opt, times) -> int:
    """Densest subgraph: OPT_t by Goldberg's max-flow at ``times`` (1-based) must equal the enumeration's
    ``opt[t - 1]`` exactly; returns how many were checked (a mismatch raises: the benchmark is wrong)."""
    from gtm_core.batchtoco.densest import densest_by_enumeration, densest_by_maxflow, pairs_of

    state, want, done = problem.empty_state(), set(times), 0
    for t, e in enumerate(stream.edges, start=1):
        problem.insert(state, e)
        if t in want:
            flow, _ = densest_by_maxflow(problem.n, pairs_of(state))
            exact = densest_by_enumeration(problem, state)
            if flow != exact or float(exact) != opt[t - 1]:
                raise CheckFailed(f"OPT_{t}: max-flow {flow} != enumeration {exact} / {opt[t - 1]}")
            done += 1
    return done


def compare_one(config: COConfig, name: str, T: int, seed: int, problem_name: str = "coverage",
                *, literal: bool = False, certified=None) -> dict:
    """One seeded run of the certified variant and the three baselines on stream ``name`` (and, with
    ``literal``, of the literal Algorithm 3 at the same eps, run seed [s, 3])."""
    from gtm_core.batchtoco.certified import certified_split

    stream = comparison_stream(problem_name, name, T, seed)
    cfg = certified_config(config, T, problem_name, certified)
    problem = make_problem(problem_name, len(stream.vertices), 2)
    t0 = time.perf_counter()
    recs = run_stream(cfg, problem, stream.edges, np.random.default_rng([seed, 1]))
    seconds = time.perf_counter() - t0
    sols = {"certified": [r.solution for r in recs]}
    if literal:
        lit = replace(cfg, variant="literal", **{k: None for k in P.CERTIFIED_KEYS})
        sols["literal"] = [r.solution for r in run_stream(lit, problem, stream.edges, np.random.default_rng([seed, 3]))]
    for i, b in enumerate(BASELINES):
        sols[b], _ = run_baseline(b, problem, stream.edges, cfg.epsilon, np.random.default_rng([seed, 2, i]),
                                  delta_prime=DELTA_PRIME)
    state = problem.empty_state()
    err = {k: np.zeros(T) for k in sols}
    opt = np.zeros(T)
    for i, e in enumerate(stream.edges):
        problem.insert(state, e)
        opt[i] = problem.optimum(state)[0]
        for k, ys in sols.items():
            err[k][i] = opt[i] - problem.value(state, ys[i])
    split = certified_split(cfg)
    checked = None
    if problem_name == "densest":  # OPT by max-flow at the checkpoints, the doubling times and the end
        checked = maxflow_checkpoints(problem, stream, opt, {r.t for r in recs if r.checkpoint}
                                      | set(doubling_times(T)) | {T})
    return {"stream": name, "problem": problem_name, "T": T, "seed": seed, "seconds": seconds,
            "final_opt": float(opt[-1]), "opt_maxflow_checked": checked,
            "checkpoints": [r.t for r in recs if r.checkpoint], "levels": split.levels,
            "warmup_calls": sum(r.warmup_calls for r in recs), "warmup_calls_charged": split.warmup_calls,
            "first_level": split.first_level, "selection_failures": sum(r.checkpoint and not r.selected for r in recs),
            "calls_per_step": float(np.mean([r.batch_calls for r in recs])),
            "mean": {k: float(v.mean()) for k, v in err.items()}, "final": {k: float(v[-1]) for k, v in err.items()}}


def compare(config: COConfig, *, streams=COMPARISON_STREAMS, T: int = 10_000, seeds: int = 10, progress=print,
            problem: str = "coverage", certified=None, first_seed: int = 0) -> dict:
    """The comparison table: per stream, median over the seeds (rule above) of mean and final errors and of
    the ratio certified / doubling of the mean error. ``problem``: "coverage" (k = 2) or "densest";
    ``certified``: certified keys set on the planned configuration (:func:`certified_config`);
    ``first_seed``: the stream seeds are first_seed .. first_seed + seeds - 1 (default 0: the committed
    comparisons; the rebalance tuning uses 100 .. 104, disjoint from the evaluation seeds 0 .. 9)."""
    first_seed = check_nonnegative_int("first_seed", first_seed, error=ConfigError)
    from gtm_core.batchtoco.certified import certified_split
    from proofs.co_certified_ledger import ledger

    out = []
    for name in streams:
        runs = []
        for s in range(first_seed, first_seed + seeds):
            runs.append(compare_one(config, name, T, s, problem, literal=problem == "densest", certified=certified))
            progress(f"comparison {problem}/{name} seed {s}: certified {runs[-1]['mean']['certified']:.1f} vs doubling "
                     f"{runs[-1]['mean']['doubling']:.1f} ({runs[-1]['seconds']:.0f} s)")
        algs = list(runs[0]["mean"])
        ratio = [r["mean"]["certified"] / max(r["mean"]["doubling"], 1e-9) for r in runs]
        out.append({"stream": name, "problem": problem, "T": T, "seeds": seeds, "runs": runs,
                    "median_mean": {a: float(np.median([r["mean"][a] for r in runs])) for a in algs},
                    "median_final": {a: float(np.median([r["final"][a] for r in runs])) for a in algs},
                    "median_ratio_certified_over_doubling": float(np.median(ratio)),
                    "seeds_certified_below_doubling": int(sum(x < 1 for x in ratio))})
    cfg = certified_config(config, T, problem, certified)
    led = ledger(cfg)
    return {"config": cfg.to_dict(), "split": certified_split(cfg).to_dict(), "ledger": led.to_dict(),
            "seed_rule": f"stream seed s, run seed [s, 1], baselines [s, 2, i], s = {first_seed}..{first_seed + seeds - 1}; "
                         "median over seeds",
            "first_seed": first_seed,
            "streams": out}


ALG_LABELS = {"certified": "certified", "literal": "literal", "doubling": "doubling", "basic": "eps/T",
              "advanced": "advanced"}


def comparison_markdown(payload: dict) -> str:
    algs = [a for a in ("certified", "literal", "doubling", "basic", "advanced") if a in payload["streams"][0]["median_mean"]]
    problem = payload["config"].get("problem", "coverage")
    lines = [f"## Certified BatchToCO vs baselines at equal eps, {problem} (median over seeds of mean / final error)",
             "", "| stream | T | seeds | final OPT (median) | " + " | ".join(ALG_LABELS[a] for a in algs)
             + " | median ratio cert/doubling | seeds cert < doubling |", "|---|---|---|---|" + "---|" * (len(algs) + 2)]
    for s in payload["streams"]:
        m, f = s["median_mean"], s["median_final"]
        cells = " | ".join(f"{m[a]:.1f} / {f[a]:.0f}" for a in algs)
        opt = float(np.median([r["final_opt"] for r in s["runs"]]))
        lines.append(f"| {s['stream']} | {s['T']} | {s['seeds']} | {opt:.1f} | {cells} | "
                     f"{s['median_ratio_certified_over_doubling']:.2f} | {s['seeds_certified_below_doubling']} |")
    sh = payload["ledger"]["shares"]
    lines += ["", "Where the budget goes (arb ledger, fractions of eps): "
              + ", ".join(f"{k} {v:.4f}" for k, v in sh.items())
              + f"; GTM_l halting slack S = {payload['ledger']['halting_slack']:.0f} (p_bar = "
              f"{payload['ledger']['p_bar']:.3g}); levels {payload['split']['levels']} from l_0 = "
              f"{payload['split']['first_level']}."]
    return "\n".join(lines)
