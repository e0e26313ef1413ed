"""`gtm audit`: audit a deployment that speaks the JSON-lines target protocol.

    gtm audit --target "python -m audits.serve examples/default.toml" --epsilon 1 --eps-t 0.1 \\
        [--seconds 60] [--seed 0] [--confidence 0.95] [--json out.json] [--report out.html]
        [--workers N | --scheduler tcp://host:8786]       (sampling on Dask: docs/distributed.md)
    gtm audit --target "..." --config examples/default.toml      (epsilon and eps_t from the configuration)

With ``--config`` the claimed epsilon (for theorem23: the largest claimed halting loss up to the
horizon) and eps_t (a number or the per-step list) come from the configuration the deployment
claims, validated as every configuration is; ``--epsilon`` / ``--eps-t`` may still be given and
must then agree with it. The configuration's ``evaluation_budget`` picks the claim
(:func:`audits.capped_claim.privacy_claim`): ``"none"`` pure epsilon (the loss test), ``"refuse"``
(epsilon, delta) (the hockey-stick test on the finite outcomes); ``--claim pure`` forces the pure
claim on a capped configuration (tested as delta = 0).

Budgets: ``--seconds`` alone (default 60 s) is a time budget; ``--max-samples`` alone is a sample budget
with no time cap (the audit is then reproducible from ``--seed``); both together: the sample budget plans
the audit and the clock is a hard stop - an audit whose time runs out first ends with the bound reached so
far and says so ("budget stop: ..." on stdout, ``search.budget.stopped`` in the JSON).

Early verdicts (default; ``--no-early-stop`` turns them off): the witness is looked at after every
estimation chunk (the runs double), each look at its share alpha 0.1 6 / (pi^2 k^2) of the level and the
final look at 0.9 alpha (total alpha, :mod:`audits.early_stop`); the audit stops at the first look whose
bound clears the claim ("time to verdict: ..." on stdout, ``early_stop`` in the JSON). The (epsilon, delta)
audit of a capped configuration has no early verdicts.

Exit codes: 1 when a violation is found (lower bound > claimed epsilon), 0 when none is found,
2 on bad input or a broken target (crash, hang, malformed answers) - never a verdict then.
"""

from __future__ import annotations

import sys

import click

from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from gtm_core.files import write_atomic

from .common import (EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, execution_options, guard,
                     make_executor, parse_float_list, write_json)


DEFAULT_SECONDS = 60.0  # the time budget when neither --seconds nor --max-samples is given
WEAK_SAMPLES = 1_000_000  # fewer runs than this: the bound is far from what the target's loss could show


@click.command("audit")
@click.option("--target", "target_cmd", required=True, help="command that speaks the JSON-lines target protocol")
@click.option("--epsilon", type=float, default=None, help="claimed output privacy epsilon")
@click.option("--eps-t", "eps_t", default=None,
              help="input mechanisms' privacy eps_t: one number for every step, or a comma list of one value "
                   "per step 1..L (the audit's streams then have at most L steps)")
@click.option("--config", "config_path", default=None,
              help="configuration the deployment claims: epsilon and eps_t are taken from it")
@click.option("--claim", "claim", type=click.Choice(["auto", "pure", "approximate"]), default="auto",
              show_default=True,
              help="with --config: the claim to test; auto = the configuration's (pure under evaluation_budget = "
                   "none, (epsilon, delta) under refuse)")
@click.option("--seconds", type=float, default=None,
              help=f"hard time budget [default: {DEFAULT_SECONDS:g}; with --max-samples: no time cap unless "
                   f"--seconds is given]")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the audit (requests carry derived seeds)")
@click.option("--confidence", type=float, default=0.95, show_default=True,
              help="probability that the reported lower bound is below the true privacy loss (in (0, 1))")
@click.option("--max-samples", type=int, default=None,
              help="total runs budget; with it the audit is bit-for-bit reproducible from --seed")
@click.option("--max-T", "max_T", type=int, default=None,
              help="longest stream to try [default: 50, or the length of a per-step --eps-t list]")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds to wait for one answer")
@click.option("--json", "json_path", default=None, help="write the result as JSON")
@click.option("--report", "report_path", default=None,
              help="write a readable report: PATH.html (one self-contained page) or PATH.md (Markdown), plot embedded")
