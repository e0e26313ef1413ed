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
