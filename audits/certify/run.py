"""``gtm certify``: a certificate for a GTM configuration - every claim with the witness that backs it.

The deterministic claims come from :mod:`.derive` (re-derived by ``--verify``); failing ones are
refused with a computed fix (:mod:`.refusals`); the external claims come from the witness functions
handed to :func:`certify` (default :data:`.witnesses.DEFAULT_WITNESSES`); :mod:`.provenance` records
versions, seed and timings. The data model is :mod:`.model`.
"""

from __future__ import annotations

import secrets
import sys
from typing import Mapping

from gtm_core import GTMConfig, __version__
from gtm_core.errors import ConfigError, InvalidParameter, UnsupportedConfiguration
from gtm_core.validation import check_positive

from ..pair_search import ORACLE_ATTEMPTS_PER_SECOND, ORACLE_TIME_CAP_FACTOR
from .derive import derive, effective_config
from .model import EXTERNAL, EXTERNAL_CLAIMS, Certificate, Claim, Witness, WitnessContext
from .progress import Progress
from .provenance import provenance
from .refusals import fix_unplannable
from .witnesses import DEFAULT_WITNESSES, WitnessFunction


# Witness budgets are counts, not seconds, so that ``--verify --rerun`` reproduces the statistical and
# search witnesses byte for byte: a budget-second buys this many audit samples / search attempts.
AUDIT_SAMPLES_PER_SECOND = 1_000_000
SEARCH_ATTEMPTS_PER_SECOND = ORACLE_ATTEMPTS_PER_SECOND  # one rule for the audit's oracle and the certificate
SEARCH_TIME_CAP_FACTOR = ORACLE_TIME_CAP_FACTOR  # CPU-time safety cap of the search, in multiples of its budget
# ... and at least this many CPU seconds per attempt (an attempt at horizon 3 takes about 0.08 s)
SEARCH_CPU_SECONDS_PER_ATTEMPT_CAP = 0.25


def budgets_for(quick: bool, seconds: float | None) -> dict:
    """Budgets of the statistical and search witnesses: seconds (nominal), and the sample and attempt
    counts derived from them (what the witnesses really run on)."""
    if seconds is not None:
        total = check_positive("seconds", seconds, error=ConfigError)
    else:
        total = 30.0 if quick else 400.0
    # the exact search's budget is CPU time (wall time grows on a loaded machine): keep its share small
    budgets = {"audit": round(total * 0.55, 3), "exact_search": round(total * 0.2, 3),
               "exact_threshold": round(total * 0.25, 3)}
    budgets["audit_samples"] = max(40_000, int(budgets["audit"] * AUDIT_SAMPLES_PER_SECOND))
    budgets["search_attempts"] = max(20, int(budgets["exact_search"] * SEARCH_ATTEMPTS_PER_SECOND))
    # the cap is a safety net against a runaway search, never the budget: it also covers the attempt
    # floor (a search cut by it is not re-runnable byte for byte, so it must not bite on a busy machine)
    budgets["search_time_cap"] = round(max(budgets["exact_search"] * SEARCH_TIME_CAP_FACTOR,
                                           budgets["search_attempts"] * SEARCH_CPU_SECONDS_PER_ATTEMPT_CAP), 3)
    return budgets


