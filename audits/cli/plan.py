"""`gtm plan CONFIG [--steps 1,10,100] [--json PATH]`: per-step parameters of a configuration."""

from __future__ import annotations

import click

from gtm_core import GTMConfig, make_plan

from .common import UsageFailure, check_writable, guard, parse_int_list, write_json

_COLUMNS = ("t", "s", "c", "rho", "Lambda", "p_bar", "lambda_max")


def plan_payload(config: GTMConfig, steps: list[int]) -> dict:
    plan = make_plan(config)
    rows = [plan.step(t).to_dict() for t in steps]
    return {
        "config": config.to_dict(),
        "config_sha256": config.digest(),
        "globals": {**plan.globals_dict(), "tau2": rows[0]["tau2"] if rows else None},
        "steps": rows,
    }


def format_table(payload: dict) -> str:
    g = payload["globals"]
    lines = []
    head = f"parameterization={g['parameterization']}  tau1={g['tau1']:.10g}  mu1={g['mu1']:.10g}"
    if g["parameterization"] != "theorem23":
        head += f"  tau2={g['tau2']:.10g}  epsilon={g['epsilon']:.10g}"
    lines.append(head)
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
