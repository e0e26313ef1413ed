"""``gtm certify --verify``: what a verification establishes, in order.

1. **Shape**: the document has exactly the keys of this format (a ``signature`` is optional), the body
   exactly its keys, the claims are objects with unique ids, and the set of claim ids is exactly
   the set this version produces for the embedded configuration (none missing, none extra).
2. **Signature** (with ``public_key``): an Ed25519 signature by *that* key over the canonical body
   (:mod:`.signing`). Without a signature, or without a key to check it against, the result is at
   best ``unsigned``: anyone can recompute the SHA-256 of an edited body, so the digest only
   detects accidents, not forgery.
3. **Re-derivation**: every planner number, every deterministic claim, the refusals and the verdict
   are re-derived from the embedded configuration and compared - also for a configuration that
   cannot be planned (its one claim, its refusal and its verdict). The work is bounded by the
   certificate's size before anything is re-derived: one listed row per step of the horizon.
4. **Binding and consistency**: every external witness carries the configuration's digest, and its
   status follows from its own numbers.
5. **Re-run** (``rerun=True``): the statistical audit and the exact search are run again with their
   recorded seeds and budgets (sample and attempt counts) and must reproduce their claims byte for
   byte apart from timings; the lemma checks (never from the cache, :func:`proofs.cache.fresh_runs`),
   plan identities and exact thresholds are re-run too.

Steps 3-5 run whatever the key situation (no key, no signature, a bad signature). Statuses, the
first that applies wins (:data:`STATUS_ORDER`): ``tampered`` (a signature that does not verify, or a
check of 1, 3, 4, 5 fails), ``mismatched`` (made by another gtm version, schema or platform: numbers
cannot be compared), ``unsigned`` (everything checks but integrity is not established), ``valid``
(signed by the given key and everything checks).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

from flint import arb

from gtm_core import GTMConfig, __version__, make_plan
from gtm_core.exact.arb import working_precision
from gtm_core.errors import CertificateUnreadable, GTMError, UnsupportedConfiguration
from gtm_core.files import jsonable
from gtm_core.inputs import parse_json, read_text_file
from gtm_core.validation import is_real

from proofs import cache as lemma_cache

from .derive import derive
from .model import (BODY_KEYS, CERT_FORMAT, CERT_SCHEMA, EXTERNAL, EXTERNAL_CLAIMS, SIGNED_DOCUMENT_KEYS,
                    body_digest, canonical, verdict_of)
from .model import WitnessContext
from .progress import Progress
from .provenance import library_versions
from .run import certify, external_claims
from .signing import signature_problem
from .witnesses import DEFAULT_WITNESSES

MAX_CERTIFICATE_BYTES = 256 * 1024 * 1024
# claim values that measure time, not results: ignored when a re-run is compared
TIMING_FIELDS = frozenset({"seconds", "cached"})


@dataclass
class Verification:
    status: str  # "valid" | "unsigned" | "tampered" | "mismatched"
    problems: list[str]

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def load_document(path) -> dict:
    """Read a certificate file (bounded; FIFOs and devices refused) and check it is one."""
    text = read_text_file(path, what="certificate", max_bytes=MAX_CERTIFICATE_BYTES, error=CertificateUnreadable)
    doc = parse_json(text, what=f"certificate {str(path)!r}", error=CertificateUnreadable)
    if not isinstance(doc, dict) or doc.get("format") != CERT_FORMAT or not isinstance(doc.get("body"), dict) \
            or not isinstance(doc.get("sha256"), str):
        raise CertificateUnreadable(f"{str(path)!r} is not a {CERT_FORMAT} document")
    for key in ("config", "config_sha256", "claims", "steps", "globals", "refusals", "verdict", "provenance"):
        if key not in doc["body"]:
            raise CertificateUnreadable(f"certificate body lacks {key!r}")
    for key, typ in (("claims", list), ("steps", list), ("refusals", list), ("globals", dict), ("config", dict),
                     ("provenance", dict)):
        if not isinstance(doc["body"][key], typ):
            raise CertificateUnreadable(f"certificate body field {key!r} is not a JSON {typ.__name__}")
    return doc


def shape_problems(doc: dict) -> list[str]:
    """Exact keys of the document and body; claims are objects with unique string ids."""
    problems = []
    extra = set(doc) - SIGNED_DOCUMENT_KEYS
    if extra:
        problems.append(f"document has fields this format does not have: {sorted(extra)}")
    body = doc["body"]
    if set(body) != BODY_KEYS:
        problems.append(f"body fields differ from the format: extra {sorted(set(body) - BODY_KEYS)}, "
                        f"missing {sorted(BODY_KEYS - set(body))}")
    for key, typ in (("steps", list), ("refusals", list), ("globals", dict), ("config", dict)):
        if key in body and not isinstance(body[key], typ):
            problems.append(f"body field {key!r} is not a JSON {typ.__name__}")
    claims = body.get("claims")
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        problems.append("claims is not a list of objects")
        return problems
    ids = [c.get("id") for c in claims]
    if not all(isinstance(i, str) for i in ids):
        problems.append("a claim has no string id")
    dupes = sorted({i for i in ids if isinstance(i, str) and ids.count(i) > 1})
    if dupes:
        problems.append(f"duplicate claims: {dupes}")
    if not isinstance(body.get("provenance"), dict):
        problems.append("provenance is not an object")
    return problems


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


def verify_document(doc: dict, progress: bool = False, *, public_key=None, rerun: bool = False,
                    witnesses=None, executor=None) -> Verification:
    """Verify a certificate document (see the module docstring for what each step establishes).

    ``public_key``: the Ed25519 public key the certificate must be signed by (None: signature not
    checked, the best status is ``unsigned``). ``rerun``: re-run the external witnesses with their
    recorded seeds and budgets (``witnesses``: the mapping to re-run, default the certificate's own;
    ``executor``: where the re-run's audit and search starts run, :mod:`audits.execution`).

    Every check of the contents runs whatever the key situation; the statuses combine by
    :data:`STATUS_ORDER` (the first that applies wins).
    """
    problems = shape_problems(doc)
    if problems:
        return Verification("tampered", problems)
    body = doc["body"]
    if body_digest(body) != doc["sha256"]:
        return Verification("tampered", ["sha256 digest of the body does not match: the certificate was edited"])
    integrity: list[str] = []  # why the origin is not established (empty: signed by the given key)
    if public_key is None:
        integrity = ["no --public-key given" if "signature" in doc else "the certificate carries no signature"]
    elif "signature" not in doc:
        integrity = ["the certificate carries no signature: integrity not established"]
    else:
        why = signature_problem(canonical(body).encode("utf-8"), doc["signature"], public_key)
        if why is not None:
            problems.append(f"signature: {why}")
    status, content = content_verdict(body, progress, rerun=rerun and not problems, witnesses=witnesses,
                                      executor=executor)
    if problems:  # a signature that does not verify: tampered, whatever the contents say
        return Verification("tampered", problems + content)
    if status != "consistent":
        return Verification(status, content)
    if integrity:
        return Verification("unsigned", integrity)
    return Verification("valid", [])


#: How the outcomes of the checks combine into one status (the first that applies wins):
#: a signature that does not verify, or contents that do not re-derive, is ``tampered``; contents that
#: cannot be compared (another version, schema or platform) are ``mismatched``; consistent contents
#: without a signature verified by the given key are ``unsigned``; else ``valid``. So an edited
#: certificate is ``tampered`` with a key, without one, signed or not.
STATUS_ORDER = ("tampered", "mismatched", "unsigned", "valid")

#: A certificate of an unplannable configuration lists no steps; the verifier plans at most this many
#: steps to find the one that fails (certify fails at the first step that cannot be planned).
MAX_UNLISTED_STEPS = 1000


def _admission(body: dict) -> tuple[GTMConfig | None, tuple[str, list[str]] | None]:
    """Step 3's admission of a body before anything is re-derived: its embedded configuration, or
    ``(None, (verdict, problems))`` when the schema, configuration, version, horizon or the listing of
    its steps already decide it."""
    prov = body["provenance"]
    if prov.get("certificate_schema") == 2:
        return None, ("mismatched", [
            "certificate schema 2 was issued when every deployment refused steps over their evaluation budget, "
            "which is (epsilon, delta)-DP, not the pure epsilon-DP it certified: re-certify with this version "
            "(docs/deployment.md, 'The evaluation budget and the privacy claim')"])
    if prov.get("certificate_schema") != CERT_SCHEMA:
        return None, ("mismatched", [
            f"certificate schema {prov.get('certificate_schema', 1)!r}, this gtm verifies schema "
            f"{CERT_SCHEMA} (witnesses bound to the configuration and re-runnable): re-certify with this version"])
    try:
        config = GTMConfig.from_dict(body["config"])
    except GTMError as exc:
        return None, ("tampered", [f"embedded configuration is invalid: {exc}"])
    if config.digest() != body["config_sha256"]:
        return None, ("tampered", ["config_sha256 does not match the embedded configuration"])
    version = prov.get("gtm_version")
    if version != __version__:
        return None, ("mismatched", [f"certificate made by gtm {version}, this is gtm {__version__}: "
                                     f"numbers cannot be re-derived across versions"])
    T = config.stream.horizon
    if body["horizon"] != T or isinstance(body["horizon"], bool):
        return None, ("tampered", [f"horizon {body['horizon']!r} is not the embedded configuration's horizon {T}"])
    if body["steps"] and len(body["steps"]) != T:
        return None, ("tampered", [f"the certificate lists {len(body['steps'])} steps for a horizon of {T}: "
                                   f"every step is listed (nothing was re-derived)"])
    if not body["steps"] and not fails_within(config, MAX_UNLISTED_STEPS):
        return None, ("tampered", [f"the certificate lists no steps (an unplannable configuration), yet steps "
                                   f"1..{min(T, MAX_UNLISTED_STEPS)} of the embedded configuration plan"
                                   + (" (the verifier plans no further)" if T > MAX_UNLISTED_STEPS else "")])
    return config, None


def _rederive(config: GTMConfig, body: dict, progress: bool):
    """Step 4's reference: ``(derivation or None, steps, globals, claims, refusals, bound claim ids)``
    - the derivation of ``config``, or for an unplannable one the certificate certify writes, re-made."""
    try:
        d = derive(config, Progress(progress))
    except UnsupportedConfiguration:
        d = None
    if d is None:  # the certificate certify writes for an unplannable configuration, re-made
        ref = certify(config, quick=body["mode"] == "quick", seed=0, progress=False, witnesses={})
        return d, ref.steps, ref.globals, ref.claims, ref.refusals, frozenset()
    bound = (EXTERNAL_CLAIMS if not d.refusals else frozenset()) | {"provenance"}
    return d, d.steps, d.globals, d.claims, d.refusals, bound


def _claim_diff(stored_claims: dict, claims, bound: frozenset, config_sha256, problems: list[str]) -> None:
    """Append the differences between the stored claims and the re-derived ones (plus the bound claims,
    which must be present and carry this configuration's digest) to ``problems``."""
    for c in claims:
        s = stored_claims.get(c.id)
        if s is None:
            problems.append(f"claim {c.id} is missing")
            continue
        _diff(f"claims[{c.id}]", s, jsonable(c.to_dict()), problems)
    derived_ids = {c.id for c in claims} | bound
    for cid in stored_claims:
        if cid not in derived_ids:
            problems.append(f"claim {cid} is not one this version produces")
    for cid in sorted(bound):
        if cid not in stored_claims:
            problems.append(f"claim {cid} is missing")
        elif not isinstance(values := stored_claims[cid].get("values"), dict) \
                or values.get("config_sha256") != config_sha256:
            problems.append(f"claim {cid} is not bound to this configuration (config_sha256 differs or is absent)")


def _problem_verdict(prov: dict, problems: list[str], numeric: bool) -> tuple[str, list[str]]:
    """The verdict of a body with ``problems`` (not empty): tampered, or mismatched when only
    re-derived numbers differ (``numeric``) and the certificate was made elsewhere."""
    # Re-derived float64 numbers can differ in the last bits across platforms or library builds
    # (libm, numpy, scipy). The digest matched, so if only re-derived numbers differ and the
    # certificate was made elsewhere, say so instead of calling it tampered.
    elsewhere = prov.get("libraries") != library_versions() or prov.get("platform") != platform.platform()
    only_numeric = numeric and len(problems) == len([p for p in problems if "re-derived" in p])
    if elsewhere and only_numeric:
        return "mismatched", ["made on a different platform or with different library versions; "
                              "re-derived numbers differ:"] + problems
    return "tampered", problems


def content_verdict(body: dict, progress: bool = False, *, rerun: bool = False, witnesses=None,
                    executor=None) -> tuple[str, list[str]]:
    """Steps 3-5 of the module docstring on a body whose shape and digest are checked: ``("consistent",
    [])``, ``("tampered", problems)`` or ``("mismatched", problems)``. The work is bounded by the
    certificate's size: a body must list one row per step of its horizon before anything is
    re-derived, and one that lists none (unplannable) gets at most :data:`MAX_UNLISTED_STEPS` planned."""
    config, decided = _admission(body)
    if decided is not None:
        return decided
    problems: list[str] = []
    d, steps, glob, claims, refusals, bound = _rederive(config, body, progress)
    _diff("steps", body["steps"], steps, problems)
    _diff("globals", body["globals"], glob, problems)
    stored_claims = {c.get("id"): c for c in body["claims"] if isinstance(c, dict)}
    _claim_diff(stored_claims, claims, bound, body["config_sha256"], problems)
    _diff("refusals", body["refusals"], jsonable([r.to_dict() for r in refusals]), problems)
    numeric = bool(problems)
    problems += bound_claim_problems(body, {cid: stored_claims[cid] for cid in bound if cid in stored_claims})
    problems += consistency_problems(body)
    verdict = _verdict_of(body)
    if verdict != body["verdict"]:
        problems.append(f"verdict {body['verdict']!r} does not follow from the claims ({verdict!r})")
    if not problems and rerun and d is not None:
        problems += rerun_problems(body, config, d, progress, witnesses, executor)
    if not problems:
        return "consistent", []
    return _problem_verdict(body["provenance"], problems, numeric)


#: The statuses a claim can have (audits.certify.model's docstring).
STATUSES = frozenset({"pass", "fail", "witness-unavailable", "not-applicable", "info", "recorded"})
CLAIM_KEYS = frozenset({"id", "category", "statement", "values", "witness", "status"})
_EXTERNAL_BY_ID = {c.id: c for c in EXTERNAL}


def bound_claim_problems(body: dict, stored: dict) -> list[str]:
    """What re-derivation cannot check about the externally witnessed claims and the provenance
    record (``stored``: {id: stored claim}), checked against what this version writes: their fields,
    category, witness kind and a known status (the verdict follows from the statuses), the body's
    format and mode (the provenance's own), and the provenance record's version and seed."""
    problems = []
    prov = body["provenance"]
    if body["format"] != CERT_FORMAT:
        problems.append(f"body format {body['format']!r} is not {CERT_FORMAT!r}")
    if body["mode"] not in ("quick", "full") or body["mode"] != prov.get("mode"):
        problems.append(f"mode {body['mode']!r} is not the provenance's mode {prov.get('mode')!r}")
    for cid, c in sorted(stored.items()):
        ext = _EXTERNAL_BY_ID.get(cid)
        category, kind = (ext.category, ext.kind) if ext is not None else ("provenance", "record")
        witness = c.get("witness")
        if set(c) != CLAIM_KEYS:
            problems.append(f"claim {cid} has fields {sorted(c)}, this format has {sorted(CLAIM_KEYS)}")
        if c.get("category") != category or not isinstance(witness, dict) or witness.get("kind") != kind:
            problems.append(f"claim {cid}: category or witness kind is not this version's ({category}, {kind})")
        if not isinstance(c.get("statement"), str) or not c["statement"]:
            problems.append(f"claim {cid}: its statement is not a text")
        status = c.get("status")
        if not isinstance(status, str) or status not in STATUSES or (ext is None) != (status == "recorded"):
            problems.append(f"claim {cid}: status {status!r} is not one this version writes for it")
        if ext is None and isinstance(c.get("values"), dict) and (
                c["values"].get("gtm_version") != prov.get("gtm_version") or c["values"].get("seed") != prov.get("seed")):
            problems.append("claim provenance: its version or seed is not the provenance record's")
    return problems


def fails_within(config: GTMConfig, limit: int) -> bool:
    """True if planning the configuration fails at its plan or at one of its steps 1..min(T, limit)
    (the failures :func:`.derive.plan_steps` reports as an unplannable configuration)."""
    try:
        plan = make_plan(config)
        for t in range(1, min(config.stream.horizon, limit) + 1):
            plan.step(t)
    except (GTMError, ArithmeticError, TypeError, ValueError):
        return True
    return False


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
        st, v, w = c.get("status"), c.get("values") or {}, c.get("witness")
        if not isinstance(w, dict) or not w.get("kind"):
            problems.append(f"claim {c.get('id')} names no witness")
        if not isinstance(v, dict):
            problems.append(f"claim {c.get('id')} has values that are not an object")
            continue
        if st != "pass":
            continue
        try:
            if c["id"] == "privacy.audit" and v.get("method") == "hockey-stick":
                if not float(v["delta_lower_bound"]) <= float(v["delta_claimed"]):
                    problems.append("privacy.audit passes although its lower bound on delta exceeds the claim")
            elif c["id"] == "privacy.audit" and not (float(v["epsilon_lower_bound"]) <= float(v["epsilon_claimed"])):
                problems.append("privacy.audit passes although its lower bound exceeds the claim")
            if c["id"] == "privacy.exact-worst-case" and v.get("objective") == "delta":
                if not exact_delta_within(v["delta_found_upper"], v["delta_claimed"]):
                    problems.append("privacy.exact-worst-case passes although the delta found exceeds the claim")
            elif c["id"] == "privacy.exact-worst-case" and \
                    float(v["loss_found"]) - float(v.get("loss_error", 0.0)) > float(v["loss_claimed"]):
                problems.append("privacy.exact-worst-case passes although the loss found exceeds the claim")
            if c["id"] == "privacy.lemma-checks" and not all(
                    x.get("status") in ("proved", "certified") for x in v.get("lemmas", {}).values()):
                problems.append("privacy.lemma-checks passes with a lemma that is not proved")
        except (KeyError, TypeError, ValueError, AttributeError):
            problems.append(f"claim {c.get('id')} has malformed values")
    return problems + audit_claim_problems(body)


def audit_claim_problems(body: dict) -> list[str]:
    """A passing privacy.audit must have tested the claim the certificate makes: (epsilon, delta) by the
    hockey-stick test at privacy.approximate's delta when the certificate has that claim (a capped
    configuration), pure epsilon by the loss test otherwise."""
    claims = {c.get("id"): c for c in body.get("claims", []) if isinstance(c, dict)}
    audit = claims.get("privacy.audit")
    if not audit or audit.get("status") != "pass":
        return []
    v = audit.get("values") or {}
    approx = claims.get("privacy.approximate")
    if approx is None:
        return ([] if v.get("method", "loss") == "loss" else
                ["privacy.audit tested an (epsilon, delta) claim although the certificate claims pure epsilon"])
    try:
        same = v.get("method") == "hockey-stick" and v.get("measure") == "approximate" and \
            float(v["delta_claimed"]) == float(approx["values"]["delta_upper"]) and \
            float(v["epsilon_claimed"]) == float(approx["values"]["epsilon"])
    except (KeyError, TypeError, ValueError):
        return ["claim privacy.audit has malformed values"]
    return [] if same else ["privacy.audit did not test the certificate's (epsilon, delta) claim "
                            "(privacy.approximate)"]


def exact_delta_within(found_upper, claimed) -> bool:
    """The delta witness's pass condition, re-checked: the upper bound of the delta found <= the delta
    claimed, both exact float64 values compared as arb balls (malformed values raise ValueError)."""
    if not (is_real(found_upper) and is_real(claimed)):
        raise ValueError("delta values must be numbers")
    with working_precision(64):
        return bool(arb(float(found_upper)) <= arb(float(claimed)))


def without_timings(value):
    """``value`` with every timing field (:data:`TIMING_FIELDS`) removed, recursively."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def rerun_problems(body: dict, config: GTMConfig, d, progress: bool, witnesses=None, executor=None) -> list[str]:
    """Re-run every external witness with the recorded seed and budgets; compare apart from timings."""
    prov = body["provenance"]
    try:
        seed, budgets, quick = int(prov["seed"]), dict(prov["budgets_seconds"]), prov["mode"] == "quick"
    except (KeyError, TypeError, ValueError):
        return ["provenance lacks the seed or budgets needed to re-run the witnesses"]
    stored = {c["id"]: c for c in body["claims"]}
    search = stored.get("privacy.exact-worst-case", {}).get("values")
    if isinstance(search, dict) and search.get("complete") is True and isinstance(search.get("seconds"), (int, float)):
        # a complete search depends only on its seed and attempt count; its CPU-time cap is a safety
        # net, so a re-run on a busier machine gets room for the same attempts instead of being cut
        budgets["search_time_cap"] = max(float(budgets.get("search_time_cap", 0.0)),
                                         10.0 * float(search["seconds"]) + 10.0)
    ctx = WitnessContext(plan=d.plan, rows=d.steps, quick=quick, budgets=budgets, seed=seed,
                         progress=Progress(progress), executor=executor)
    problems = []
    with lemma_cache.fresh_runs():  # the lemma checks really run again: a cached entry reproduces nothing
        again_claims = external_claims(ctx, DEFAULT_WITNESSES if witnesses is None else witnesses)
    for claim in again_claims:
        again = without_timings(jsonable(claim.to_dict()))
        if again != without_timings(stored[claim.id]):
            problems.append(f"claim {claim.id} does not reproduce when re-run with its recorded seed and budget")
    return problems