def certify(config: GTMConfig, *, horizon: int | None = None, quick: bool = False, seconds: float | None = None,
            seed: int | None = None, progress: bool = True,
            witnesses: Mapping[str, WitnessFunction] | None = None, executor=None) -> Certificate:
    """Certify a configuration: every claim with its witness (see the module docstring).

    ``witnesses`` maps external claim ids to witness functions (default :data:`DEFAULT_WITNESSES`);
    a claim without one is ``witness-unavailable`` and the certificate is then not certified
    (``witnesses={}`` runs the deterministic part only, for tests of the engine).

    ``executor``: where the audit witness's sampling and the exact search's starts run
    (:mod:`audits.execution`, e.g. a Dask cluster; default in this process). The certificate does not
    depend on it: every witness is seeded and budgeted by counts."""
    witnesses = DEFAULT_WITNESSES if witnesses is None else dict(witnesses)
    unknown = sorted(set(witnesses) - EXTERNAL_CLAIMS)
    if unknown:
        raise InvalidParameter(f"witnesses for unknown claims: {', '.join(unknown)} "
                               f"(external claims: {', '.join(sorted(EXTERNAL_CLAIMS))})")
    if not isinstance(config, GTMConfig):
        raise ConfigError(f"config must be a GTMConfig, got {type(config).__name__}")
    prog = Progress(progress)
    mode = "quick" if quick else "full"
    budgets = budgets_for(quick, seconds)
    seeded = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    cfg = effective_config(config, horizon)
    T = cfg.stream.horizon
    prog.stage("derive", f"planning and checking {T} steps rigorously ({cfg.gtm.parameterization}, {mode})")
    try:
        d = derive(cfg, prog)
    except UnsupportedConfiguration as exc:
        prog.say(f"refused: {exc}")
        refusal = fix_unplannable(cfg, exc)
        claim = Claim("accuracy.plannable", "accuracy", "Every step up to the horizon can be planned in float64.",
                      {"error": str(exc)}, Witness("planner-bound", {}), "fail")
        timings = prog.finish()
        return Certificate(cfg, [claim], [], {}, [refusal], provenance(seed, seeded, timings, mode, budgets), mode)
    claims = list(d.claims)
    if not d.refusals:
        if executor is not None and executor.kind != "in-process":
            prog.say(f"running the audit and the search starts on {executor.kind} ({executor.workers} workers)")
        ctx = WitnessContext(plan=d.plan, rows=d.steps, quick=quick, budgets=budgets, seed=seed, progress=prog,
                             executor=executor)
        claims += external_claims(ctx, witnesses)
    else:
        prog.say("configuration refused: skipping the statistical and search witnesses")
    timings = prog.finish()
    prov = provenance(seed, seeded, timings, mode, budgets)
    claims.append(Claim(
        "provenance", "provenance",
        "Package and library versions, configuration hash, seed and timings of this certificate.",
        {"gtm_version": __version__, "config_sha256": cfg.digest(), "seed": seed, "seeded": seeded},
        Witness("record", {"libraries": prov["libraries"]}), "recorded",
    ))
    cert = Certificate(cfg, claims, d.steps, d.globals, d.refusals, prov, mode)
    prog.say(f"verdict: {cert.verdict}")
    return cert



def external_claims(ctx: WitnessContext, witnesses: Mapping[str, WitnessFunction]) -> list[Claim]:
    """Run the supplied witness of every external claim, in certificate order.

    A claim without a witness is ``witness-unavailable`` (the certificate is then incomplete). A witness
    that raises is a *failed* claim carrying the error (the certificate is then refused), announced on
    stderr - a crash of the exact engine or of the solvers is never a silent ``incomplete``."""
    out = []
    for spec in EXTERNAL:
        fn = witnesses.get(spec.id)
        if fn is None:
            out.append(bind_to_config(
                Claim(spec.id, spec.category, "No witness was supplied for this claim.", {},
                      Witness(spec.kind, {"unavailable": "no witness supplied (certify(witnesses=...))"}),
                      "witness-unavailable"), ctx.plan.config.digest()))
            continue
        ctx.progress.stage(spec.stage, spec.message.format(**ctx.budgets))
        try:
            claim = fn(ctx)
        except Exception as exc:  # broad-except: a failed claim with its message and a line on stderr
            error = f"{type(exc).__name__}: {exc}".strip()
            print(f"certify: witness of {spec.id} crashed: {error}", file=sys.stderr, flush=True)
            claim = Claim(spec.id, spec.category, f"The witness of {spec.id} crashed; the claim is not established.",
                          {"error": error}, Witness(spec.kind, {"error": error}), "fail")
        out.append(bind_to_config(claim, ctx.plan.config.digest()))
    return out


def bind_to_config(claim: Claim, config_sha256: str) -> Claim:
    """The claim with the configuration digest among its values: a witness pasted from another
    configuration's certificate no longer fits (``--verify`` checks every binding)."""
    return Claim(claim.id, claim.category, claim.statement, {**claim.values, "config_sha256": config_sha256},
                 claim.witness, claim.status)
