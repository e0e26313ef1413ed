"""`gtm tune`: a certified horizon-aware configuration for a required p_bar or an evaluation budget.

    gtm tune --epsilon E --eps-t ET --p-star P --horizon T (--p-bar Q | --max-evaluations N)
             [--beta B] [--json PATH] [--out CONFIG.toml] [--report REPORT.md]

``--p-bar Q``: the cheapest certified design whose rejection threshold is Q. ``--max-evaluations N``: the
largest certified p_bar whose expected evaluations over the horizon (a run that never halts, i.e. every
step runs: the null stream) are at most N. The configuration written by ``--out`` has
``parameterization = "horizon"`` (gtm_core.planners.horizon, docs/horizon.md) and is accepted by
``gtm plan``, ``gtm certify`` and ``gtm deploy``. With ``--out`` or ``--report`` the searched frontier
(certified p_bar vs expected evaluations) is plotted with theorem21 (theta in {0.5, 1, 2}) and
exact_noise (theta = 1) at the same epsilon and beta (``<out or report>.frontier.png``).

Exit codes: 0 a certified configuration was found; 1 the request is not achievable (the best achievable
value is printed); 2 bad usage or bad input.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import click

from gtm_core import GTMConfig, make_plan
from gtm_core.files import write_atomic
from gtm_core.planners.exact_tails import expected_evaluations
from gtm_core.planners.horizon_problem import HorizonProblem, NotAchievable
from gtm_core.planners.horizon_tune import TuneResult, tune
from proofs.plan_checks import THRESHOLD_RATIO_FLOOR, first_unusable_step

from .common import EXIT_CHECK_FAILED, UsageFailure, check_writable, guard, write_json
from .plan import unusable_reason

REFERENCE_THETAS = {"theorem21": (0.5, 1.0, 2.0), "exact_noise": (1.0,)}


def reference_points(problem: HorizonProblem) -> list[dict]:
    """(claimed p_bar at T, expected evaluations over the horizon) of theorem21 and exact_noise plans of
    the same cell (Lemma 12(2) moments, gtm_core.planners.exact_tails.expected_evaluations)."""
    out = []
    for name, thetas in REFERENCE_THETAS.items():
        for th in thetas:
            cfg = GTMConfig.from_dict({
                "gtm": {"parameterization": name, "epsilon": problem.epsilon, "theta": th, "gamma": problem.gamma,
                        "beta": problem.beta},
                "stream": {"eps_t": problem.eps_t, "p_star": problem.p_star, "horizon": problem.T}})
            plan = make_plan(cfg)
            ev = math.fsum(expected_evaluations(plan, t) for t in range(1, problem.T + 1))
            out.append({"planner": name, "theta": th, "p_bar": plan.step(problem.T).p_bar,
                        "expected_evaluations": ev})
    return out


def plan_screen(config: GTMConfig) -> tuple[str, dict] | None:
    """``gtm plan``'s refusal of a configuration (``proofs.plan_checks.first_unusable_step``, the
    certificate's threshold-ratio floor): None for a usable configuration, else (reason, best) with
    best the smallest usable p_bar at the first unusable step. ``gtm tune`` never offers a design that
    ``gtm plan`` / ``gtm certify`` refuse."""
    bad = first_unusable_step(make_plan(config))
    if bad is None:
        return None
    return (f"the certified design is refused by `gtm plan`: {unusable_reason(bad)}",
            {"usable_p_bar_min": THRESHOLD_RATIO_FLOOR * bad.p_star})


def write_plot(path: Path, result_payload: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    fr = [r for r in result_payload["frontier"] if r["certified"]]
    if fr:
        ax.plot([r["expected_evaluations"] for r in fr], [r["p_bar"] for r in fr], "o-", label="horizon (searched frontier)")
    ch = result_payload["chosen"]
    ax.plot([ch["expected_evaluations"]], [ch["p_bar"]], "r*", ms=14, label="horizon (tuned, refined)")
    for name, marker in (("theorem21", "s"), ("exact_noise", "^")):
        pts = [r for r in result_payload["references"] if r["planner"] == name]
        if pts:
            ax.plot([r["expected_evaluations"] for r in pts], [r["p_bar"] for r in pts], marker, ls=":",
                    label=f"{name} (theta " + ", ".join(f"{r['theta']:g}" for r in pts) + ")")
    p = result_payload["problem"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"expected evaluations over the horizon T={p['T']} (never halting)")
    ax.set_ylabel("certified / claimed rejection threshold p_bar")
    ax.set_title(f"eps={p['epsilon']:g}, eps_t={p['eps_t']:g}, p*={p['p_star']:g}, beta={p['beta']:g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def payload_of(problem: HorizonProblem, result: TuneResult, references: list[dict]) -> dict:
    d = result.design
    cert = result.certificate
    return {
        "status": "certified",
        "problem": {"epsilon": problem.epsilon, "eps_t": problem.eps_t, "p_star": problem.p_star, "T": problem.T,
                    "beta": problem.beta},
        "request": result.request.to_dict(),
        "chosen": {"s": d.s, "c": d.c, "rho": d.rho, "p_bar": d.p_bar, "theta": d.theta,
                   "expected_evaluations": result.expected_evaluations,
                   "expected_evaluations_per_step": result.expected_evaluations / problem.T,
                   "certified_failure_upper": cert.failure_upper, "certificate": cert.to_dict()},
        "config": result.config.to_dict(),
        "frontier": [point.to_dict() for point in result.frontier],
        "references": references,
        "seconds": result.seconds,
    }


def format_text(payload: dict) -> str:
    ch, p = payload["chosen"], payload["problem"]
    lines = [f"gtm tune: eps={p['epsilon']:g} eps_t={p['eps_t']:g} p*={p['p_star']:g} T={p['T']} beta={p['beta']:g}",
             f"chosen (parameterization=horizon): s={ch['s']:+d} c={ch['c']} rho={ch['rho']:.10g} "
             f"theta={ch['theta']:.6g} p_bar={ch['p_bar']:.6g}",
             f"expected evaluations over the horizon {ch['expected_evaluations']:.6g} "
             f"({ch['expected_evaluations_per_step']:.6g} per step)",
             f"certified failure probability <= {ch['certified_failure_upper']:.6g} <= beta = {p['beta']:g} "
             f"(arb, {ch['certificate']['panels']} panels)"]
    if payload["frontier"]:
        lines.append("searched frontier (cheapest grid design per p_bar, each certified in arb):")
        lines.append(f"  {'p_bar':>12} {'expected evaluations':>22} {'s':>3} {'c':>6} {'theta':>8} {'failure <=':>12}")
        for r in payload["frontier"]:
            lines.append(f"  {r['p_bar']:>12.6g} {r['expected_evaluations']:>22.6g} {r['s']:>+3d} {r['c']:>6} "
                         f"{r['theta']:>8.4g} {r['failure_upper']:>12.5g}"
                         + ("" if r["certified"] else "  NOT CERTIFIED (not offered)"))
    if payload["references"]:
        lines.append("same cell, other planners (claimed p_bar at T, expected evaluations over the horizon):")
        for r in payload["references"]:
            lines.append(f"  {r['planner']:<12} theta={r['theta']:<4g} p_bar={r['p_bar']:.6g} "
                         f"evaluations={r['expected_evaluations']:.6g}")
    return "\n".join(lines)


@click.command()
@click.option("--epsilon", type=float, required=True, help="output privacy budget (pure DP)")
@click.option("--eps-t", "eps_t", type=float, required=True, help="input mechanisms' privacy eps_t")
@click.option("--p-star", "p_star", type=float, required=True, help="target threshold p*")
@click.option("--horizon", type=int, required=True, help="number of steps T (the deployment stops there)")
@click.option("--beta", type=float, default=0.05, show_default=True, help="global failure probability")
@click.option("--p-bar", "p_bar", type=float, default=None, help="required rejection threshold: minimise cost")
@click.option("--max-evaluations", "max_evaluations", type=float, default=None,
              help="expected evaluations over the horizon (never halting): maximise p_bar")
@click.option("--json", "json_path", default=None, help="write the machine-readable result here")
@click.option("--out", "out_path", default=None, help="write the certified configuration (TOML) here")
@click.option("--report", "report_path", default=None, help="write a markdown report (and the frontier plot) here")
@guard
def command(epsilon, eps_t, p_star, horizon, beta, p_bar, max_evaluations, json_path, out_path, report_path):
    """Certified horizon-aware configuration for a requested p_bar or evaluation budget."""
    if (p_bar is None) == (max_evaluations is None):
        raise UsageFailure("give exactly one of --p-bar and --max-evaluations")
    jp = check_writable(json_path)
    op = check_writable(out_path, "--out", protected=[json_path])  # one file per output
    rp = check_writable(report_path, "--report", protected=[json_path, out_path])
    problem = HorizonProblem(epsilon=epsilon, eps_t=eps_t, p_star=p_star, T=horizon, beta=beta)
    t0 = time.monotonic()

    def say(msg):
        click.echo(f"[tune {time.monotonic() - t0:6.1f}s] {msg}", err=True)

    try:
        result = tune(problem, p_bar=p_bar, max_evaluations=max_evaluations, progress=say, frontier_points=8,
                      screen=plan_screen)
    except NotAchievable as exc:
        click.echo(f"gtm tune: not achievable: {exc}")
        write_json(jp, {"status": "not-achievable", "message": str(exc), "best": exc.best,
                        "request": {"p_bar": p_bar, "max_evaluations": max_evaluations}})
        raise click.exceptions.Exit(EXIT_CHECK_FAILED) from None
    say("reference planners (theorem21, exact_noise) for the comparison")
    references = reference_points(problem)
    payload = payload_of(problem, result, references)
    text = format_text(payload)
    click.echo(text)
    if op is not None:
        write_atomic(op, result.config.to_toml())
    plot_base = op or rp
    if plot_base is not None:
        payload["plot"] = write_plot(plot_base.with_name(plot_base.name + ".frontier.png"), payload)
    if rp is not None:
        write_atomic(rp, "# gtm tune\n\n```\n" + text + "\n```\n\n" +
                     (f"![frontier]({Path(payload['plot']).name})\n" if "plot" in payload else ""))
    write_json(jp, payload)
