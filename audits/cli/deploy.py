"""`gtm deploy`: run a persisted, crash-safe GTM deployment (gtm_core.deployment).

    gtm deploy init STATE CONFIG [--certificate CERT --public-key PUB] [--key PATH] [--seed N]
                    [--json PATH]                                       (or: --config CONFIG)
    gtm deploy status STATE [--key PATH] [--json PATH]
    gtm deploy step STATE (--mechanism-cmd CMD | --bernoulli P) [--steps K] [--timeout S]
                          [--seed N] [--key PATH] [--json PATH]

``--mechanism-cmd CMD`` runs CMD (no shell) once per step with ``GTM_STEP=t`` in its environment;
it must print mechanism outputs, one ``+1``/``-1`` per line (it is killed once enough were read).
``--bernoulli P`` is a demonstration mechanism (+1 with probability P, ignoring any data).

The release path: ``init --certificate CERT --public-key PUB`` refuses unless CERT is a valid
certificate signed by PUB, certified, whose full configuration digest is CONFIG's; the binding is
kept in the state's authenticated body and shown by ``status``. Without a certificate, ``init``
applies every refusal ``gtm certify`` applies (usable threshold, evaluation budget,
purification) and the deployment is marked uncertified.
Nothing printed or written here contains eta_1, per-step noise, N_t, K_t or evaluation counts;
a deployment that ever used a seeded generator is marked "not for deployment" in every output.
"""

from __future__ import annotations

import click

from gtm_core import GTMConfig
from gtm_core.deployment import CommandMechanism, Deployment, GenerationCheck, check_time_limit
from gtm_core.deployment.certificate_record import certificate_record
from gtm_core.deployment.state import (
    read_certificate,
    read_only_status,
    state_is_read_only,
)
from gtm_core.errors import CheckFailed, InvalidParameter, UnsupportedConfiguration
from gtm_core.evaluation import BernoulliMechanism
from gtm_core.reference import NOT_FOR_DEPLOYMENT, default_rng
from gtm_core.validation import check_probability

from .common import check_writable, guard, write_json


def _transcript_text(runs) -> str:
    if not runs:
        return "(no steps yet)"
    return ", ".join(f"{sym} x{n}" if n > 1 else sym for sym, n in runs)


def status_text(s: dict) -> str:
    lines = [f"deployment {s['state_file']}: {s['status']}"]
    if s["status"] == "failed":
        f = s["failure"]
        lines.append(f"  failed at step {f['step']} ({f['kind']}): {f['reason']}")
    elif s["status"] == "halted":
        lines.append(f"  halted at step {s['halted_at']}")
    line = f"  steps committed: {s['steps_done']} of horizon {s['horizon']}"
    nxt = s.get("next_step_plan")
    if nxt:
        line += (f"; next step {nxt['t']} (s={nxt['s']:+d}, c={nxt['c']}, eps_t={nxt['eps_t']:g}, "
                 f"evaluation budget {nxt['evaluation_budget']}"
                 f"{'' if nxt['evaluation_budget_enforced'] else ' (reported, not enforced)'}, "
                 f"Pr[budget exceeded] <= {nxt['budget_exceed_probability']:.3g})")
    elif s["horizon_reached"]:
        line += "; horizon reached without halting"
    lines.append(line)
    lines.append(f"  transcript: {_transcript_text(s['transcript'])}")
    p = s["plan"]
    eps = "" if p["epsilon"] is None else f", epsilon={p['epsilon']:g}"
    lines.append(f"  plan: {p['parameterization']}, tau1={p['tau1']:.10g}, mu1={p['mu1']:.10g}{eps}")
    lines.append(f"  privacy: {s['privacy']}")
    lines.append(f"  config sha256: {s['config_sha256']}")
    lines.append(f"  {certificate_text(s.get('certificate'))}")
    lines.append(f"  state file: generation {s['generation']}, "
                 f"updated {s['updated_utc']}")
    if s["seeded"]:
        lines.append(f"  note: {NOT_FOR_DEPLOYMENT}")
    if "pending_step" in s:
        lines.append("  read-only view: nothing was recovered or written")
        if s["pending_step"] is not None:
            lines.append(f"  step {s['pending_step']} was pending: the process running it died; the next writable "
                         "open records the deployment as failed (crashed_during_step)")
    return "\n".join(lines)


