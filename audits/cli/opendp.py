"""`gtm opendp`: OpenDP measurements against their own privacy maps (optional extra ``[opendp]``).

    gtm opendp audit 'module:constructor' [--d-in 1] [--seconds 60] [--seed 0] [--confidence 0.95]
        [--pairs PAIRS.json] [--no-search] [--enable-feature contrib] [--json out.json] [--report out.html]

``module:constructor`` names a measurement: ``module`` is importable (the current directory is
searched first) or a ``file.py`` path; ``constructor`` is a zero-argument callable returning an
OpenDP ``Measurement``, or the measurement object itself. The OpenDP features the measurement
needs are the user's explicit choice: enabled by the module, or with ``--enable-feature NAME``
(gtm never enables one on its own). The claim is read from the measurement's own
privacy map at ``--d-in``, in its output measure (docs/opendp.md); neighbouring datasets are
searched from its input domain and metric, plus the pairs of ``--pairs`` (a JSON list of
``[input, input']``).

Exit codes: 1 when a violation is found (a lower bound exceeds the claim), 0 when none is found, 2
on bad input (an unimportable constructor, an unsupported output measure, a d_in the map refuses,
a measurement that raises) - one line, never a verdict then.
"""

from __future__ import annotations

import sys

import click

from gtm_core.files import write_atomic
from gtm_core.inputs import parse_json, read_text_file

from .common import EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, guard, write_json


@click.group("opendp")
def command():
    """OpenDP measurements: audit one against its own privacy map."""


def _d_in(text: str):
    """An integer when written as one (dataset metrics), else a float (sensitivity metrics)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    raise UsageFailure(f"--d-in must be a number, got {text!r}")


@command.command("audit")
@click.argument("constructor")
@click.option("--d-in", "d_in", default="1", show_default=True,
              help="input distance at which the privacy map is read (an integer for dataset metrics)")
@click.option("--seconds", type=float, default=60.0, show_default=True,
              help="wall budget of the audit (pilot, search, confirmation, report): it ends within seconds x 1.02 + 1")
@click.option("--seed", type=int, default=0, show_default=True,
              help="seed of the audit's search and sample sizes (OpenDP's own noise cannot be seeded)")
@click.option("--confidence", type=float, default=0.95, show_default=True,
              help="probability that the reported lower bound is below the true privacy loss (in (0, 1))")
@click.option("--pairs", "pairs_path", default=None, help="JSON list of [input, input'] neighbouring pairs to try")
@click.option("--no-search", is_flag=True, help="only the pairs of --pairs (no neighbours searched)")
@click.option("--enable-feature", "features", multiple=True,
              help="enable this OpenDP feature before constructing (repeatable; e.g. contrib, honest-but-curious)")
@click.option("--json", "json_path", default=None, help="write the result as JSON")
@click.option("--report", "report_path", default=None, help="write a readable report (PATH.html)")
@guard
def audit_cmd(constructor, d_in, seconds, seed, confidence, pairs_path, no_search, features, json_path, report_path):
    """Audit an OpenDP measurement against its own privacy map."""
    from gtm_core.validation import check_seconds

    from ..integrations.opendp_audit import audit_measurement, load_measurement

    json_out = check_writable(json_path, "--json", protected=[pairs_path])
    report_out = check_writable(report_path, "--report", protected=[pairs_path, json_path])
    if report_out is not None and report_out.suffix.lower() not in (".html", ".htm"):
        raise UsageFailure(f"--report path {str(report_out)!r} must end in .html or .htm")
    check_seconds("--seconds", seconds)
    if not 0 < confidence < 1:
        raise UsageFailure(f"--confidence must be in (0, 1), got {confidence!r}")
    if seed < 0:
        raise UsageFailure(f"--seed must be >= 0, got {seed}")
    pairs = None
    if pairs_path is not None:
        pairs = parse_json(read_text_file(pairs_path, what="--pairs"), what="--pairs")
        if not isinstance(pairs, list):
            raise UsageFailure(f"--pairs must hold a JSON list of [input, input'] pairs, got a JSON {type(pairs).__name__}")
    if no_search and not pairs:
        raise UsageFailure("--no-search needs --pairs")
    if features:  # the user's explicit choice, on the command line (gtm never enables one on its own)
        from ..integrations.opendp import opendp_prelude

        opendp_prelude().enable_features(*features)
    measurement = load_measurement(constructor)
    result = audit_measurement(measurement, d_in=_d_in(d_in), seconds=seconds, seed=seed, confidence=confidence,
                               pairs=pairs, search=not no_search, progress=sys.stderr.isatty())
    payload = result.to_dict()
    report_text = result.report_html() if report_out is not None else None
    write_json(json_out, payload)
    if report_out is not None:
        write_atomic(report_out, report_text)
    claim = result.claim
    click.echo(f"verdict: {result.verdict}")
    click.echo(f"claim: {claim.measure} at d_in = {claim.d_in}: {claim.how}")
    if result.pure is not None:
        click.echo(f"epsilon claimed: {payload['epsilon_claimed']:g}   lower bound ({confidence:g} confidence): "
                   f"{payload['epsilon_lower_bound']:.4f}")
    else:
        for a in result.points:
            click.echo(f"epsilon {a.epsilon:.4g}: delta claimed {a.delta_claimed:.4g}   lower bound "
                       f"({a.confidence:.4g} confidence): {a.delta_lower_bound:.4g}")
    w = payload.get("witness") or {}
    if w:
        click.echo(f"witness: {str(w.get('input'))[:60]} vs {str(w.get('input_prime'))[:60]}, "
                   f"event {str(w.get('event', w.get('event_outputs')))[:60]}")
    click.echo(f"samples: {payload['samples']:,} in {payload['seconds']:.1f} s ({result.pairs} pairs)")
    sys.exit(EXIT_CHECK_FAILED if result.violation else EXIT_OK)
