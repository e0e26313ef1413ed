"""Certification of a GTM configuration (``gtm certify``).

One job per module: :mod:`.model` (claims, witnesses, refusals, the certificate document),
:mod:`.derive` (the deterministic claims, re-derived by ``--verify``), :mod:`.refusals` (fixes),
:mod:`.witnesses` (external witnesses as functions), :mod:`.provenance`, :mod:`.progress`,
:mod:`.run` (the orchestrator :func:`certify`), :mod:`.verify` and :mod:`.report` (Markdown / HTML).
"""

from .model import (
    CATEGORIES,
    CERT_FORMAT,
    EXTERNAL_CLAIMS,
    FAILING,
    Certificate,
    Claim,
    Refusal,
    Witness,
    WitnessContext,
    body_digest,
    canonical,
)
from .run import budgets_for, certify
from .verify import Verification, load_document, verify_document

__all__ = [
    "CATEGORIES", "CERT_FORMAT", "EXTERNAL_CLAIMS", "FAILING", "Certificate", "Claim", "Refusal", "Witness",
    "WitnessContext", "body_digest", "canonical", "budgets_for", "certify", "Verification", "load_document",
    "verify_document",
]