def certificate_text(record) -> str:
    """The status line of the certificate a deployment was released under (or its absence)."""
    if record is None:
        return ("certificate: none (uncertified: created without --certificate; the refusals of "
                "gtm certify were applied, its witnesses were not)")
    return (f"certificate: sha256 {record['certificate_sha256']}, signed by key {record['key_id']}, "
            f"certifies config sha256 {record['config_sha256']} for horizon {record['horizon']}")


def certified_record(config: GTMConfig, cert_path: str, public_key_path: str) -> dict:
    """The certificate record of a deployment of ``config`` released under CERT: CERT must be a
    valid certificate signed by PUB, certified, for exactly ``config`` (full digest)."""
    from ..certify import load_document, verify_document
    from ..certify.signing import load_public_key

    key = load_public_key(public_key_path)
    doc = load_document(cert_path)
    result = verify_document(doc, public_key=key)
    if not result.valid:
        why = f": {result.problems[0]}" if result.problems else ""
        raise CheckFailed(f"refusing to deploy: certificate {cert_path!r} is {result.status}{why}")
    body = doc["body"]
    if body["verdict"] != "certified":
        raise CheckFailed(f"refusing to deploy: certificate {cert_path!r} is {body['verdict']}, not certified")
    digest = config.digest()
    if body["config_sha256"] != digest:
        raise CheckFailed(f"refusing to deploy: certificate {cert_path!r} vouches for configuration "
                          f"{body['config_sha256']} (horizon {body['horizon']}), not for this one ({digest}, "
                          f"horizon {config.stream.horizon})")
    return certificate_record(certificate_sha256=doc["sha256"], config_sha256=digest, horizon=body["horizon"],
                              key_id=doc["signature"]["key_id"])


def refuse_uncertifiable(config: GTMConfig) -> None:
    """Apply every refusal ``gtm certify`` applies (audits.certify: plannable, usable threshold,
    evaluation budget, purification) to a configuration deployed without a certificate."""
    from ..certify.derive import derive
    from ..certify.refusals import fix_unplannable

    try:
        refusals = derive(config).refusals
    except UnsupportedConfiguration as exc:
        refusals = [fix_unplannable(config, exc)]
    if refusals:
        r = refusals[0]
        raise UnsupportedConfiguration(
            f"refusing to deploy a configuration gtm certify refuses ({r.claim_id}): {r.reason}; {r.fix}")


_key_option = click.option("--key", "key_path", default=None, metavar="PATH",
                           help="key file (default: STATE.key)")
_generation_check_option = click.option(
    "--generation-check", "generation_check", default=None, metavar="CMD",
    help="external rollback check: 'CMD check ID GEN' before stepping (non-zero exit refuses), "
         "'CMD record ID GEN+1' before (write-ahead) and 'CMD record ID GEN' after every step "
         "(examples/generation_check.sh)")
_json_option = click.option("--json", "json_path", default=None, metavar="PATH",
                            help="write the machine-readable result here")


def deployment_files(state, key_path, *inputs) -> dict:
    """What a deploy command's ``--json`` must never overwrite: the state, its key, its lock, their
    temporary files (after resolving links) and the command's inputs."""
    key = key_path if key_path is not None else f"{state}.key"
    return {"protected": [state, key, f"{state}.lock", *inputs], "protected_temporaries": [state, key]}


@click.group(name="deploy")
def command():
    """Run a persisted, crash-safe GTM deployment (state file + key file, 0600)."""


