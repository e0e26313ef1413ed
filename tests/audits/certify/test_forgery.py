"""Forged certificates: every edit that keeps or recomputes the SHA-256 is caught.

One honest certificate with every external witness (small budgets: horizon 20, 2 budget-seconds:
about 1.1e6 audit samples and 20 search attempts) is made once; each test forges a copy of it.
"""

from __future__ import annotations

import copy
import json

import pytest

from audits.certify import certify, verify_document
from audits.certify.model import body_digest, canonical
from audits.certify.signing import generate_keypair, load_private_key, load_public_key, sign
from gtm_core import GTMConfig


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    honest = generate_keypair(d / "honest")
    other = generate_keypair(d / "other")
    return {"private": load_private_key(honest[0]), "public": load_public_key(honest[1]),
            "other_private": load_private_key(other[0])}


@pytest.fixture(scope="module")
def cert():
    return certify(GTMConfig.load("examples/default.toml"), horizon=20, quick=True, seconds=2, seed=7,
                   progress=False)


@pytest.fixture(scope="module")
def signed(cert, keys):
    return json.loads(cert.to_json(lambda raw: sign(raw, keys["private"])))


def resealed(doc: dict, key=None) -> dict:
    """The forger's last step: recompute the digest and (if they hold some key) re-sign."""
    doc = copy.deepcopy(doc)
    doc["sha256"] = body_digest(doc["body"])
    doc.pop("signature", None)
    if key is not None:
        doc["signature"] = sign(canonical(doc["body"]).encode("utf-8"), key)
    return doc


def claim(doc: dict, cid: str) -> dict:
    return next(c for c in doc["body"]["claims"] if c["id"] == cid)


def test_the_honest_certificate_is_certified_and_valid_when_signed(cert, signed, keys):
    assert cert.verdict == "certified"
    assert verify_document(signed, public_key=keys["public"]).status == "valid"


def test_unsigned_means_integrity_not_established(signed, keys):
    assert verify_document(signed).status == "unsigned"  # no key given
    bare = copy.deepcopy(signed)
    del bare["signature"]
    assert verify_document(bare, public_key=keys["public"]).status == "unsigned"


def test_an_edited_witness_is_tampered_whoever_reseals_it(signed, keys):
    forged = copy.deepcopy(signed)
    claim(forged, "privacy.audit")["values"]["epsilon_lower_bound"] = 0.5
    claim(forged, "privacy.audit")["values"]["samples"] = 10
    # re-signed with another key: tampered; signature stripped: at best unsigned (exit 1), never valid
    assert verify_document(resealed(forged, keys["other_private"]), public_key=keys["public"]).status == "tampered"
    assert verify_document(resealed(forged), public_key=keys["public"]).status == "unsigned"
    # a signature copied from the honest document does not cover the edited body
    copied = resealed(forged)
    copied["signature"] = signed["signature"]
    assert verify_document(copied, public_key=keys["public"]).status == "tampered"
    # with the digest left alone the digest check already fails
    assert verify_document(forged, public_key=keys["public"]).status == "tampered"


def test_an_edited_witness_does_not_reproduce_on_rerun_even_unsigned(signed):
    forged = copy.deepcopy(signed)
    claim(forged, "privacy.exact-worst-case")["values"]["loss_found"] = 0.5
    v = verify_document(resealed(forged), rerun=True)
    assert v.status == "tampered"
    assert any("does not reproduce" in p for p in v.problems)
    # the honest one does reproduce (byte for byte apart from timings)
    assert verify_document(signed, rerun=True).status == "unsigned"


def test_deleted_duplicated_and_extra_claims_and_fields_are_tampered(signed):
    for forge in (
        lambda d: d["body"]["claims"].remove(claim(d, "privacy.lemma-checks")),
        lambda d: d["body"]["claims"].append(copy.deepcopy(claim(d, "privacy.audit"))),
        lambda d: d["body"]["claims"].append({**copy.deepcopy(claim(d, "privacy.audit")), "id": "privacy.extra"}),
        lambda d: d["body"].__setitem__("note", "trust me"),
        lambda d: d.__setitem__("comment", "trust me"),
    ):
        forged = copy.deepcopy(signed)
        forge(forged)
        assert verify_document(resealed(forged)).status == "tampered"


def test_a_flipped_unavailable_witness_is_tampered():
    incomplete = certify(GTMConfig.load("examples/default.toml"), horizon=20, quick=True, seconds=2, seed=7,
                         progress=False, witnesses={})
    doc = json.loads(incomplete.to_json())
    assert verify_document(doc).status == "unsigned" and doc["body"]["verdict"] == "incomplete"
    for c in doc["body"]["claims"]:
        if c["status"] == "witness-unavailable":
            c["status"] = "pass"
    doc["body"]["verdict"] = "certified"
    assert verify_document(resealed(doc)).status == "tampered"


def test_witnesses_transplanted_onto_another_configuration_are_tampered(signed):
    other = certify(GTMConfig.load("examples/default.toml").__class__.from_dict(
        {**GTMConfig.load("examples/default.toml").to_dict(),
         "stream": {**GTMConfig.load("examples/default.toml").to_dict()["stream"], "eps_t": 0.05}}),
        horizon=20, quick=True, seconds=2, seed=7, progress=False, witnesses={})
    doc = json.loads(other.to_json())
    external = {c["id"]: c for c in signed["body"]["claims"] if "config_sha256" in c.get("values", {})}
    doc["body"]["claims"] = [external.get(c["id"], c) for c in doc["body"]["claims"]]
    doc["body"]["verdict"] = "certified"
    v = verify_document(resealed(doc))
    assert v.status == "tampered"
    assert any("not bound to this configuration" in p for p in v.problems)
