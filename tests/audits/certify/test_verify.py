"""Verification (audits.certify.verify): digest, re-derivation of every deterministic number, consistency
of the digest-protected witnesses, versions and platforms."""

import copy
import json

import pytest

from audits.certify import body_digest, load_document, verify_document
from gtm_core.errors import CertificateUnreadable


def test_document_round_trips_and_verifies(document, tmp_path):
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(document))
    doc = load_document(path)
    assert doc["sha256"] == body_digest(doc["body"])
    assert verify_document(doc).status == "unsigned"  # consistent, but nobody vouches for it


def _tamper(document, edit):
    doc = copy.deepcopy(document)
    edit(doc["body"])
    return doc


EDITS = {
    "step p_bar": lambda b: b["steps"][7].__setitem__("p_bar", b["steps"][7]["p_bar"] * 1.0000001),
    "step c": lambda b: b["steps"][0].__setitem__("c", b["steps"][0]["c"] - 1),
    "claim value": lambda b: next(c for c in b["claims"] if c["id"] == "privacy.pure-epsilon")["values"]
    .__setitem__("tau1", 2.9),
    "claim status": lambda b: next(c for c in b["claims"] if c["id"] == "cost.budget-exceed")
    .__setitem__("status", "fail"),
    "global mu1": lambda b: b["globals"].__setitem__("mu1", 10.0),
    "config": lambda b: b["config"]["gtm"].__setitem__("epsilon", 2.0),
    "verdict": lambda b: b.__setitem__("verdict", "certified" if b["verdict"] != "certified" else "refused"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_number_is_detected_by_the_digest(document, name):
    doc = _tamper(document, EDITS[name])
    v = verify_document(doc)
    assert v.status == "tampered" and "digest" in v.problems[0]


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_number_is_detected_even_with_a_recomputed_digest(document, name):
    doc = _tamper(document, EDITS[name])
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered", name
    assert v.problems


def test_an_external_witness_edit_is_caught_by_consistency(document):
    def edit(b):
        b["claims"].append({"id": "privacy.audit", "category": "privacy", "statement": "x", "status": "pass",
                            "witness": {"kind": "audit", "details": {}},
                            "values": {"epsilon_lower_bound": 1.5, "epsilon_claimed": 1.0}})
        b["claims"] = [c for c in b["claims"][:-1] if c["id"] != "privacy.audit"] + b["claims"][-1:]

    doc = _tamper(document, edit)
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered"
    assert any("privacy.audit" in p for p in v.problems)


def test_a_different_version_is_mismatched(document):
    doc = _tamper(document, lambda b: b["provenance"].__setitem__("gtm_version", "0.0.1"))
    doc["sha256"] = body_digest(doc["body"])
    assert verify_document(doc).status == "mismatched"


@pytest.mark.parametrize("text", ["{", "[]", '{"format": "something-else", "body": {}, "sha256": ""}',
                                  '{"format": "gtm-certificate/1", "body": {"config": {}}, "sha256": "x"}'])
def test_unreadable_certificates(tmp_path, text):
    p = tmp_path / "c.json"
    p.write_text(text)
    with pytest.raises(CertificateUnreadable):
        load_document(p)
    with pytest.raises(CertificateUnreadable):
        load_document(tmp_path / "missing.json")


def test_numbers_from_another_platform_are_mismatched_not_valid(document):
    def edit(b):
        b["provenance"]["platform"] = "some-other-os"
        b["steps"][2]["rho"] = b["steps"][2]["rho"] * (1 + 2**-52)  # a last-bit difference

    doc = _tamper(document, edit)
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "mismatched" and not v.valid
    assert any("rho" in p for p in v.problems)


def test_a_certificate_from_before_the_budget_policy_is_mismatched_naming_the_privacy_difference(document):
    # schema 2 certified "pure" while every deployment refused over-budget steps ((eps, delta)-DP)
    doc = _tamper(document, lambda b: b["provenance"].__setitem__("certificate_schema", 2))
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "mismatched" and "(epsilon, delta)-DP" in v.problems[0]
    assert verify_document(document).status in ("valid", "unsigned")  # companion: today's schema verifies


# ---------------------------------------------------------------------------------------------
# every check runs whatever the key situation; tampered beats mismatched beats unsigned
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    return private, private.public_key()


def _edited_step(document):
    doc = _tamper(document, EDITS["step p_bar"])
    doc["sha256"] = body_digest(doc["body"])
    return doc


def test_a_key_and_no_signature_still_re_derives_everything(document, keys):
    """The attack: with --public-key and no signature the verifier answered `unsigned` before re-deriving,
    so an edited step passed as consistent (and --allow-unsigned accepted it)."""
    doc = _edited_step(document)
    assert "signature" not in doc
    v = verify_document(doc, public_key=keys[1])
    assert v.status == "tampered" and any("p_bar" in p for p in v.problems)
    assert verify_document(document, public_key=keys[1]).status == "unsigned"  # the honest one stays unsigned


def test_a_bad_signature_is_tampered_and_the_contents_are_checked_too(document, keys):
    from audits.certify.model import canonical
    from audits.certify.signing import sign

    doc = _edited_step(document)
    doc["signature"] = sign(canonical(document["body"]).encode("utf-8"), keys[0])  # signs the original body
    v = verify_document(doc, public_key=keys[1])
    assert v.status == "tampered" and v.problems[0].startswith("signature:")
    assert any("p_bar" in p for p in v.problems)  # re-derived although the signature already failed
    honest = copy.deepcopy(document)
    honest["signature"] = sign(canonical(document["body"]).encode("utf-8"), keys[0])
    assert verify_document(honest, public_key=keys[1]).status == "valid"


def test_status_order_mismatched_beats_unsigned_with_a_key_and_no_signature(document, keys):
    doc = _tamper(document, lambda b: b["provenance"].__setitem__("gtm_version", "0.0.1"))
    doc["sha256"] = body_digest(doc["body"])
    assert verify_document(doc, public_key=keys[1]).status == "mismatched"  # not "unsigned": nothing compared


@pytest.fixture(scope="module")
def unplannable_document():
    from audits.certify import certify
    from gtm_core import GTMConfig

    cert = certify(GTMConfig.load("examples/default.toml").with_changes(epsilon=1e-300), horizon=5, quick=True,
                   seed=1, progress=False, witnesses={})
    return json.loads(cert.to_json())


@pytest.mark.parametrize("edit", [
    lambda b: b.__setitem__("verdict", "certified"),
    lambda b: (b["claims"][0].__setitem__("status", "pass"), b.__setitem__("verdict", "certified"),
               b.__setitem__("refusals", [])),
    lambda b: b["refusals"][0].__setitem__("fix", "nothing to fix"),
])
def test_an_unplannable_certificate_is_checked_for_claims_and_verdict(unplannable_document, edit):
    """The attack: for a configuration that cannot be planned the verifier returned before the claim
    and verdict checks, so a verdict edited to `certified` verified as consistent."""
    assert unplannable_document["body"]["verdict"] == "refused" and not unplannable_document["body"]["steps"]
    assert verify_document(unplannable_document).status == "unsigned"  # the honest one is consistent
    doc = _tamper(unplannable_document, edit)
    doc["sha256"] = body_digest(doc["body"])
    assert verify_document(doc).status == "tampered"


class _Deadline(Exception):
    pass


def _within(seconds, fn):
    """fn() with SIGALRM after ``seconds`` (a hang fails the test instead of blocking it)."""
    import signal

    def alarm(signum, frame):
        raise _Deadline(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _huge_horizon(document, steps):
    from gtm_core import GTMConfig

    def edit(b):
        b["config"]["stream"]["horizon"] = 10**12
        b["config_sha256"] = GTMConfig.from_dict(b["config"]).digest()
        b["horizon"] = 10**12
        if steps is not None:
            b["steps"] = steps

    doc = _tamper(document, edit)
    doc["sha256"] = body_digest(doc["body"])
    return doc


@pytest.mark.parametrize("steps", [None, []], ids=["rows-as-listed", "no-rows"])
def test_a_claimed_horizon_of_10_12_is_refused_without_unbounded_work(document, steps):
    """The attack: without a key the verifier re-derived 10^12 steps (unbounded). The work is bounded
    by the certificate's listed rows (or MAX_UNLISTED_STEPS when it lists none)."""
    doc = _huge_horizon(document, steps)
    v = _within(90, lambda: verify_document(doc))
    assert v.status == "tampered"
    assert "steps" in v.problems[0]


def test_a_horizon_field_that_differs_from_the_configuration_is_tampered(document):
    doc = _tamper(document, lambda b: b.__setitem__("horizon", 31))
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered" and "horizon" in v.problems[0]


def test_duplicate_keys_in_a_certificate_are_refused(document, tmp_path):
    """The attack: JSON readers disagree on duplicate keys (this one kept the last): refused instead."""
    text = json.dumps(document)
    path = tmp_path / "dup.json"
    path.write_text(text[:-1] + ', "sha256": "' + document["sha256"] + '"}')
    with pytest.raises(CertificateUnreadable, match="duplicate key 'sha256'"):
        load_document(path)
    path.write_text(text)
    assert load_document(path)["sha256"] == document["sha256"]  # companion: the same without the duplicate


@pytest.mark.parametrize("field, value", [("witness", -1), ("witness", "x"), ("witness", []), ("values", [1]),
                                          ("values", "x"), ("values", 1.5)])
@pytest.mark.parametrize("index", [0, -1])
def test_a_claim_field_of_the_wrong_type_is_tampered_not_an_internal_error(document, field, value, index):
    """The hostile campaign's find: a resealed certificate whose claim had ``"witness": -1`` made
    ``--verify`` fail with an internal error (AttributeError on ``.get``), not a verdict."""
    doc = copy.deepcopy(document)
    doc["body"]["claims"][index][field] = value
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered" and v.problems


@pytest.mark.parametrize("field, value", [("steps", 5), ("refusals", {}), ("globals", []), ("config", "x")])
def test_a_body_field_of_the_wrong_type_is_tampered_not_an_internal_error(document, field, value):
    doc = copy.deepcopy(document)
    doc["body"][field] = value
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered" and any(field in p for p in v.problems), v.problems


@pytest.mark.parametrize("claim_id, field, value", [
    ("privacy.audit", "status", None), ("privacy.audit", "status", "passed"),
    ("privacy.lemma-checks", "status", "proved"), ("privacy.exact-worst-case", "category", "accuracy"),
    ("privacy.audit", "witness", {"kind": "record", "details": {}}), ("provenance", "status", "pass"),
    ("privacy.audit", "extra", 1)])
def test_an_external_claims_status_category_or_witness_kind_is_checked(document, claim_id, field, value):
    """An unsigned, resealed certificate whose externally witnessed claim had its status set to None
    (the verdict stays ``certified``: only ``fail`` and ``witness-unavailable`` refuse) read as
    consistent; so did another category, witness kind or an extra field."""
    doc = copy.deepcopy(document)
    claim = next(c for c in doc["body"]["claims"] if c["id"] == claim_id)
    claim[field] = value
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered" and any(claim_id in p for p in v.problems), v.problems


@pytest.mark.parametrize("field, value", [("mode", "full"), ("mode", ["quick"]), ("format", "gtm-certificate/2")])
def test_the_body_mode_and_format_are_checked(document, field, value):
    doc = copy.deepcopy(document)
    doc["body"][field] = value
    doc["sha256"] = body_digest(doc["body"])
    v = verify_document(doc)
    assert v.status == "tampered" and any(field in p for p in v.problems), v.problems
