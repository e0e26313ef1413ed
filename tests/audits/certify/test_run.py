"""The certificate engine: claims with witnesses, refusals with computed (and confirmed) fixes,
and tamper detection by digest and by re-derivation."""

import copy
import json

import pytest

from audits.certify import model as CE
from audits.certify import body_digest, certify, load_document, verify_document
from audits.certify.derive import derive, effective_config
from gtm_core.errors import CertificateUnreadable
from gtm_core import GTMConfig
from gtm_core.errors import ConfigError

KINDS = {"rational-identity", "interval-arithmetic", "solver-proof", "exact-engine", "audit", "planner-bound",
         "closed-form", "record"}
STATUSES = {"pass", "fail", "witness-unavailable", "not-applicable", "info", "recorded"}


def _cfg(path="examples/default.toml", **changes):
    c = GTMConfig.load(path)
    return c.with_changes(**changes) if changes else c


@pytest.fixture(scope="module")
def small_cert():
    # the external witnesses (solvers, exact engine, auditor) run in tests/audits/cli/test_certify.py; here none is supplied
    return certify(_cfg(), horizon=30, quick=True, seconds=3, seed=11, progress=False, witnesses={})


def test_every_claim_names_its_witness(small_cert):
    assert small_cert.claims
    for c in small_cert.claims:
        assert c.witness.kind in KINDS, c
        assert c.status in STATUSES, c
        assert c.category in CE.CATEGORIES
        assert c.statement
    ids = [c.id for c in small_cert.claims]
    assert len(ids) == len(set(ids))
    for needed in ("privacy.pure-epsilon", "accuracy.failure-allocation", "accuracy.lemma11",
                   "accuracy.lemma20-halting", "accuracy.lemma20-continuation", "accuracy.noise-range",
                   "cost.evaluation-bound", "cost.expected-evaluations", "cost.budget-exceed", "provenance",
                   "privacy.lemma-checks", "privacy.exact-worst-case", "privacy.audit"):
        assert needed in ids


def test_deterministic_claims_pass_on_the_default_configuration(small_cert):
    for c in small_cert.claims:
        if c.id not in CE.EXTERNAL_CLAIMS:
            assert c.status in ("pass", "info", "not-applicable", "recorded"), c
    assert not small_cert.refusals
    assert len(small_cert.steps) == 30


def test_claims_without_witnesses_are_reported_honestly(small_cert):
    for cid in CE.EXTERNAL_CLAIMS:
        c = small_cert.claim(cid)
        assert c.status == "witness-unavailable"
        assert "no witness supplied" in c.witness.details["unavailable"]
    assert small_cert.verdict == "incomplete" and not small_cert.passed


def test_provenance_records_versions_seed_and_timings(small_cert):
    p = small_cert.provenance
    assert p["seed"] == 11 and p["seeded"] and "not for deployment" in p["seed_note"]
    for lib in ("numpy", "scipy", "mpmath", "python-flint", "z3-solver", "cvc5"):
        assert lib in p["libraries"]
    assert p["timings_seconds"]["total"] > 0
    assert small_cert.claim("provenance").values["config_sha256"] == small_cert.config.digest()


def test_theorem23_certificate_has_the_expost_loss_function():
    cert = certify(_cfg("examples/theorem23.toml"), horizon=20, quick=True, seconds=2, seed=1, progress=False,
                   witnesses={})
    ids = {c.id: c for c in cert.claims}
    assert "privacy.pure-epsilon" not in ids
    assert ids["privacy.expost-continuation"].status == "pass"
    halting = ids["privacy.expost-halting"]
    assert halting.status == "pass" and halting.values["steps_checked"] == 20
    assert set(halting.values["loss_function"]) == {"1", "10", "20"}


def test_purified_configuration_has_shifted_thresholds():
    cert = certify(_cfg("examples/purified.toml"), horizon=20, quick=True, seconds=2, seed=1, progress=False,
                   witnesses={})
    assert cert.claim("purification.crossover").status == "pass"
    th = cert.claim("purification.thresholds")
    assert th.status == "pass"
    row = cert.steps[0]
    assert row["halt_threshold"] == row["p_star"] + row["phi"]
    assert row["continue_threshold"] == row["p_bar"] - row["phi"]


# ---------------------------------------------------------------------------
# refusals and fixes
# ---------------------------------------------------------------------------


def test_vanishing_threshold_is_refused_with_a_working_fix():
    cfg = _cfg("examples/unsafe_vanishing_threshold.toml", horizon=40)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "accuracy.rejection-threshold"]
    eps = r.fix_values["largest_eps_t"]
    assert 0 < eps < 0.3
    assert r.fix_values["largest_horizon"] == 1
    fixed = derive(cfg.with_changes(eps_t=eps))
    assert fixed.claims and all(c.status != "fail" for c in fixed.claims if c.id == "accuracy.rejection-threshold")
    # the fix is the smallest change (to 2 significant digits): 10 % more eps_t fails again
    assert any(c.status == "fail" for c in derive(cfg.with_changes(eps_t=eps * 1.1)).claims
               if c.id == "accuracy.rejection-threshold")