@click.option("--no-early-stop", "no_early_stop", is_flag=True,
              help="no early verdict: always spend the whole budget and test the witness once at level 1 - "
                   "confidence (default: stop as soon as an interim look's bound clears the claim, same level)")
@click.option("--quiet", "--no-progress", "quiet", is_flag=True, help="no progress bar on stderr")
@execution_options
@guard
def command(target_cmd, epsilon, eps_t, config_path, claim, seconds, seed, confidence, max_samples, max_T, timeout,
            json_path, report_path, no_early_stop, quiet, workers, scheduler):
    """Audit a GTM deployment: lower bound on its privacy loss and a verdict."""
    from ..capped_claim import HOCKEY_STICK
    from ..gtm_audit import DEFAULT_MAX_T, audit, audit_parameters, check_audit_arguments
    from ..report import render_report, report_format
    from ..targets import SubprocessTarget
    from gtm_core.input_privacy import InputPrivacy

    if config_path is None:
        for name, value in (("--epsilon", epsilon), ("--eps-t", eps_t)):
            if value is None:
                raise click.UsageError(f"Missing option '{name}'.")
    json_out = check_writable(json_path, "--json", protected=[config_path])
    report_out = check_writable(report_path, "--report", protected=[config_path, json_path])
    if report_out is not None:
        try:
            report_fmt = report_format(report_out)
        except InvalidParameter as exc:
            raise UsageFailure(f"--report: {exc}") from None
    privacy = None
    if eps_t is not None:
        eps_values = parse_float_list(eps_t, "--eps-t")
        privacy = InputPrivacy.from_user(eps_values[0] if len(eps_values) == 1 else eps_values, field="--eps-t")
    if config_path is not None:
        epsilon, privacy = _agree_with_config(config_path, epsilon, privacy, audit_parameters)
    requested_T, max_T = max_T, _stream_limit(max_T, privacy, DEFAULT_MAX_T)
    seconds = time_budget(seconds, max_samples)
    # the library's own checks, before the target starts (a GTMError is exit 2, one line)
    check_audit_arguments(epsilon=epsilon, eps_t=privacy, seconds=seconds, max_samples=max_samples,
                          confidence=confidence, seed=seed, max_T=max_T)
    stated = _stated_claim(config_path, claim)
    if stated is not None and stated.method == HOCKEY_STICK:
        if report_out is not None:
            raise UsageFailure("--report: not available for an (epsilon, delta) audit; use --json")
        _hockey_stick(stated, target_cmd, privacy, seconds, seed, confidence, max_samples, requested_T, timeout,
                      json_out)
    # the claimed plan tells the search where to be densest (never where to skip)
    claimed = make_plan(GTMConfig.load(config_path)) if config_path is not None else None
    with make_executor(workers, scheduler) as executor, SubprocessTarget(target_cmd, timeout=timeout) as target:
        result = audit(target, epsilon=epsilon, eps_t=privacy, seconds=seconds, seed=seed, max_samples=max_samples,
                       confidence=confidence, progress=not quiet and sys.stderr.isatty(), max_T=max_T,
                       executor=executor, claimed_plan=claimed, early_stop=not no_early_stop)
        # reproducible from --seed when a sample budget planned the audit and the clock never cut it
        stop = result.search.budget.stopped if result.search is not None else None
        reproducible = max_samples is not None and stop is None and (seconds is None or result.seconds < seconds)
        execution = executor.info(reproducible=reproducible)
    report_text = render_report(result, report_fmt) if report_out is not None else None  # before any file
    payload = result.to_dict()
    payload["execution"] = execution
    if stated is not None:
        payload["claim"] = stated.to_dict()
    write_json(json_out, payload)
    if report_out is not None:
        write_atomic(report_out, report_text)
    w = result.witness
    if stated is not None:
        click.echo(stated.statement())
    click.echo(f"verdict: {result.verdict}")
    click.echo(f"epsilon claimed: {result.epsilon_claimed:g}   lower bound ({result.confidence:g} confidence): "
               f"{result.epsilon_lower_bound:.4f}")
    if w is not None:
        click.echo(f"witness: event {w.event}, P = {w.probability_a:.4g} (>= {w.probability_a_lower:.4g}), "
                   f"P' = {w.probability_b:.4g} (<= {w.probability_b_upper:.4g}), {w.n_a:,} runs each")
    click.echo(f"samples: {result.samples:,} in {result.seconds:.1f} s")
    if result.early_stop is not None:
        click.echo(f"time to verdict: {result.early_stop.describe()}")
    if stop is not None:
        click.echo(stop)
    if result.samples < WEAK_SAMPLES:
        click.echo(f"gtm: warning: only {result.samples:,} runs in {result.seconds:.0f} s (a slow target or a small "
                   f"--max-samples): the lower bound is weak and can miss a violation; a larger --seconds or a faster "
                   f"target tightens it", err=True)
    sys.exit(EXIT_CHECK_FAILED if result.violation else EXIT_OK)


