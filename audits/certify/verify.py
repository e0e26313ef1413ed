"""``gtm certify --verify``: the digest, then every planner number and deterministic claim re-derived
from the embedded configuration, so an edited number is detected even when the digest was recomputed."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass

from gtm_core import GTMConfig, __version__
from gtm_core.errors import CertificateUnreadable, GTMError, UnsupportedConfiguration
from gtm_core.files import jsonable

from .derive import derive
from .model import CERT_FORMAT, EXTERNAL_CLAIMS, body_digest, verdict_of
from .progress import Progress
from .provenance import library_versions


@dataclass
class Verification:
    status: str  # "valid" | "tampered" | "mismatched"
    problems: list[str]

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def load_document(path) -> dict:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise CertificateUnreadable(f"cannot read certificate {str(path)!r}: {exc.strerror}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CertificateUnreadable(f"certificate {str(path)!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != CERT_FORMAT or not isinstance(doc.get("body"), dict) \
            or not isinstance(doc.get("sha256"), str):
        raise CertificateUnreadable(f"{str(path)!r} is not a {CERT_FORMAT} document")
    for key in ("config", "config_sha256", "claims", "steps", "globals", "refusals", "verdict", "provenance"):
        if key not in doc["body"]:
            raise CertificateUnreadable(f"certificate body lacks {key!r}")
    return doc


def _diff(path: str, stored, derived, problems: list[str], limit: int = 20) -> None:
    if len(problems) >= limit:
        return
    if isinstance(stored, dict) and isinstance(derived, dict):
        for k in sorted(set(stored) | set(derived)):
            if k not in stored or k not in derived:
                problems.append(f"{path}.{k}: present on one side only")
            else:
                _diff(f"{path}.{k}", stored[k], derived[k], problems, limit)
    elif isinstance(stored, list) and isinstance(derived, list):
        if len(stored) != len(derived):
            problems.append(f"{path}: length {len(stored)} != re-derived {len(derived)}")
            return
        for i, (a, b) in enumerate(zip(stored, derived)):
            _diff(f"{path}[{i}]", a, b, problems, limit)
    elif stored != derived or type(stored) is not type(derived):
        problems.append(f"{path}: certificate has {stored!r}, re-derived {derived!r}")


def verify_document(doc: dict, progress: bool = False) -> Verification:
    """Digest check, then re-derive every planner number and deterministic claim from the embedded config."""
    body = doc["body"]
    problems: list[str] = []
    if body_digest(body) != doc["sha256"]:
        problems.append("sha256 digest of the body does not match: the certificate was edited")
        return Verification("tampered", problems)
    try:
        config = GTMConfig.from_dict(body["config"])
    except GTMError as exc:
        return Verification("tampered", [f"embedded configuration is invalid: {exc}"])
    if config.digest() != body["config_sha256"]:
        return Verification("tampered", ["config_sha256 does not match the embedded configuration"])
    version = body["provenance"].get("gtm_version") if isinstance(body["provenance"], dict) else None
    if version != __version__:
        return Verification("mismatched", [f"certificate made by gtm {version}, this is gtm {__version__}: "
                                           f"numbers cannot be re-derived across versions"])
    try:
        d = derive(config, Progress(progress))
    except UnsupportedConfiguration:
        if body["steps"]:
            return Verification("tampered", ["the embedded configuration cannot be planned, yet steps are listed"])
        return Verification("valid", [])
    _diff("steps", body["steps"], d.steps, problems)
    _diff("globals", body["globals"], d.globals, problems)
    stored_claims = {c.get("id"): c for c in body["claims"] if isinstance(c, dict)}
    for c in d.claims:
        s = stored_claims.get(c.id)
        if s is None:
            problems.append(f"claim {c.id} is missing")
            continue
        _diff(f"claims[{c.id}]", s, jsonable(c.to_dict()), problems)
    derived_ids = {c.id for c in d.claims} | EXTERNAL_CLAIMS | {"provenance"}
    for cid in stored_claims:
        if cid not in derived_ids:
            problems.append(f"claim {cid} is not one this version produces")
    _diff("refusals", body["refusals"], jsonable([r.to_dict() for r in d.refusals]), problems)
    numeric = bool(problems)
    problems += consistency_problems(body)
    verdict = _verdict_of(body)
    if verdict != body["verdict"]:
        problems.append(f"verdict {body['verdict']!r} does not follow from the claims ({verdict!r})")
    if not problems:
        return Verification("valid", [])
    # Re-derived float64 numbers can differ in the last bits across platforms or library builds
    # (libm, numpy, scipy). The digest matched, so if only re-derived numbers differ and the
    # certificate was made elsewhere, say so instead of calling it tampered.
    prov = body.get("provenance") or {}
    elsewhere = prov.get("libraries") != library_versions() or prov.get("platform") != platform.platform()
    only_numeric = numeric and len(problems) == len([p for p in problems if "re-derived" in p])
    if elsewhere and only_numeric:
        return Verification("mismatched", ["made on a different platform or with different library versions; "
                                           "re-derived numbers differ:"] + problems)
    return Verification("tampered", problems)


def _verdict_of(body: dict) -> str:
    return verdict_of([c.get("status") for c in body["claims"]], has_refusals=bool(body["refusals"]))


# digest-protected witnesses must be self-consistent
def consistency_problems(body: dict) -> list[str]:
    """Digest-protected witnesses cannot be re-run cheaply; their status must follow from their numbers."""
    problems = []
    for c in body.get("claims", []):
        if not isinstance(c, dict):
            problems.append("a claim is not an object")
            continue
        st, v = c.get("status"), c.get("values") or {}
        if not c.get("witness", {}).get("kind"):
            problems.append(f"claim {c.get('id')} names no witness")
        if st != "pass":
            continue
        try:
            if c["id"] == "privacy.audit" and not (float(v["epsilon_lower_bound"]) <= float(v["epsilon_claimed"])):
                problems.append("privacy.audit passes although its lower bound exceeds the claim")
            if c["id"] == "privacy.exact-worst-case" and \
                    float(v["loss_found"]) - float(v.get("loss_error", 0.0)) > float(v["loss_claimed"]):
                problems.append("privacy.exact-worst-case passes although the loss found exceeds the claim")
            if c["id"] == "privacy.lemma-checks" and not all(
                    x.get("status") in ("proved", "certified") for x in v.get("lemmas", {}).values()):
                problems.append("privacy.lemma-checks passes with a lemma that is not proved")
        except (KeyError, TypeError, ValueError):
            problems.append(f"claim {c.get('id')} has malformed values")
    return problems
