"""The certificate's data model: claims, their witnesses, refusals, and the certificate document.

A :class:`Certificate` is a list of :class:`Claim` values (privacy, accuracy, cost, purification,
provenance). Every claim names its witness (``Witness.kind``):

* ``rational-identity``   - an inequality checked in exact rationals on the deployed float64 numbers;
* ``interval-arithmetic`` - checked with python-flint ``arb`` balls (see :mod:`proofs.plan_checks`);
* ``solver-proof``        - a lemma check of :mod:`proofs` (Z3 + cvc5 / interval certificates);
* ``exact-engine``        - the exact transcript-distribution engine (:mod:`gtm_core.exact`);
* ``audit``               - the statistical auditor on the reference implementation;
* ``planner-bound``/``closed-form`` - a planner number or a closed-form expectation (reported, not a proof);
* ``record``              - provenance.

Statuses: ``pass``, ``fail``, ``witness-unavailable`` (no witness was supplied for the claim - the
certificate then does NOT pass), ``not-applicable``, ``info`` (a reported number, no inequality)
and ``recorded``. The JSON form (format ``gtm-certificate/1``) carries the SHA-256 digest of its
canonical body.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from gtm_core import GTMConfig
from gtm_core.files import jsonable

CERT_FORMAT = "gtm-certificate/1"
# 3: the evaluation-budget policy is part of what is certified (pure epsilon only without a cap);
# 2: external witnesses bound to the configuration digest and budgeted by counts (re-runnable)
CERT_SCHEMA = 3
BODY_KEYS = frozenset({"format", "verdict", "mode", "config", "config_sha256", "horizon", "globals", "claims",
                       "refusals", "steps", "provenance"})
DOCUMENT_KEYS = frozenset({"format", "sha256", "body"})
SIGNED_DOCUMENT_KEYS = DOCUMENT_KEYS | {"signature"}
FAILING = frozenset({"fail", "witness-unavailable"})
CATEGORIES = ("privacy", "accuracy", "cost", "purification", "provenance")



@dataclass(frozen=True)
class ExternalClaim:
    """A claim backed by an external witness (a function handed to the orchestrator); its numbers
    are digest-protected, not re-derived by ``--verify``."""

    id: str
    category: str
    kind: str  # the witness kind
    stage: str  # progress stage name (a key of the provenance timings)
    message: str  # progress message, formatted with the time budgets


# in the order they appear in a certificate
EXTERNAL: tuple[ExternalClaim, ...] = (
    ExternalClaim("privacy.lemma-checks", "privacy", "solver-proof", "lemmas",
                  "lemma checks backing Lemma 17 / Theorem 21 / Theorem 23 (proofs/)"),
    ExternalClaim("privacy.plan-identities", "privacy", "solver-proof", "identities",
                  "instantiating the proved parameter identities with this plan"),
    ExternalClaim("privacy.exact-worst-case", "privacy", "exact-engine", "exact_search",
                  "exact engine: worst-case search ({exact_search:g} s)"),
    ExternalClaim("accuracy.exact-threshold", "accuracy", "exact-engine", "exact_threshold",
                  "exact engine: exact rejection thresholds ({exact_threshold:g} s)"),
    ExternalClaim("privacy.audit", "privacy", "audit", "audit",
                  "auditing the reference GTM under this configuration ({audit:g} s)"),
)
EXTERNAL_CLAIMS = frozenset(c.id for c in EXTERNAL)


@dataclass(frozen=True)
class WitnessContext:
    """What an external witness function is given: the plan, the derived step rows, the mode, the time
    budgets (seconds per witness), the seed, the progress reporter and where the heavy work runs
    (``executor``: an :mod:`audits.execution` executor, None = in this process; a witness's result
    must not depend on it)."""

    plan: Any
    rows: list
    quick: bool
    budgets: dict
    seed: int
    progress: Any
    executor: Any = None


@dataclass(frozen=True)
class Witness:
    kind: str
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    category: str
    statement: str
    values: dict
    witness: Witness
    status: str

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "category": self.category,
            "statement": self.statement,
            "values": self.values,
            "witness": {"kind": self.witness.kind, "details": self.witness.details},
            "status": self.status,
        }


@dataclass(frozen=True)
class Refusal:
    """Why a configuration cannot be certified, and the smallest change that fixes it."""

    claim_id: str
    reason: str
    fix: str
    fix_values: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"claim_id": self.claim_id, "reason": self.reason, "fix": self.fix, "fix_values": self.fix_values}


def privacy_summary(claims: list[dict]) -> str:
    """One line: the privacy the certificate states, from its claims (dicts of :meth:`Claim.to_dict`) -
    ``(eps, delta)-DP`` when it has privacy.approximate (``evaluation_budget = "refuse"``: never pure),
    pure epsilon only from a privacy.pure-epsilon that applies, the ex-post bounds for theorem23."""
    by_id = {c.get("id"): c for c in claims}
    approx, pure = by_id.get("privacy.approximate"), by_id.get("privacy.pure-epsilon")
    expost = by_id.get("privacy.expost-continuation")
    if approx is not None:
        v = approx["values"]
        return (f"privacy: ({v['epsilon']:g}, {v['delta_upper']:.3g})-differentially private (approximate: "
                f"evaluation_budget = \"refuse\"), not pure epsilon-DP [{approx['status']}]")
    if pure is not None:
        return (f"privacy: {pure['values']['epsilon']:g}-differentially private (pure: evaluation_budget = "
                f"\"none\") [{pure['status']}]")
    if expost is not None:
        return (f"privacy: ex-post (Theorem 23), continuation loss <= eps_C = {expost['values']['epsilon_c']:g}, "
                f"halting losses per privacy.expost-halting [{expost['status']}]")
    return "privacy: no privacy claim"


@dataclass(frozen=True)
class Certificate:
    """A certificate as :func:`audits.certify.run.certify` builds it; nothing rewrites it afterwards."""

    config: GTMConfig
    claims: list[Claim]
    steps: list[dict]
    globals: dict
    refusals: list[Refusal]
    provenance: dict
    mode: str = "full"

    @property
    def horizon(self) -> int:
        return self.config.stream.horizon

    @property
    def verdict(self) -> str:
        """``certified``, ``refused`` (a claim failed) or ``incomplete`` (a witness is unavailable)."""
        return verdict_of([c.status for c in self.claims], has_refusals=bool(self.refusals))

    @property
    def passed(self) -> bool:
        return self.verdict == "certified"

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(claim_id)

    def body(self) -> dict:
        return jsonable({
            "format": CERT_FORMAT,
            "verdict": self.verdict,
            "mode": self.mode,
            "config": self.config.to_dict(),
            "config_sha256": self.config.digest(),
            "horizon": self.horizon,
            "globals": self.globals,
            "claims": [c.to_dict() for c in self.claims],
            "refusals": [r.to_dict() for r in self.refusals],
            "steps": self.steps,
            "provenance": self.provenance,
        })

    def document(self, signer: Callable[[bytes], dict] | None = None) -> dict:
        """The JSON document: body, its SHA-256 and, with ``signer`` (canonical body bytes ->
        signature object, see :mod:`.signing`), a signature."""
        body = self.body()
        doc = {"format": CERT_FORMAT, "sha256": body_digest(body), "body": body}
        if signer is not None:
            doc["signature"] = signer(canonical(body).encode("utf-8"))
        return doc

    def to_json(self, signer: Callable[[bytes], dict] | None = None) -> str:
        return json.dumps(self.document(signer), indent=1, sort_keys=True, allow_nan=False) + "\n"


def verdict_of(statuses, *, has_refusals: bool) -> str:
    """The verdict the claims' statuses imply: ``refused`` when a claim fails (or a refusal is listed),
    ``incomplete`` when a witness is unavailable, else ``certified``."""
    statuses = list(statuses)
    if has_refusals or "fail" in statuses:
        return "refused"
    if "witness-unavailable" in statuses:
        return "incomplete"
    return "certified"


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def body_digest(body: dict) -> str:
    """SHA-256 of the canonical JSON of a certificate body."""
    return hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()