def test_purification_eating_the_gap_is_refused_with_the_largest_delta():
    cfg = _cfg("examples/unsafe_purification.toml", horizon=20)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "purification.thresholds"]
    delta = r.fix_values["largest_delta_t"]
    assert 0 < delta < 1e-3
    ok = derive(cfg.with_changes(delta_t=delta))
    assert ok.claims[[c.id for c in ok.claims].index("purification.thresholds")].status == "pass"
    bad = derive(cfg.with_changes(delta_t=delta * 1.2))
    assert bad.claims[[c.id for c in bad.claims].index("purification.thresholds")].status == "fail"


def test_budget_hit_too_often_is_refused_with_the_smallest_factor():
    cfg = _cfg("examples/unsafe_budget.toml", horizon=20)
    d = derive(cfg)
    (r,) = [r for r in d.refusals if r.claim_id == "cost.budget-exceed"]
    f = r.fix_values["smallest_budget_factor"]
    assert 1 < f < 3
    claim = lambda der: next(c for c in der.claims if c.id == "cost.budget-exceed")  # noqa: E731
    assert claim(derive(cfg.with_changes(evaluation_budget_factor=f))).status == "pass"
    assert claim(derive(cfg.with_changes(evaluation_budget_factor=1 + (f - 1) * 0.9))).status == "fail"


def test_unplannable_configuration_is_refused_not_crashed():
    cfg = _cfg(eps_t=60.0, horizon=5)
    cert = certify(cfg, quick=True, seconds=1, seed=1, progress=False)
    assert cert.verdict == "refused"
    assert cert.claim("accuracy.plannable").status == "fail"
    assert "largest_eps_t" in cert.refusals[0].fix_values


def test_effective_config_horizon():
    base = _cfg()
    assert effective_config(base, None) is base
    assert effective_config(base, 5000).stream.horizon == 5000
    lst = GTMConfig.from_dict({"gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
                               "stream": {"eps_t": [0.1, 0.2, 0.1], "p_star": 0.5, "horizon": 3}})
    assert effective_config(lst, 2).stream.eps_t == (0.1, 0.2)
    with pytest.raises(ConfigError):
        effective_config(lst, 4)
    with pytest.raises(ConfigError):
        effective_config(base, 0)


# ---------------------------------------------------------------------------
# JSON, digest and verification
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def document(small_cert):
    return json.loads(small_cert.to_json())


def test_document_round_trips_and_verifies(document, tmp_path):
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(document))
    doc = load_document(path)
    assert doc["sha256"] == body_digest(doc["body"])
    assert verify_document(doc).status == "valid"


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


def test_exact_tail_planner_is_certified_by_exact_poisson_tails():
    cfg = _cfg().with_changes(parameterization="exact", horizon=20)
    cert = certify(cfg, quick=True, seconds=1, seed=1, progress=False, witnesses={})
    ids = {c.id: c for c in cert.claims}
    for cid in ("accuracy.lemma11", "accuracy.lemma20-halting", "accuracy.lemma20-continuation"):
        assert ids[cid].status == "not-applicable"  # Chernoff thresholds are not what this planner uses
    assert ids["accuracy.poisson-tails"].status == "pass" and ids["accuracy.poisson-tails"].values["steps_checked"] == 20
    assert ids["privacy.pure-epsilon"].status == "pass"
    assert not cert.refusals


def test_exact_noise_planner_is_certified_by_noise_integrated_probabilities():
    cfg = _cfg().with_changes(parameterization="exact_noise", horizon=20)
    cert = certify(cfg, quick=True, seconds=1, seed=1, progress=False, witnesses={})
    ids = {c.id: c for c in cert.claims}
    for cid in ("accuracy.lemma11", "accuracy.lemma20-halting", "accuracy.lemma20-continuation",
                "accuracy.poisson-tails"):
        assert ids[cid].status == "not-applicable"
    c = ids["accuracy.noise-integrated-tails"]
    assert c.status == "pass" and c.values["steps_checked"] == 20
    fa = ids["accuracy.failure-allocation"]
    assert fa.status == "pass" and fa.values["parts"]["noise_tails"] == 0.0
    for cid in ("privacy.pure-epsilon", "accuracy.noise-range", "accuracy.flipping-rule", "cost.evaluation-bound",
                "cost.budget-exceed", "accuracy.rejection-threshold"):
        assert ids[cid].status == "pass", cid
    assert not cert.refusals
    # the theorem21 planner's certificate does not get the exact_noise claim
    ids21 = {c.id: c for c in certify(_cfg().with_changes(horizon=20), quick=True, seconds=1, seed=1,
                                     progress=False, witnesses={}).claims}
    assert ids21["accuracy.noise-integrated-tails"].status == "not-applicable"
