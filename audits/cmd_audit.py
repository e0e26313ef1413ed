"""`gtm audit`: audit a deployment that speaks the JSON-lines target protocol.

    gtm audit --target "python -m audits.serve examples/default.toml" --epsilon 1 --eps-t 0.1 \\
        [--seconds 60] [--seed 0] [--confidence 0.95] [--json out.json] [--report out.md]

Exit codes: 1 when a violation is found (lower bound > claimed epsilon), 0 when none is found,
2 on bad input or a broken target (crash, hang, malformed answers) - never a verdict then.
"""

from __future__ import annotations

import sys

import click

from .cli_common import EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, guard, parse_float_list, write_json


@click.command("audit")
@click.option("--target", "target_cmd", required=True, help="command that speaks the JSON-lines target protocol")
@click.option("--epsilon", type=float, required=True, help="claimed output privacy epsilon")
@click.option("--eps-t", "eps_t", required=True, help="input mechanisms' privacy eps_t (a number or a comma list per step)")
@click.option("--seconds", type=float, default=60.0, show_default=True, help="hard time budget")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the audit (requests carry derived seeds)")
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option("--max-samples", type=int, default=None,
              help="total runs budget; with it the audit is bit-for-bit reproducible from --seed")
@click.option("--max-T", "max_T", type=int, default=50, show_default=True, help="longest stream to try")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds to wait for one answer")
@click.option("--json", "json_path", default=None, help="write the result as JSON")
@click.option("--report", "report_path", default=None, help="write a Markdown report (+ PNG plot next to it)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@guard
def command(target_cmd, epsilon, eps_t, seconds, seed, confidence, max_samples, max_T, timeout, json_path,
            report_path, quiet):
    """Audit a GTM deployment: lower bound on its privacy loss and a verdict."""
    from .auditor import audit
    from .targets import SubprocessTarget

    json_out = check_writable(json_path, "--json")
    report_out = check_writable(report_path, "--report")
    if not (0 < confidence < 1):
        raise UsageFailure(f"--confidence must be in (0, 1), got {confidence!r}")
    if not seconds > 0:
        raise UsageFailure(f"--seconds must be > 0, got {seconds!r}")
    if not (epsilon >= 0):
        raise UsageFailure(f"--epsilon must be >= 0, got {epsilon!r}")
    if seed < 0:
        raise UsageFailure(f"--seed must be >= 0, got {seed!r}")
    if max_samples is not None and max_samples < 4000:
        raise UsageFailure(f"--max-samples must be >= 4000, got {max_samples!r}")
    if max_T < 1:
        raise UsageFailure(f"--max-T must be >= 1, got {max_T!r}")
    eps_values = parse_float_list(eps_t, "--eps-t")
    if any(not v > 0 for v in eps_values):
        raise UsageFailure(f"--eps-t values must be > 0, got {eps_t!r}")
    eps_arg = eps_values[0] if len(eps_values) == 1 else eps_values
    with SubprocessTarget(target_cmd, timeout=timeout) as target:
        result = audit(target, epsilon=epsilon, eps_t=eps_arg, seconds=seconds, seed=seed, max_samples=max_samples,
                       confidence=confidence, progress=not quiet and sys.stderr.isatty(), max_T=max_T)
    payload = result.to_dict()
    write_json(json_out, payload)
    if report_out is not None:
        from .report import write_report

        write_report(result, report_out)
    w = result.witness
    click.echo(f"verdict: {result.verdict}")
    click.echo(f"epsilon claimed: {result.epsilon_claimed:g}   lower bound ({result.confidence:g} confidence): "
               f"{result.epsilon_lower_bound:.4f}")
    if w is not None:
        click.echo(f"witness: event {w.event}, P = {w.probability_a:.4g} (>= {w.probability_a_lower:.4g}), "
                   f"P' = {w.probability_b:.4g} (<= {w.probability_b_upper:.4g}), {w.n_a:,} runs each")
    click.echo(f"samples: {result.samples:,} in {result.seconds:.1f} s")
    sys.exit(EXIT_CHECK_FAILED if result.violation else EXIT_OK)
