"""The certificate orchestrator (audits.certify.run): every claim names its witness, claims without a
supplied witness are reported honestly, provenance, and end-to-end certificates of each planner."""


from audits.certify import certify
from audits.certify import model as CE
from gtm_core import GTMConfig

KINDS = {"rational-identity", "interval-arithmetic", "solver-proof", "exact-engine", "audit", "planner-bound",
         "closed-form", "record"}
STATUSES = {"pass", "fail", "witness-unavailable", "not-applicable", "info", "recorded"}


def _cfg(path="examples/default.toml", **changes):
    c = GTMConfig.load(path)
    return c.with_changes(**changes) if changes else c


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


def test_a_certificate_is_frozen(small_cert):
    import dataclasses

    import pytest

    with pytest.raises(dataclasses.FrozenInstanceError):
        small_cert.mode = "full"
    assert dataclasses.replace(small_cert, mode="quick").document()["body"]["mode"] == "quick"
