"""`gtm blackbox`: the private black-box evaluator (Algorithm 4; Algorithm 2 with --privacy approximate
--delta D) - evaluate, exact law, audit, bench.

    gtm blackbox evaluate --data D.csv --columns price --function median --grid 0:100:41 --epsilon 1 --beta 0.1
    gtm blackbox exact    --data small.json --function median --domain 0,1,2,3,4 --epsilon 2 --beta 0.1
    gtm blackbox audit    --function median --domain 0,1,2,3,4 --epsilon 2 --beta 0.1 [--target CMD] [--variant V]
    gtm blackbox serve    --function median --domain 0,1,2,3,4 --epsilon 2 --beta 0.1 [--variant V] [--json PATH]
    gtm blackbox bench    [--seconds 300] [--out benchmarks/results] [--json PATH]
    gtm blackbox evaluate --privacy approximate --delta 1e-6 --epsilon 0.9 --beta 0.1 ...   (Algorithm 2)

Verbs are sub-commands of `blackbox` (the GTM verbs `exact`, `audit`, `bench` keep their meaning).
Exit codes: 0 ok, 1 a check failed (exact loss above the claim, audit violation), 2 bad input
(one line on stderr: empty / non-numeric / wrong-dimension dataset, non-finite domain, eps <= 0,
beta not in (0, 1), ...).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from gtm_core.blackbox.datasets import build_function, read_dataset
from gtm_core.inputs import parse_json, read_text_file
from gtm_core.validation import check_seconds

from ..plotting import PALETTE, figure, save_png
from .common import EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, guard, write_atomic, write_json


# ---------------------------------------------------------------------------------------------
# shared options
# ---------------------------------------------------------------------------------------------


def _grid(text: str, option: str) -> list[float]:
    try:
        lo, hi, count = text.split(":")
        lo, hi, count = float(lo), float(hi), int(count)
    except ValueError:
        raise UsageFailure(f"{option} must be LO:HI:COUNT, got {text!r}") from None
    if count < 2 or not hi > lo:
        raise UsageFailure(f"{option} needs COUNT >= 2 and HI > LO, got {text!r}")
    return [lo + (hi - lo) * i / (count - 1) for i in range(count)]


def build_config(config_path, epsilon, beta, domain, grid, grid2, grid3=None):
    from gtm_core.blackbox import EvaluatorConfig

    if config_path:
        data = parse_json(read_text_file(config_path, what="--config"), what="--config")
        if not isinstance(data, dict):
            raise UsageFailure(f"--config must be a JSON object, got a JSON {type(data).__name__}")
        if epsilon is not None:
            data["epsilon"] = epsilon
        if beta is not None:
            data["beta"] = beta
        return EvaluatorConfig.from_dict(data)
    if epsilon is None or beta is None:
        raise UsageFailure("give --config, or --epsilon and --beta with --domain / --grid / --grid2 / --grid3")
    if sum(x is not None for x in (domain, grid, grid2, grid3)) != 1:
        raise UsageFailure("give exactly one of --domain, --grid, --grid2, --grid3")
    if domain is not None:
        try:
            pts = [[float(v)] for v in domain.split(",") if v.strip()]
        except ValueError:
            raise UsageFailure(f"--domain must be a comma-separated list of numbers, got {domain!r}") from None
    elif grid is not None:
        pts = [[x] for x in _grid(grid, "--grid")]
    elif grid2 is not None:
        g = _grid(grid2, "--grid2")
        pts = [[x, y] for x in g for y in g]
    else:
        g = _grid(grid3, "--grid3")
        pts = [[x, y, z] for x in g for y in g for z in g]
    return EvaluatorConfig(epsilon, beta, tuple(pts))


def evaluator_options(fn):
    opts = [
        click.option("--config", "config_path", default=None, help="JSON {epsilon, beta, domain}"),
        click.option("--epsilon", type=float, default=None, help="privacy budget eps > 0 (pure DP)"),
        click.option("--beta", type=float, default=None, help="failure probability in (0, 1)"),
        click.option("--domain", default=None, help="1-D output domain Y as a comma list"),
        click.option("--grid", default=None, help="1-D output domain Y as LO:HI:COUNT"),
        click.option("--grid2", default=None, help="2-D output domain Y = grid x grid, LO:HI:COUNT"),
        click.option("--grid3", default=None, help="3-D output domain Y = grid^3, LO:HI:COUNT (COUNT = 2: "
                     "|Y| = 8, |Y~| = 35)"),
        click.option("--function", "function", default="median", show_default=True,
                     help="median | mean | slope | tukey-center | center-3d | module:callable"),
        click.option("--depth-method", default="auto", show_default=True,
                     type=click.Choice(["auto", "enumeration", "monotone"])),
        click.option("--privacy", default="pure", show_default=True, type=click.Choice(["pure", "approximate"]),
                     help="pure: Algorithm 4 (eps, 0); approximate: Algorithm 2 (eps, delta), eps in (0, 1)"),
        click.option("--delta", type=float, default=None, help="delta in (0, 1) (with --privacy approximate)"),
        click.option("--constant-c", "constant_c", type=float, default=160.0, show_default=True,
                     help="Algorithm 2's universal constant C (privacy holds for every C > 0; utility claimed "
                          "only for C >= 160)"),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def make_evaluator(config_path, epsilon, beta, domain, grid, grid2, function, depth_method, variant="correct",
                   privacy="pure", delta=None, constant_c=160.0, grid3=None):
    from gtm_core.blackbox import BlackBoxEvaluator

    from ..power.blackbox import variant_evaluator

    if privacy == "pure" and delta is not None:
        raise UsageFailure("--delta needs --privacy approximate (Algorithm 4 is pure DP)")
    if privacy == "approximate" and delta is None:
        raise UsageFailure("--privacy approximate needs --delta D with D in (0, 1)")
    cfg = build_config(config_path, epsilon, beta, domain, grid, grid2, grid3)
    f, monotone = build_function(function, cfg)
    if depth_method == "monotone" and monotone is False:
        raise UsageFailure(f"--depth-method monotone needs a monotone 1-D function (median, mean), not {function!r}")
    method = depth_method if (depth_method != "auto" or not monotone) else "auto"
    if privacy == "approximate":
        from gtm_core.blackbox.approx.evaluator import ApproxConfig, ApproxEvaluator
        from gtm_core.blackbox.approx.params import ApproxConstants

        from ..power.blackbox import approx_variant_evaluator

        acfg = ApproxConfig(cfg.epsilon, delta, cfg.beta, cfg.domain, ApproxConstants(C=constant_c))
        return approx_variant_evaluator(ApproxEvaluator(acfg, f, depth_method=method), variant)
    base = BlackBoxEvaluator(cfg, f, depth_method=method)
    return variant_evaluator(base, variant)


def _approx_summary(ev) -> str:
    p = ev.params
    return (f"eps={p.epsilon:g} delta={p.delta:g} beta={p.beta:g} |Y~|={p.M} H=log*|Y~|={p.H} K={p.K} R={p.R:.4f} "
            f"lambda={p.locality} C={ev.config.constants.C:g}")


@click.group("blackbox")
def command():
    """The private black-box evaluator (Algorithm 4): evaluate, exact law, audit, bench, serve."""


# ---------------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------------


@command.command("evaluate")
@evaluator_options
@click.option("--data", required=True, help="dataset: CSV (with --columns) or JSON list")
@click.option("--columns", default=None, help="column(s) of the CSV/JSON records")
@click.option("--runs", type=int, default=1, show_default=True, help="independent runs")
@click.option("--seed", type=int, default=None, help="seed (tests only; default: fresh OS entropy)")
@click.option("--json", "json_path", default=None)
@guard
def evaluate_cmd(config_path, epsilon, beta, domain, grid, grid2, grid3, function, depth_method, privacy, delta, constant_c,
                 data, columns, runs, seed, json_path):
    """Run Algorithm 4 (or Algorithm 2 with --privacy approximate) on a dataset and print the private output(s)."""
    import numpy as np

    out = check_writable(json_path, protected=(data, config_path))
    if runs < 1:
        raise UsageFailure(f"--runs must be >= 1, got {runs}")
    if seed is not None and seed < 0:
        raise UsageFailure(f"--seed must be >= 0, got {seed}")
    S = read_dataset(data, columns, function)
    ev = make_evaluator(config_path, epsilon, beta, domain, grid, grid2, function, depth_method,
                        privacy=privacy, delta=delta, constant_c=constant_c, grid3=grid3)
    rng = np.random.default_rng(seed)
    if privacy == "approximate":
        outputs = [[float(c) for c in ev.run(S, rng)] for _ in range(runs)]
        payload = {"outputs": outputs, "n_records": len(S), "config": ev.config.to_dict(),
                   "parameters": ev.params.to_dict(), "privacy": "approximate", "seed": seed,
                   "note": "Algorithm 2 (Theorem 2.6), float64 reference sampler; (eps, delta) holds for every C, "
                           "the convex-hull utility only where Theorem G.4's constant is met" +
                           ("; seeded run: not for deployment" if seed is not None else "")}
        write_json(out, payload)
        _echo_outputs(outputs)
        click.echo(f"{_approx_summary(ev)} n={len(S)}", err=True)
        return
    idx = ev.sample(S, runs, rng) if runs > 1 else np.array([ev.extended.index(ev.run(S, rng))])
    outputs = [[float(c) for c in ev.extended[i]] for i in idx]
    p = ev.params
    payload = {"outputs": outputs, "n_records": len(S), "config": ev.config.to_dict(), "parameters": p.to_dict(),
               "extended_domain_size": p.M, "seed": seed,
               "note": "float64 reference sampler (numpy); not a hardened deployment" +
                       ("; seeded run: not for deployment" if seed is not None else "")}
    write_json(out, payload)
    _echo_outputs(outputs)
    click.echo(f"eps={p.epsilon:g} beta={p.beta:g} |Y~|={p.M} K={p.K} R={p.R:.4f} lambda={p.locality} "
               f"n={len(S)}", err=True)


# ---------------------------------------------------------------------------------------------
# exact
# ---------------------------------------------------------------------------------------------


@command.command("exact")
@evaluator_options
@click.option("--data", required=True, help="dataset (small: n <= 16, or a monotone 1-D function)")
@click.option("--columns", default=None)
@click.option("--variant", default="correct", show_default=True, help="an evaluator of the power suite")
@click.option("--min-probability", type=float, default=0.0, show_default=True)
@click.option("--json", "json_path", default=None)
@click.option("--report", "report_path", default=None, help="Markdown report (+ PNG plot next to it)")
@guard
def exact_cmd(config_path, epsilon, beta, domain, grid, grid2, grid3, function, depth_method, privacy, delta, constant_c,
              data, columns, variant, min_probability, json_path, report_path):
    """Exact output law on the dataset and on every S minus one record; certified loss (pure) or certified
    hockey-stick delta(eps) (--privacy approximate) vs the claim."""
    from gtm_core.blackbox.exact import neighbours_remove_one, output_law, pair_loss

    out = check_writable(json_path, protected=(data, config_path))
    rep = check_writable(report_path, "--report", protected=(data, config_path, json_path))
    if rep is not None:
        check_writable(rep.with_suffix(".png"), "--report (its plot)", protected=(data, config_path, json_path))
    S = tuple(read_dataset(data, columns, function))
    ev = make_evaluator(config_path, epsilon, beta, domain, grid, grid2, function, depth_method, variant,
                        privacy=privacy, delta=delta, constant_c=constant_c, grid3=grid3)
    if privacy == "approximate":
        if rep is not None:
            raise UsageFailure("--report is implemented for --privacy pure only")
        _exact_approx(ev, S, variant, out)
    law = output_law(ev, S)
    rows = []
    for T in neighbours_remove_one(S):
        for a, b in ((S, T), (T, S)):
            pl = pair_loss(ev, a, b, min_probability=min_probability)
            rows.append({"from_size": len(a), "to_size": len(b), "loss_lower": pl.loss_lower,
                         "loss_upper": pl.loss_upper, "witness": ev.codes[pl.witness_index],
                         "removed": list(set(S) - set(T)) if len(T) < len(S) else []})
    worst = max(rows, key=lambda r: r["loss_upper"])
    claim = ev.params.epsilon
    certified = worst["loss_upper"] <= claim
    above = worst["loss_lower"] > claim
    payload = {"variant": variant, "claim_epsilon": claim, "certified_loss_at_most_claim": certified,
               "loss_above_claim": above, "max_loss_lower": worst["loss_lower"], "max_loss_upper": worst["loss_upper"],
               "law": {c: float(p.mid()) for c, p in zip(ev.codes, law.probabilities)},
               "h_law": {str(k): float(v.mid()) for k, v in law.h_law}, "pairs": rows,
               "parameters": ev.params.to_dict(), "method": "python-flint arb balls (128 bits)"}
    write_json(out, payload)
    if rep is not None:
        _exact_report(rep, payload, ev)
    click.echo(f"exact law of Algorithm 4 ({variant}) on n={len(S)}: max loss over {len(rows)} ordered pairs in "
               f"[{worst['loss_lower']:.6f}, {worst['loss_upper']:.6f}] vs claim eps={claim:g}: "
               f"{'certified <= claim' if certified else 'ABOVE the claim' if above else 'undecided'}")
    sys.exit(EXIT_OK if certified else EXIT_CHECK_FAILED)


def _exact_approx(ev, S: tuple, variant: str, out) -> None:
    from gtm_core.blackbox.approx.exact import approx_output_law, pair_delta
    from gtm_core.blackbox.evaluator import point_code
    from gtm_core.blackbox.exact import neighbours_remove_one

    if len(S) < 2:
        raise UsageFailure("--privacy approximate exact needs a dataset with at least 2 records")
    law = approx_output_law(ev, S)
    p = ev.params
    rows = []
    for T in neighbours_remove_one(S):
        pd = pair_delta(ev, S, T, p.epsilon)
        rows.append({"from_size": len(S), "to_size": len(T), "delta_lower": pd.lower, "delta_upper": pd.upper})
    worst = max(rows, key=lambda r: r["delta_upper"])
    certified = worst["delta_upper"] <= p.delta
    above = worst["delta_lower"] > p.delta
    payload = {"privacy": "approximate", "variant": variant, "claim_epsilon": p.epsilon, "claim_delta": p.delta,
               "certified_delta_at_most_claim": certified, "delta_above_claim": above,
               "max_delta_lower": worst["delta_lower"], "max_delta_upper": worst["delta_upper"],
               "law": {point_code(y): float(v.mid()) for y, v in sorted(law.probabilities.items())},
               "h_law": {str(k): float(v.mid()) for k, v in law.h_law}, "pairs": rows,
               "parameters": p.to_dict(), "method": "python-flint arb balls (128 bits), hockey-stick delta(eps)"}
    write_json(out, payload)
    click.echo(f"exact law of Algorithm 2 ({variant}) on n={len(S)}: max delta({p.epsilon:g}) over {len(rows)} "
               f"pairs in [{worst['delta_lower']:.6g}, {worst['delta_upper']:.6g}] vs claim delta={p.delta:g}: "
               f"{'certified <= claim' if certified else 'ABOVE the claim' if above else 'undecided'}")
    sys.exit(EXIT_OK if certified else EXIT_CHECK_FAILED)


def _exact_report(path: Path, payload: dict, ev) -> None:
    lines = [f"# Exact output law of Algorithm 4 ({payload['variant']})", "",
             f"claim eps = {payload['claim_epsilon']:g}; max loss in [{payload['max_loss_lower']:.6f}, "
             f"{payload['max_loss_upper']:.6f}]; certified <= claim: {payload['certified_loss_at_most_claim']}", "",
             "| output | probability |", "|---|---|"]
    lines += [f"| {c} | {p:.6g} |" for c, p in payload["law"].items()]
    with figure(figsize=(6, 3)) as (fig, ax):
        ax.bar(range(len(payload["law"])), list(payload["law"].values()), color=PALETTE[0])
        ax.set_xticks(range(len(payload["law"])), list(payload["law"]), rotation=90, fontsize=6)
        ax.set_ylabel("P(output)")
        fig.tight_layout()
        png = save_png(fig, path.with_suffix(".png"), dpi=120)
    lines += ["", f"![law]({png.name})"]
    write_atomic(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------------------------


@command.command("audit")
@evaluator_options
@click.option("--target", "target_cmd", default=None, help="command speaking the finite-output protocol "
              "(docs/finite_outputs.md); default: our evaluator in-process")
@click.option("--variant", default="correct", show_default=True, help="in-process evaluator of the power suite")
@click.option("--data", default=None, help="audit on this dataset and its remove-one neighbours")
@click.option("--columns", default=None)
@click.option("--claim", "claim", type=float, default=None, help="claimed eps (default: --epsilon)")
@click.option("--seconds", type=float, default=60.0, show_default=True)
@click.option("--max-samples", type=int, default=None)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option("--timeout", type=float, default=60.0, show_default=True)
@click.option("--json", "json_path", default=None)
@guard
def audit_cmd(config_path, epsilon, beta, domain, grid, grid2, grid3, function, depth_method, privacy, delta, constant_c,
              target_cmd, variant, data, columns, claim, seconds, max_samples, seed, confidence, timeout, json_path):
    """Statistical audit of an evaluator on neighbouring datasets it searches itself (--privacy approximate:
    the approximate-DP audit of Algorithm 2 at its (eps, delta))."""
    import numpy as np

    from ..power.blackbox import audit_evaluator, candidate_pairs, crossing_sizes, refine_pair
    from ..finite import SubprocessFiniteTarget, audit_finite

    out = check_writable(json_path, protected=(data, config_path))
    check_seconds("--seconds", seconds)
    check_seconds("--timeout", timeout)
    if not 0 < confidence < 1:
        raise UsageFailure(f"--confidence must be in (0, 1), got {confidence!r}")
    if seed < 0:
        raise UsageFailure(f"--seed must be >= 0, got {seed}")
    ev = make_evaluator(config_path, epsilon, beta, domain, grid, grid2, function, depth_method, variant,
                        privacy=privacy, delta=delta, constant_c=constant_c, grid3=grid3)
    eps_claim = ev.params.epsilon if claim is None else claim
    if privacy == "approximate":
        _audit_approx(ev, data, columns, function, eps_claim, seed, confidence, seconds, target_cmd, out)
        return
    if data is not None:
        S = read_dataset(data, columns, function)
        enc = lambda r: list(r) if isinstance(r, tuple) else r  # noqa: E731
        pairs = [({"dataset": [enc(r) for r in S]}, {"dataset": [enc(r) for r in S[:i] + S[i + 1:]]})
                 for i in sorted({S.index(r) for r in S})]
    else:
        if ev.config.d != 1:
            raise UsageFailure("without --data the auditor searches datasets of domain values (d = 1 only)")
        universe = [p[0] for p in ev.config.domain]
        pairs = candidate_pairs(universe, crossing_sizes(ev.params), np.random.default_rng(seed))
    quiet = not sys.stderr.isatty()
    if target_cmd:
        with SubprocessFiniteTarget(target_cmd, timeout=timeout) as t:
            res = audit_finite(t, pairs, epsilon=eps_claim, seconds=seconds, max_samples=max_samples, seed=seed,
                               confidence=confidence, alphabet=ev.codes, refine=refine_pair, progress=not quiet)
    else:
        res = audit_evaluator(ev, [], epsilon=eps_claim, seconds=seconds, max_samples=max_samples, seed=seed,
                              confidence=confidence, pairs=pairs, progress=not quiet)
    payload = res.to_dict()
    write_json(out, payload)
    w = payload.get("witness") or {}
    click.echo(f"verdict: {res.verdict}")
    click.echo(f"epsilon claimed: {eps_claim:g}   lower bound ({confidence:g} confidence): {res.epsilon_lower_bound:.4f}")
    if w:
        click.echo(f"witness: |S|={len(w['input']['dataset'])} vs |S'|={len(w['input_prime']['dataset'])}, "
                   f"event {w['event']} -> outputs {w['event_outputs'][:6]}")
    click.echo(f"samples: {payload['samples']:,} in {payload['seconds']:.1f} s")
    sys.exit(EXIT_CHECK_FAILED if res.violation else EXIT_OK)


def _audit_approx(ev, data, columns, function, eps_claim, seed, confidence, seconds, target_cmd, out) -> None:
    from ..power.blackbox import audit_approx_evaluator

    if target_cmd:
        raise UsageFailure("--target is implemented for --privacy pure only (the approximate audit runs in-process)")
    pairs = None
    if data is not None:
        S = read_dataset(data, columns, function)
        enc = lambda r: list(r) if isinstance(r, tuple) else r  # noqa: E731
        pairs = [({"dataset": [enc(r) for r in S]}, {"dataset": [enc(r) for r in S[:i] + S[i + 1:]]})
                 for i in sorted({S.index(r) for r in S})]
    elif ev.config.d != 1:
        raise UsageFailure("without --data the auditor searches datasets of domain values (d = 1 only)")
    universe = [p[0] for p in ev.config.domain]
    res = audit_approx_evaluator(ev, universe, epsilon=eps_claim, seed=seed, confidence=confidence, pairs=pairs,
                                 seconds=seconds)
    payload = res.to_dict()
    write_json(out, payload)
    w = payload.get("witness") or {}
    click.echo(f"verdict: {res.verdict}")
    click.echo(f"(eps, delta) claimed: ({eps_claim:g}, {res.delta_claimed:g})   delta lower bound "
               f"({confidence:g} confidence): {res.delta_lower_bound:.4f}")
    if w:
        click.echo(f"witness: |S|={len(w['input']['dataset'])} vs |S'|={len(w['input_prime']['dataset'])}, "
                   f"outputs {w['event_outputs'][:6]}")
    click.echo(f"samples: {payload['samples']:,} in {payload['seconds']:.1f} s")
    sys.exit(EXIT_CHECK_FAILED if res.violation else EXIT_OK)


# ---------------------------------------------------------------------------------------------
# serve (the finite-output protocol, for subprocess audits)
# ---------------------------------------------------------------------------------------------


@command.command("serve")
@evaluator_options
@click.option("--variant", default="correct", show_default=True)
@click.option("--json", "json_path", default=None,
              help="when stdin ends, write a summary here: requests answered, error answers, parameters")
@guard
def serve_cmd(config_path, epsilon, beta, domain, grid, grid2, grid3, function, depth_method, privacy, delta, constant_c,
              variant, json_path):
    """Serve Algorithm 4 (or Algorithm 2) over the finite-output JSON-lines protocol (input {"dataset": [...]})."""
    from gtm_core.errors import GTMError, InvalidParameter

    from ..power.blackbox import approx_evaluator_target, evaluator_target

    out = check_writable(json_path, protected=(config_path,))
    ev = make_evaluator(config_path, epsilon, beta, domain, grid, grid2, function, depth_method, variant,
                        privacy=privacy, delta=delta, constant_c=constant_c, grid3=grid3)
    target = approx_evaluator_target(ev) if privacy == "approximate" else evaluator_target(ev)
    answered = errors = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = parse_json(line, what="request")
            if not isinstance(req, dict):
                raise InvalidParameter(f"request must be a JSON object, got a JSON {type(req).__name__}")
            n, seed = req.get("n"), req.get("seed", 0)
            counts = target.sample(req.get("input"), n, seed)
            resp = {"counts": dict(counts)}
            answered += 1
        except (GTMError, AttributeError, TypeError) as exc:
            resp = {"error": str(exc)[:200]}
            errors += 1
        sys.stdout.write(json.dumps(resp, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    write_json(out, {"variant": variant, "requests": answered + errors, "answered": answered,
                     "error_answers": errors, "config": ev.config.to_dict(), "parameters": ev.params.to_dict()})


# ---------------------------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------------------------


@command.command("bench")
@click.option("--seconds", type=float, default=600.0, show_default=True, help="time budget (checked between cases)")
@click.option("--runs", type=int, default=2000, show_default=True, help="evaluator runs per case")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", default="benchmarks/results", show_default=True)
@click.option("--json", "json_path", default=None, help="also write the machine-readable result here")
@click.option("--privacy", default="pure", show_default=True, type=click.Choice(["pure", "approximate"]),
              help="approximate: Algorithm 2 vs Algorithm 4 vs sample-and-aggregate, and the log* vs log crossover")
@click.option("--delta", type=float, default=None, help="delta in (0, 1) (with --privacy approximate)")
@guard
def bench_cmd(seconds, runs, seed, out_dir, json_path, privacy, delta):
    """Utility on real data: median, mean, least-squares slope, 2-D center point vs sample-and-aggregate
    (--privacy approximate: the approximate-DP evaluator against the pure one)."""
    from ..bench.blackbox_utility import run_utility, write_utility

    out = check_writable(json_path)
    check_seconds("--seconds", seconds)
    d = Path(out_dir)
    if not d.is_dir():
        raise UsageFailure(f"--out directory does not exist: {out_dir!r}")
    if runs < 10:
        raise UsageFailure(f"--runs must be >= 10, got {runs}")
    if privacy == "pure" and delta is not None:
        raise UsageFailure("--delta needs --privacy approximate")
    if privacy == "approximate":
        from gtm_core.blackbox.approx.compare import run_comparison, write_comparison
        from ..bench.blackbox_utility import goog_with_volume
        from gtm_core.validation import check_open_unit

        if delta is None:
            raise UsageFailure("--privacy approximate needs --delta D with D in (0, 1)")
        check_open_unit("--delta", delta)
        result = run_comparison(goog_with_volume(), seed=seed, runs=runs, seconds=seconds, delta=delta,
                                progress=lambda m: click.echo(m, err=True))
        result["command"] = f"gtm blackbox bench --privacy approximate --delta {delta:g} --runs {runs} --seed {seed}"
        paths = write_comparison(result, d)
        write_json(out, result)
        for p in paths:
            click.echo(f"wrote {p}")
        return
    result = run_utility(seconds=seconds, runs=runs, seed=seed, progress=lambda m: click.echo(m, err=True))
    paths = write_utility(result, d)
    write_json(out, result)
    for p in paths:
        click.echo(f"wrote {p}")


def _echo_outputs(outputs: list) -> None:
    """The first 20 outputs, one comma-separated line each, then how many there were."""
    for o in outputs[:20]:
        click.echo(",".join(f"{c:g}" for c in o))
    if len(outputs) > 20:
        click.echo(f"... {len(outputs)} outputs")