@command.command(name="init")
@click.argument("state", metavar="STATE")
@click.argument("config_arg", metavar="[CONFIG]", required=False)
@click.option("--config", "config_path", default=None, metavar="CONFIG",
              help="TOML/JSON configuration (or give it as the second argument, as the other verbs take CONFIG)")
@click.option("--certificate", "certificate_path", default=None, metavar="CERT",
              help="release under this signed certificate (gtm certify --sign): refused unless it is valid, "
                   "certified and for exactly CONFIG")
@click.option("--public-key", "public_key_path", default=None, metavar="PUB",
              help="with --certificate: the Ed25519 public key (PEM) the certificate must be signed by")
@_key_option
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="seed the generator (tests only: marks the deployment 'not for deployment')")
@_generation_check_option
@_json_option
@guard
def init_cmd(state, config_arg, config_path, certificate_path, public_key_path, key_path, seed, generation_check,
             json_path):
    """Create a deployment at STATE: plan CONFIG, draw eta_1 once, write the state.

    CONFIG is the second argument (``gtm deploy init STATE CONFIG``) or ``--config CONFIG``
    (the earlier form, still accepted); giving both is an error. With ``--certificate CERT
    --public-key PUB`` the deployment is bound to that signed certificate; without, it is
    uncertified and refused if ``gtm certify`` would refuse CONFIG."""
    if config_arg is not None and config_path is not None:
        raise click.UsageError("give CONFIG once: as an argument or with --config, not both")
    config_path = config_arg if config_arg is not None else config_path
    if config_path is None:
        raise click.UsageError("Missing argument 'CONFIG' (gtm deploy init STATE CONFIG, or --config CONFIG).")
    if (certificate_path is None) != (public_key_path is None):
        raise click.UsageError("--certificate and --public-key go together (an unsigned certificate binds nothing)")
    out = check_writable(json_path, **deployment_files(state, key_path, config_path, certificate_path,
                                                       public_key_path))
    check = None if generation_check is None else GenerationCheck.from_text(generation_check)
    config = GTMConfig.load(config_path)
    if certificate_path is not None:
        record = certified_record(config, certificate_path, public_key_path)
    else:
        record = None
        refuse_uncertifiable(config)
    # the certificate record is part of the state's first write: certified or no state at all
    with Deployment.create(state, config, key_path=key_path, seed=seed, certificate=record) as dep:
        path = dep.path
        if check is not None:
            check.run("record", dep.deployment_id, dep.generation)
        s = {**dep.status_dict(), "certificate": read_certificate(path, key_path)}
    click.echo(f"created deployment {s['state_file']} ({s['plan']['parameterization']}, horizon "
               f"{s['horizon']}, config sha256 {s['config_sha256']})")
    click.echo(certificate_text(s["certificate"]))
    click.echo("keep the state and key files private; never restore either from a backup")
    if s["seeded"]:
        click.echo(f"note: {NOT_FOR_DEPLOYMENT}")
    write_json(out, s)


@command.command(name="status")
@click.argument("state", metavar="STATE")
@_key_option
@_json_option
@guard
def status_cmd(state, key_path, json_path):
    """Show the public status of the deployment at STATE (recovers a crashed step as failed; on a
    read-only file system, a read-only view that recovers nothing)."""
    out = check_writable(json_path, **deployment_files(state, key_path))
    if state_is_read_only(state, key_path):  # no lock file can be created: a read-only view
        s = read_only_status(state, key_path)
    else:
        with Deployment.open(state, key_path=key_path) as dep:
            s = {**dep.status_dict(), "certificate": read_certificate(dep.path, key_path)}
    click.echo(status_text(s))
    write_json(out, s)


@command.command(name="step")
@click.argument("state", metavar="STATE")
@click.option("--mechanism-cmd", "mechanism_cmd", default=None, metavar="CMD",
              help="mechanism command printing one +1/-1 per line (GTM_STEP=t in its environment)")
@click.option("--bernoulli", type=float, default=None, metavar="P",
              help="demonstration mechanism: +1 with probability P")
