"""`gtm plan CONFIG [--steps 1,10,100] [--json PATH]`: per-step parameters of a configuration.

Exit codes: 0 the plan is usable; 1 the plan is printed (and written) but unusable - at some step
up to the horizon the rejection threshold p_bar_t falls below 1e-4 x p*_t (the floor `gtm certify`
refuses at, ``proofs.plan_checks.THRESHOLD_RATIO_FLOOR``), reason on stderr; 2 bad usage or input.
"""

from __future__ import annotations

import click

from gtm_core import GTMConfig, make_plan
from proofs.plan_checks import THRESHOLD_RATIO_FLOOR, first_unusable_step

from .common import EXIT_CHECK_FAILED, UsageFailure, check_writable, guard, parse_int_list, write_json

_COLUMNS = ("t", "s", "c", "rho", "Lambda", "p_bar", "lambda_max")


def plan_payload(config: GTMConfig, steps: list[int]) -> dict:
    plan = make_plan(config)
    rows = [plan.step(t).to_dict() for t in steps]
    bad = first_unusable_step(plan)
    return {
        "config": config.to_dict(),
        "config_sha256": config.digest(),
        "globals": {**plan.globals_dict(), "tau2": rows[0]["tau2"] if rows else None},
        "privacy": {"evaluation_budget": plan.budget_policy, "pure": plan.pure,
                    "epsilon": plan.worst_claimed_loss(), "delta": plan.privacy_delta(),
                    "statement": plan.privacy_statement()},
        "steps": rows,
        "usable": bad is None,
        "warning": None if bad is None else unusable_reason(bad),
    }


def unusable_reason(sp) -> str:
    return (f"unusable configuration: at step t={sp.t} the rejection threshold p_bar_t = {sp.p_bar:.3g} is below "
            f"{THRESHOLD_RATIO_FLOOR:g} x p*_t = {THRESHOLD_RATIO_FLOOR * sp.p_star:.3g} (Lambda_t = {sp.Lambda:.3g}): "
            f"the GTM is only guaranteed to continue on mechanisms that almost never answer +1 (lower eps_t "
            f"or the horizon; `gtm certify` computes the fix)")


def format_table(payload: dict) -> str:
    g = payload["globals"]
    lines = []
    head = f"parameterization={g['parameterization']}  tau1={g['tau1']:.10g}  mu1={g['mu1']:.10g}"
    if g["parameterization"] != "theorem23":
        head += f"  tau2={g['tau2']:.10g}  epsilon={g['epsilon']:.10g}"
    lines.append(head)
    if not payload["privacy"]["pure"]:
        lines.append(f"privacy: {payload['privacy']['statement']}")
    lines.append(
        f"{'t':>7} {'s':>3} {'c':>7} {'rho':>14} {'Lambda':>12} {'p_bar':>12} {'lambda_max':>14}"
        + ("  tau2" if g["parameterization"] == "theorem23" else "")
    )
    for r in payload["steps"]:
        line = (
            f"{r['t']:>7} {r['s']:>+3d} {r['c']:>7} {r['rho']:>14.8g} {r['Lambda']:>12.8g} "
            f"{r['p_bar']:>12.8g} {r['lambda_max']:>14.8g}"
        )
        if g["parameterization"] == "theorem23":
            line += f"  {r['tau2']:.8g}"
        lines.append(line)
    return "\n".join(lines)


@click.command()
@click.argument("config_path", metavar="CONFIG")
@click.option("--steps", default=None, help="comma-separated step indices (default: 1,10,100,... up to the horizon)")
@click.option("--json", "json_path", default=None, help="write the machine-readable result here")
@guard
def command(config_path, steps, json_path):
    """Print the per-step parameters t, s, c, rho, Lambda, p_bar, lambda_max and the globals tau1, tau2, mu1."""
    out = check_writable(json_path, protected=[config_path])
    config = GTMConfig.load(config_path)
    if steps is None:
        ts, t = [], 1
        while t <= config.stream.horizon:
            ts.append(t)
            t *= 10
        if ts[-1] != config.stream.horizon:
            ts.append(config.stream.horizon)
    else:
        ts = parse_int_list(steps, "--steps")
        bad = [t for t in ts if t < 1 or t > config.stream.horizon]
        if bad:
            raise UsageFailure(f"--steps must lie in 1..horizon={config.stream.horizon}, got {bad[0]}")
    payload = plan_payload(config, ts)
    click.echo(format_table(payload))
    write_json(out, payload)
    if not payload["usable"]:
        click.echo(f"gtm: warning: {payload['warning']}", err=True)
        raise SystemExit(EXIT_CHECK_FAILED)
