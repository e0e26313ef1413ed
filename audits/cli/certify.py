"""`gtm certify CONFIG [--horizon T] [--quick] [--json PATH] [--report PATH] [--seed N] [--seconds S]
[--sign KEY] [--workers N | --scheduler ADDR]`, `gtm certify --verify CERT.json [--public-key PUB] [--rerun
[--workers N | --scheduler ADDR]] [--allow-unsigned]` and `gtm certify --generate-key KEY` (writes KEY and KEY.pub).

``--workers`` / ``--scheduler`` run the audit witness's sampling and the exact search's starts on Dask
(docs/distributed.md); the certificate is the same as in-process.

Exit codes: 0 certified / certificate valid (signed by the given key); 1 refused, incomplete (a
witness unavailable), tampered, mismatched or unsigned certificate (unsigned exits 0 only with
--allow-unsigned, and says so); 2 bad usage or unreadable input. ``--verify`` runs every check with
or without a key; tampered beats mismatched beats unsigned (an edited certificate is tampered, signed
or not), so unsigned always means the contents are consistent.
"""

from __future__ import annotations

from pathlib import Path

import click

from gtm_core import GTMConfig

from gtm_core.files import write_atomic

from ..certify import Certificate, certify, load_document, verify_document
from ..certify.model import privacy_summary
from ..certify.signing import generate_keypair, load_private_key, load_public_key, sign
from .common import EXIT_CHECK_FAILED, EXIT_OK, UsageFailure, check_writable, execution_options, guard, make_executor

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
    lines.append(privacy_summary([c.to_dict() for c in cert.claims]))
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
              help="verify a certificate: signature, shape, every re-derivable number and witness binding")
@click.option("--public-key", "public_key_path", default=None, metavar="PUB",
              help="with --verify: the Ed25519 public key (PEM) the certificate must be signed by")
@click.option("--rerun", is_flag=True,
              help="with --verify: re-run the audit, search and proof witnesses with their recorded seeds and budgets")
@click.option("--allow-unsigned", is_flag=True,
              help="with --verify: exit 0 for a certificate that checks but is unsigned (integrity not established)")
@click.option("--sign", "sign_path", default=None, metavar="KEY",
              help="sign the certificate with this Ed25519 private key (PEM, mode 0600)")
@click.option("--generate-key", "generate_path", default=None, metavar="KEY",
              help="write a new Ed25519 key pair: KEY (private, 0600) and KEY.pub (public), then exit")
@click.option("--no-progress", "--quiet", "no_progress", is_flag=True, help="no progress messages on stderr")
@execution_options
@guard
def command(config_path, horizon, quick, json_path, report_paths, seed, seconds, verify_path, public_key_path,
            rerun, allow_unsigned, sign_path, generate_path, no_progress, workers, scheduler):
    """Certificate for a configuration: every privacy, accuracy, cost and purification claim with its witness."""
    if generate_path is not None:
        if any(v for v in (config_path, verify_path, json_path, report_paths, sign_path, public_key_path, rerun,
                           allow_unsigned, horizon, quick, seed, seconds, workers, scheduler)):
            raise UsageFailure("--generate-key takes no other options")
        private, public = generate_keypair(generate_path)
        click.echo(f"wrote private key {str(private)} (keep it secret, mode 0600) and public key {str(public)}")
        raise click.exceptions.Exit(EXIT_OK)
    if verify_path is not None:
        if config_path is not None:
            raise UsageFailure("--verify takes a certificate, not a configuration")
        if json_path or report_paths or horizon or quick or seed is not None or seconds is not None or sign_path:
            raise UsageFailure("--verify takes only --public-key, --rerun, --allow-unsigned and --no-progress "
                               "(and --workers / --scheduler with --rerun)")
        if (workers is not None or scheduler is not None) and not rerun:
            raise UsageFailure("--workers and --scheduler go with --rerun (only a re-run has work to distribute)")
        key = load_public_key(public_key_path) if public_key_path is not None else None
        doc = load_document(verify_path)
        with make_executor(workers, scheduler) as executor:
            result = verify_document(doc, progress=not no_progress, public_key=key, rerun=rerun, executor=executor)
        body = doc["body"]
        reran = ("; the audit, search and proof witnesses reproduce when re-run (the lemma checks ran again, "
                 "not read from the cache)") if rerun else ""
        if result.valid:
            click.echo(f"valid: signed by key {doc['signature']['key_id'][:16]}; every planner number and "
                       f"deterministic claim re-derives, every witness is bound to the configuration{reran} "
                       f"({len(body['steps'])} steps, verdict {body['verdict']})")
            click.echo(f"vouches for: config sha256 {body['config_sha256']}, horizon {body['horizon']}")
            raise click.exceptions.Exit(EXIT_OK)
        if result.status == "unsigned":
            why = result.problems[0] if result.problems else (
                "no --public-key given" if "signature" in doc else "the certificate carries no signature")
            click.echo(f"unsigned: integrity not established ({why}); the contents are consistent: every planner "
                       f"number and deterministic claim re-derives{reran} ({len(body['steps'])} steps, "
                       f"verdict {body['verdict']})")
            if allow_unsigned:
                click.echo("accepted because of --allow-unsigned: anyone could have written this certificate")
                raise click.exceptions.Exit(EXIT_OK)
            raise click.exceptions.Exit(EXIT_CHECK_FAILED)
        click.echo(f"{result.status}: the certificate does not match its contents", err=False)
        for p in result.problems:
            click.echo(f"  {p}")
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)
    if public_key_path is not None or rerun or allow_unsigned:
        raise UsageFailure("--public-key, --rerun and --allow-unsigned go with --verify")
    if config_path is None:
        raise UsageFailure("missing CONFIG (or --verify CERT.json)")
    inputs = [config_path, sign_path]
    out = check_writable(json_path, protected=inputs)
    reports = [(check_writable(p, "--report", protected=inputs + [json_path]), _report_kind(p))
               for p in report_paths]
    signer = None
    if sign_path is not None:
        private_key = load_private_key(sign_path)
        signer = lambda raw: sign(raw, private_key)  # noqa: E731
    config = GTMConfig.load(config_path)
    with make_executor(workers, scheduler) as executor:
        cert = certify(config, horizon=horizon, quick=quick, seconds=seconds, seed=seed, progress=not no_progress,
                       executor=executor)
    if out is not None:
        write_atomic(out, cert.to_json(signer))
    if reports:
        from ..certify.report import render_html, render_markdown

        body = cert.document()
        for path, kind in reports:
            write_atomic(path, render_html(body) if kind == "html" else render_markdown(body))
    click.echo(summary(cert, config_path))
    raise click.exceptions.Exit(EXIT_OK if cert.passed else EXIT_CHECK_FAILED)