def time_budget(seconds: float | None, max_samples: int | None) -> float | None:
    """The audit's time budget: ``--seconds`` when given; else none with ``--max-samples`` (a sample budget
    plans the audit, a clock would only cut it short), else DEFAULT_SECONDS."""
    if seconds is not None:
        return seconds
    return None if max_samples is not None else DEFAULT_SECONDS


def _stated_claim(path, claim: str):
    """The claim to test (:func:`audits.capped_claim.privacy_claim` of the configuration's plan); None
    without a configuration (then --epsilon is a pure claim; --claim other than auto is refused)."""
    from ..capped_claim import privacy_claim

    if path is None:
        if claim != "auto":
            raise UsageFailure(f"--claim {claim} needs --config (the claim is the configuration's)")
        return None
    return privacy_claim(make_plan(GTMConfig.load(path)), claim=claim)


def _hockey_stick(stated, target_cmd, privacy, seconds, seed, confidence, max_samples, max_T, timeout, json_out):
    """The (epsilon, delta) audit of a capped deployment (:func:`audits.capped_claim.audit_claim`): one
    JSON, four lines, exit 1 on a violation."""
    from ..capped_claim import audit_claim
    from ..targets import SubprocessTarget

    with SubprocessTarget(target_cmd, timeout=timeout) as target:
        result = audit_claim(target, stated, eps_t=privacy, seconds=seconds, seed=seed, confidence=confidence,
                             max_samples=max_samples, max_T=max_T).result
    write_json(json_out, {**result.to_dict(), "claim": stated.to_dict()})
    w = result.witness
    click.echo(stated.statement())
    click.echo(f"verdict: {result.verdict}")
    click.echo(f"delta claimed at epsilon {result.epsilon:g}: {result.delta_claimed:.3g}   lower bound "
               f"({result.confidence:g} confidence): {result.delta_lower_bound:.4g}")
    click.echo(f"witness: p = {w['input']}, p' = {w['input_prime']}, event {{{', '.join(w['event_outputs'])}}}: "
               f"{w['count']:,} vs {w['count_prime']:,} of {w['n']:,} runs each")
    click.echo(f"samples: {result.samples:,} in {result.seconds:.1f} s")
    sys.exit(EXIT_CHECK_FAILED if result.violation else EXIT_OK)


def _agree_with_config(path, epsilon, privacy, audit_parameters):
    """epsilon and eps_t from the configuration; flags given as well must agree with it exactly."""
    claimed, privacy_cfg = audit_parameters(GTMConfig.load(path))
    if epsilon is not None and epsilon != claimed:
        raise UsageFailure(f"--epsilon {epsilon!r} disagrees with the configuration's claimed epsilon {claimed!r}")
    if privacy is not None and privacy.values != privacy_cfg.values:
        raise UsageFailure(f"--eps-t {privacy.show()} disagrees with the configuration's eps_t {privacy_cfg.show()}")
    return claimed, privacy_cfg


def _stream_limit(max_T, privacy, default_max_T: int) -> int:
    """The longest stream to ask the audit for. A per-step eps_t list gives the privacy of steps 1..L
    and nothing beyond (:class:`gtm_core.input_privacy.InputPrivacy`) - like a configuration's list,
    which must have length horizon - so an explicit --max-T beyond L is refused rather than guessing
    eps_t for later steps; without --max-T the library's default, which the audit caps to L itself."""
    steps = privacy.steps
    if steps is not None and max_T is not None and max_T > steps:
        raise UsageFailure(f"--eps-t has {steps} per-step values but --max-T is {max_T}: give one value for "
                           f"every step up to --max-T (or a single number for all steps)")
    return default_max_T if max_T is None else max_T
