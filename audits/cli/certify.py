"""`gtm certify CONFIG [--horizon T] [--quick] [--json PATH] [--report PATH] [--seed N] [--seconds S]`
and `gtm certify --verify CERT.json`.

Exit codes: 0 certified / certificate valid; 1 refused, incomplete (a witness unavailable) or
tampered / mismatched certificate; 2 bad usage or unreadable input.
"""

from __future__ import annotations

from pathlib import Path

import click

from gtm_core import GTMConfig

from gtm_core.files import write_atomic

from ..certify import Certificate, certify, load_document, verify_document
from .common import EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, guard

_REPORT_SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}
_MARK = {"pass": "PASS", "fail": "FAIL", "witness-unavailable": "N/A!", "not-applicable": "n/a",
         "info": "info", "recorded": "rec"}


def summary(cert: Certificate, label: str | None = None) -> str:
    lines = [f"gtm certify: {label or cert.config.source or 'configuration'}  parameterization="
             f"{cert.config.gtm.parameterization}  horizon={cert.horizon}  mode={cert.mode}  "
             f"config sha256={cert.config.digest()[:16]}"]
    lines.append(f"{'status':<6} {'claim':<34} {'witness':<20} statement")
    for c in cert.claims:
        text = c.statement if len(c.statement) <= 90 else c.statement[:87] + "..."
        lines.append(f"{_MARK.get(c.status, c.status):<6} {c.id:<34} {c.witness.kind:<20} {text}")
        if c.status == "witness-unavailable":
            lines.append(f"{'':<6} {'':<34} {'':<20} unavailable: {c.witness.details.get('unavailable')}")
        elif "error" in c.witness.details:
            lines.append(f"{'':<6} {'':<34} {'':<20} witness crashed: {c.witness.details['error']}")
    verdict = cert.verdict
    if verdict == "certified":
        lines.append(f"CERTIFIED: {len(cert.claims)} claims, every one with its witness; "
                     f"all {cert.horizon} steps pass")
    elif verdict == "refused":
        lines.append("REFUSED: this configuration cannot be certified")
        for r in cert.refusals:
            lines.append(f"  reason: {r.reason}")
            lines.append(f"  fix:    {r.fix}")
        for c in cert.claims:
            if c.status == "fail" and not any(r.claim_id == c.id for r in cert.refusals):
                lines.append(f"  failed: {c.id}")
    else:
        missing = [c.id for c in cert.claims if c.status == "witness-unavailable"]
        lines.append(f"NOT CERTIFIED (incomplete): witness unavailable for {', '.join(missing)}")
    return "\n".join(lines)


def _report_kind(path: str) -> str:
    kind = _REPORT_SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        raise UsageFailure(f"--report must end in .md or .html, got {path!r}")
    return kind


@click.command()
@click.argument("config_path", metavar="CONFIG", required=False)
@click.option("--horizon", type=int, default=None, help="certify steps 1..T (default: the configuration's horizon)")
@click.option("--quick", is_flag=True, help="short budgets for the search and audit witnesses (<= 2 minutes)")
@click.option("--json", "json_path", default=None, help="write the certificate (JSON with SHA-256 digest) here")
@click.option("--report", "report_paths", multiple=True, help="readable report: PATH.md (Markdown) or PATH.html")
@click.option("--seed", type=int, default=None, help="seed for the audit and search (reported: not for deployment)")
@click.option("--seconds", type=float, default=None, help="time budget of the search and audit witnesses")
@click.option("--verify", "verify_path", default=None, metavar="CERT.json",
              help="verify a certificate: digest and every re-derivable number")
@click.option("--no-progress", "--quiet", "no_progress", is_flag=True, help="no progress messages on stderr")
@guard
def command(config_path, horizon, quick, json_path, report_paths, seed, seconds, verify_path, no_progress):
    """Certificate for a configuration: every privacy, accuracy, cost and purification claim with its witness."""
    if verify_path is not None:
        if config_path is not None:
            raise UsageFailure("--verify takes a certificate, not a configuration")
        if json_path or report_paths or horizon or quick or seed is not None or seconds is not None:
            raise UsageFailure("--verify takes no other options (except --no-progress)")
        doc = load_document(verify_path)
        result = verify_document(doc, progress=not no_progress)
        if result.valid:
            body = doc["body"]
            click.echo(f"valid: sha256 {doc['sha256'][:16]} matches and every planner number and deterministic "
                       f"claim re-derives ({len(body['steps'])} steps, verdict {body['verdict']})")
            raise click.exceptions.Exit(EXIT_OK)
        click.echo(f"{result.status}: the certificate does not match its contents", err=False)
        for p in result.problems:
            click.echo(f"  {p}")
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)
    if config_path is None:
        raise UsageFailure("missing CONFIG (or --verify CERT.json)")
    if horizon is not None and horizon < 1:
        raise UsageFailure(f"--horizon must be a positive integer, got {horizon}")
    if seconds is not None and not seconds > 0:
        raise UsageFailure(f"--seconds must be > 0, got {seconds}")
    out = check_writable(json_path)
    reports = [(check_writable(p, "--report"), _report_kind(p)) for p in report_paths]
    config = GTMConfig.load(config_path)
    cert = certify(config, horizon=horizon, quick=quick, seconds=seconds, seed=seed, progress=not no_progress)
    if out is not None:
        write_atomic(out, cert.to_json())
    if reports:
        from ..certify.report import render_html, render_markdown

        body = cert.document()
        for path, kind in reports:
            write_atomic(path, render_html(body) if kind == "html" else render_markdown(body))
    click.echo(summary(cert, config_path))
    raise click.exceptions.Exit(EXIT_OK if cert.passed else EXIT_CHECK_FAILED)
