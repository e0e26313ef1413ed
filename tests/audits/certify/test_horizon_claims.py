"""`gtm certify` on a horizon configuration: the union-bound claim and its interval-arithmetic witness."""

from __future__ import annotations

from pathlib import Path

from audits.certify import certify
from audits.certify.horizon_claims import accuracy_claims
from gtm_core import GTMConfig, make_plan

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "horizon.toml"


def test_horizon_claims_pass_on_the_example():
    cfg = GTMConfig.load(EXAMPLE)
    cert = certify(cfg, quick=True, seconds=2, seed=3, progress=False, witnesses={})
    ub = cert.claim("accuracy.horizon-union-bound")
    assert ub.status == "pass" and ub.witness.kind == "interval-arithmetic"
    assert ub.values["failure_upper"] <= 0.05
    assert cert.claim("accuracy.horizon-steps").status == "pass"
    assert cert.claim("accuracy.rejection-threshold").status == "pass"
    assert cert.claim("privacy.pure-epsilon").status == "pass"
    assert not cert.refusals
    # no Theorem 21 per-step allocation claim: it does not apply
    assert not any(c.id == "accuracy.failure-allocation" for c in cert.claims)


def test_witness_uses_a_finer_grid_than_the_planner():
    cfg = GTMConfig.load(EXAMPLE)
    plan = make_plan(cfg)
    rows = [dict(plan.step(t).to_dict(), checks={}) for t in range(1, 101)]
    claims = {c.id: c for c in accuracy_claims(cfg, plan, rows)}
    from gtm_core.planners.horizon import certificate

    assert claims["accuracy.horizon-union-bound"].values["panels"] > certificate(cfg).panels


def test_overclaimed_configuration_is_refused():
    cfg = GTMConfig.load(EXAMPLE)
    bad = GTMConfig.from_dict({**cfg.to_dict(), "gtm": {**cfg.to_dict()["gtm"], "p_bar": 0.02}})
    cert = certify(bad, quick=True, seconds=2, seed=3, progress=False, witnesses={})
    assert cert.verdict == "refused"
    assert "not certified" in cert.refusals[0].reason


def test_certificate_document_verifies_and_detects_an_edited_bound():
    """`gtm certify --verify` re-derives the horizon claim from the embedded configuration."""
    import copy

    from audits.certify import body_digest, verify_document

    cert = certify(GTMConfig.load(EXAMPLE), quick=True, seconds=2, seed=3, progress=False, witnesses={})
    doc = cert.document()
    assert verify_document(doc).status == "unsigned"  # consistent (no signature vouches for it)
    bad = copy.deepcopy(doc)
    for c in bad["body"]["claims"]:
        if c["id"] == "accuracy.horizon-union-bound":
            c["values"]["failure_upper"] = 0.001
    bad["sha256"] = body_digest(bad["body"])  # even with a recomputed digest
    assert verify_document(bad).status == "tampered"