@click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
              help="run up to this many steps (stops at a halt)")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="time limit in seconds for one step's evaluations")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="seed the generators (tests only: marks the deployment 'not for deployment')")
@_key_option
@_generation_check_option
@_json_option
@guard
def step_cmd(state, mechanism_cmd, bernoulli, steps, timeout, seed, key_path, generation_check, json_path):
    """Run the next step(s) of the deployment at STATE on a mechanism."""
    out = check_writable(json_path, **deployment_files(state, key_path))
    if (mechanism_cmd is None) == (bernoulli is None):
        raise InvalidParameter("give exactly one of --mechanism-cmd CMD and --bernoulli P")
    timeout = check_time_limit(timeout, "--timeout")
    if bernoulli is not None:
        bernoulli = check_probability("--bernoulli", bernoulli)
    if mechanism_cmd is not None:
        CommandMechanism(mechanism_cmd)  # parse errors, missing program: before opening the deployment
    check = None if generation_check is None else GenerationCheck.from_text(generation_check)
    mech_rng, _ = default_rng(None if seed is None else seed + 1)
    rng, _ = default_rng(seed)
    ran = []
    with Deployment.open(state, key_path=key_path, rng=rng if seed is not None else None) as dep:
        if check is not None:  # before any step: a rolled-back state is refused here
            check.run("check", dep.deployment_id, dep.generation)
        try:
            note = _run_steps(dep, steps, mechanism_cmd, bernoulli, mech_rng, timeout, ran, check)
        except BaseException:
            if check is not None:  # the failure was recorded in the state: follow it in the log
                try:
                    check.run("record", dep.deployment_id, dep.generation)
                except Exception:  # broad-except: the original error is re-raised below; a failed record must not mask it
                    pass
            raise
        s = dep.status_dict()
    click.echo(f"deployment {s['state_file']}: {s['status']}, {s['steps_done']} steps committed")
    if note:
        click.echo(note)
    if s["seeded"]:
        click.echo(f"note: {NOT_FOR_DEPLOYMENT}")
    write_json(out, {**s, "steps_run": ran})


def _run_steps(dep, steps, mechanism_cmd, bernoulli, mech_rng, timeout, ran, check):
    """Run up to ``steps`` steps (appending to ``ran``, recording every committed generation with
    the generation check); the horizon note, or None."""
    for _ in range(steps):
        if dep.status != "running" and ran:
            break
        if ran and dep.steps_done >= dep.config.stream.horizon:
            return (f"note: the horizon of {dep.config.stream.horizon} steps was reached after "
                    f"{len(ran)} of the {steps} steps asked for")
        t = dep.next_step
        reserve = None
        if check is not None:  # write-ahead: the log refuses the pre-step state before it is superseded
            generation = dep.generation

            def reserve():
                check.reserve(dep.deployment_id, generation)
        if mechanism_cmd is not None:
            mech = CommandMechanism(mechanism_cmd, step=t, time_limit=timeout)
        else:
            mech = BernoulliMechanism(bernoulli, mech_rng)
        try:
            halted = dep.step(mech, time_limit=timeout, before_write_ahead=reserve)
        except KeyboardInterrupt:
            # after the write-ahead record the step itself records the failure (interrupted); before
            # it the mechanism is killed unread and the deployment is unchanged: say which happened
            if dep.status == "failed":
                click.echo(f"interrupted during step {t}: the deployment is now failed (interrupted)",
                           err=True)
            else:
                click.echo(f"interrupted before step {t} was recorded: the deployment is unchanged "
                           f"({dep.status})", err=True)
            raise click.exceptions.Exit(130) from None
        if check is not None:
            check.run("record", dep.deployment_id, dep.generation)
        ran.append({"t": t, "outcome": "halt" if halted else "continue"})
        click.echo(f"step {t}: {'HALT' if halted else 'continue'}")
        if halted:
            break
    return None
