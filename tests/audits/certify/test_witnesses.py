"""The witnesses of `gtm certify`: a witness is reported with its numbers and its verdict decides the
claim; a crashing witness is a *failed* claim carrying its error, a claim without a witness is
`witness-unavailable` - never a pass. Fake modules stand in for the real ones (set as attributes of
the witnesses module) so that each branch is exercised."""

import json
import types

import pytest

from audits.certify import witnesses as W
from audits.certify.model import EXTERNAL, WitnessContext
from audits.certify.progress import Progress
from audits.certify.run import external_claims
from audits.certify.verify import consistency_problems
from gtm_core import GTMConfig, make_plan


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml").with_changes(horizon=12))


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setenv("GTM_CACHE_DIR", str(tmp_path))

    def install(name, **attrs):
        mod = types.ModuleType(name)
        mod.__file__ = str(tmp_path / (name.replace(".", "_") + ".py"))
        for k, v in attrs.items():
            setattr(mod, k, v)
        monkeypatch.setattr(W, name.rsplit(".", 1)[1], mod)  # the module the witness imported
        return mod

    return install


class _LemmaResult:
    def __init__(self, key, status, killed=2, total=2):
        self.key, self.status, self.killed, self.total = key, status, killed, total

    def to_dict(self):
        return {"lemma": self.key, "ref": "Lemma", "status": self.status,
                "ok": self.status in ("proved", "certified") and self.killed == self.total,
                "method": "z3+cvc5", "mutants_killed": self.killed, "mutants_total": self.total, "seconds": 0.1}


def _registry(statuses):
    calls = []

    def run(lemmas, progress=None):
        calls.append(lemmas)
        return types.SimpleNamespace(results=[_LemmaResult(k, s, *rest) for k, s, *rest in statuses], seconds=0.5)

    checks = [types.SimpleNamespace(key=k, mutants=[None] * (rest[1] if rest else 2)) for k, s, *rest in statuses]
    return dict(run=run, select=lambda names: checks, versions=lambda: {"z3": "x", "cvc5": "y"}), calls


def test_lemma_checks_pass_and_are_cached(plan, fake):
    attrs, calls = _registry([("lemma17", "proved"), ("theorem21", "proved"), ("lemma24.3", "certified")])
    fake("proofs.registry", **attrs)
    c = W.lemma_checks_claim(plan, quick=True)
    assert c.status == "pass" and c.witness.kind == "solver-proof" and not c.values["cached"]
    assert set(c.values["lemmas"]) == {"lemma17", "theorem21", "lemma24.3"}
    c2 = W.lemma_checks_claim(plan, quick=True)
    assert c2.status == "pass" and c2.values["cached"] and len(calls) == 1


def test_lemma_checks_fail_on_an_unproved_lemma_or_a_surviving_mutant(plan, fake):
    attrs, _ = _registry([("lemma17", "proved"), ("theorem21", "failed")])
    fake("proofs.registry", **attrs)
    c = W.lemma_checks_claim(plan, quick=True)
    assert c.status == "fail" and c.values["failing"] == ["theorem21"]


def test_surviving_mutant_fails(plan, fake):
    attrs, _ = _registry([("lemma11.1", "proved", 1, 3)])
    fake("proofs.registry", **attrs)
    assert W.lemma_checks_claim(plan, quick=True).status == "fail"


def _context(plan):
    rows = [plan.step(t).to_dict() for t in range(1, 13)]
    return WitnessContext(plan=plan, rows=rows, quick=True, budgets={"audit": 1, "exact_search": 1,
                                                                      "exact_threshold": 1},
                          seed=1, progress=Progress(False))


def test_crashing_witness_is_a_failure_with_its_message_not_unavailable(plan, fake, capsys):
    def run(lemmas, progress=None):
        raise RuntimeError("solver crashed")

    fake("proofs.registry", run=run, select=lambda n: n, versions=lambda: {})
    with pytest.raises(RuntimeError):  # the witness itself does not hide the crash
        W.lemma_checks_claim(plan, quick=True)
    claims = external_claims(_context(plan), {"privacy.lemma-checks": W.DEFAULT_WITNESSES["privacy.lemma-checks"]})
    c = claims[0]
    assert c.id == "privacy.lemma-checks" and c.status == "fail"
    assert c.witness.kind == "solver-proof" and c.witness.details["error"] == "RuntimeError: solver crashed"
    assert "solver crashed" in capsys.readouterr().err  # loud, also without progress messages


def test_claims_without_a_witness_are_unavailable(plan):
    claims = external_claims(_context(plan), {})
    assert [c.id for c in claims] == [e.id for e in EXTERNAL]
    assert all(c.status == "witness-unavailable" for c in claims)
    assert [c.witness.kind for c in claims] == [e.kind for e in EXTERNAL]


def test_injected_witness_functions_decide_their_claims(plan):
    seen = []

    def fake_audit(ctx):
        seen.append(ctx.budgets["audit"])
        return W.Claim("privacy.audit", "privacy", "fake", {}, W.Witness("audit", {}), "pass")

    claims = external_claims(_context(plan), {"privacy.audit": fake_audit})
    audit = next(c for c in claims if c.id == "privacy.audit")
    assert audit.status == "pass" and audit.statement == "fake" and seen == [1]


def test_plan_identities(plan, fake):
    rows = [plan.step(t).to_dict() for t in range(1, 13)]
    def res(ok):
        name = "1/tau_1 + 2/tau_2 = eps"
        return types.SimpleNamespace(ok=ok, failed=lambda: [types.SimpleNamespace(name=name)],
                                     to_dict=lambda: {"claims": [{"name": name}]})

    fake("proofs.instantiate", check_plan_identities=lambda p, t: res(True))
    assert W.plan_identities_claim(plan, rows, progress=Progress(False)).status == "pass"
    fake("proofs.instantiate", check_plan_identities=lambda p, t: res(t != 7))
    c = W.plan_identities_claim(plan, rows, progress=Progress(False))
    assert c.status == "fail" and c.values["failing_steps"] == [7]


def test_exact_search_and_audit_verdicts(plan, fake):
    def found(loss):
        return types.SimpleNamespace(loss=loss, loss_error=0.0, claimed=1.0, evaluations=3, seconds=0.1,
                                     p=(0.1,), p_prime=(0.11,), transcript="halt", t=1, attempts=3, complete=True)

    fake("gtm_core.exact", worst_case_search=lambda p, **kw: found(0.97))
    assert W.exact_search_claim(plan, max_attempts=20, time_cap=4, seed=1).status == "pass"
    fake("gtm_core.exact", worst_case_search=lambda p, **kw: found(1.2))
    assert W.exact_search_claim(plan, max_attempts=20, time_cap=4, seed=1).status == "fail"

    def audit(target, **kw):
        lb = kw["epsilon"] * 0.9 if ok else kw["epsilon"] * 1.3
        d = {"verdict": "no-violation-found" if ok else "violation", "epsilon_claimed": kw["epsilon"],
             "epsilon_lower_bound": lb, "confidence": 0.95, "samples": 10, "seconds": 0.1, "witness": None,
             "per_event": [{"event": "halt=1", "loss": 0.1, "loss_lower": 0.0, "loss_upper": 0.2}]}
        return types.SimpleNamespace(to_dict=lambda: d)

    from audits.gtm_audit import audit_parameters

    fake("audits.gtm_audit", audit=audit, audit_parameters=audit_parameters)
    fake("audits.targets", SimulatorTarget=lambda p: object())
    ok = True
    c = W.audit_claim(plan, max_samples=40_000, seed=1)
    assert c.status == "pass" and c.values["events"][0]["event"] == "halt=1"
    ok = False
    assert W.audit_claim(plan, max_samples=40_000, seed=1).status == "fail"


def test_consistency_of_digest_protected_witnesses():
    body = {"claims": [{"id": "privacy.audit", "status": "pass", "witness": {"kind": "audit"},
                        "values": {"epsilon_lower_bound": 1.2, "epsilon_claimed": 1.0}},
                       {"id": "privacy.exact-worst-case", "status": "pass", "witness": {"kind": "exact-engine"},
                        "values": {"loss_found": 0.9, "loss_claimed": 1.0}},
                       {"id": "x", "status": "info", "witness": {"kind": ""}, "values": {}}]}
    problems = consistency_problems(body)
    assert any("privacy.audit" in p for p in problems)
    assert any("names no witness" in p for p in problems)
    assert not any("exact-worst-case" in p for p in problems)


def test_plan_identities_of_exact_noise_keep_theorem21s_and_skip_the_chernoff_ones():
    """The real proofs.instantiate on an exact_noise plan: Theorem 21's identities (tau, Lambda_t, Pr[G^c])
    must hold; Lemma 11 / Lemma 20 identities (Chernoff thresholds, Lemma 10(3b)'s domain) are reported
    not applicable, not failed."""
    from proofs.instantiate import check_plan_identities

    # gamma = 2: c_1 = 7, below Lemma 10(3b)'s domain 2 ln(1/beta^I_1) - a Chernoff-only condition
    pn = make_plan(GTMConfig.load("examples/exact_noise.toml").with_changes(horizon=12, gamma=2.0))
    rows = [pn.step(t).to_dict() for t in range(1, 13)]
    c = W.plan_identities_claim(pn, rows, progress=Progress(False))
    assert c.status == "pass", c.values
    na = set(c.values["not_applicable_identities"])
    assert "lambda_left(c, alpha) <= gamma lambda_right(c, beta)" in na
    assert any(n.startswith("c + 1 >= 2 ln(1/beta)") for n in na)
    res = check_plan_identities(pn, 1)
    thm21 = [v for v in res.claims if v.lemma.startswith("Theorem 21")]
    assert thm21 and all(v.ok for v in thm21)


def test_a_planted_cache_entry_with_a_made_up_lemma_is_not_certified(plan, fake, tmp_path):
    """The cache key is public: an entry listing one made-up lemma with ok: true, under the right key,
    used to become a passing privacy.lemma-checks claim without any check running."""
    from proofs import cache

    attrs, calls = _registry([("lemma17", "proved"), ("theorem21", "proved")])
    reg = fake("proofs.registry", **attrs)
    key = cache.cache_key(reg, W.BACKING_LEMMAS)
    (tmp_path / f"prove-{key[:32]}.json").write_text(json.dumps(
        {"key": key, "seconds": 0.1, "results": {"made-up": {"status": "proved", "ok": True, "mutants_killed": 0,
                                                             "mutants_total": 0}}}))
    c = W.lemma_checks_claim(plan, quick=True)
    assert len(calls) == 1 and not c.values["cached"]  # the checks ran
    assert set(c.values["lemmas"]) == {"lemma17", "theorem21"} and c.status == "pass"


CAPPED = {"gtm": {"epsilon": 1.0, "parameterization": "theorem21", "theta": 1.0, "gamma": 2.0, "beta": 0.05,
                  "evaluation_budget": "refuse"},
          "stream": {"eps_t": 0.5, "p_star": 0.5, "horizon": 10}}


@pytest.fixture(scope="module")
def capped_plan():
    return make_plan(GTMConfig.from_dict(CAPPED))


def test_exact_witness_of_a_capped_plan_checks_delta_and_refuses_a_smaller_claim(capped_plan, fake):
    """Under "refuse" the witness asks the search for the delta objective and passes iff the enclosure of
    the delta found lies below the claimed delta: a claim mutated below it fails."""
    asked = {}

    def search(p, **kw):
        asked.update(kw)
        return types.SimpleNamespace(loss=3.67e-4, loss_error=1e-15, delta_upper=3.6718e-4, claimed=0.0111,
                                     evaluations=4, seconds=1.0, p=(1e-7,), p_prime=(1.6487e-7,),
                                     transcript="p'||p", t=1, attempts=4, complete=True)

    fake("gtm_core.exact", worst_case_search=search)
    good = W.exact_search_claim(capped_plan, max_attempts=150, time_cap=4, seed=1, delta_claimed=0.0111)
    assert good.status == "pass" and asked["objective"] == "delta"
    assert good.values["delta_found_upper"] == 3.6718e-4 and good.values["delta_claimed"] == 0.0111
    assert asked["max_attempts"] == W.delta_search_attempts(150) and asked["seconds"] >= 4 * 150.0
    assert not consistency_problems({"claims": [good.to_dict()]})
    bad = W.exact_search_claim(capped_plan, max_attempts=150, time_cap=4, seed=1, delta_claimed=3.6717e-4)
    assert bad.status == "fail"
    # a stored pass whose numbers say otherwise is caught by the verifier's consistency check
    forged = dict(bad.to_dict(), status="pass")
    assert any("delta found exceeds" in p for p in consistency_problems({"claims": [forged]}))
    with pytest.raises(Exception, match="claimed delta"):
        W.exact_search_claim(capped_plan, max_attempts=20, time_cap=4, seed=1)


@pytest.mark.slow  # a real delta search on the capped law: about a minute
def test_real_exact_delta_witness_passes_the_claim_and_fails_it_mutated_smaller(capped_plan):
    from audits.certify.derive import approximate_delta_upper, derive

    rows = derive(GTMConfig.from_dict(CAPPED), Progress(False)).steps
    claimed, _ = approximate_delta_upper(capped_plan, rows)
    c = W.exact_search_claim(capped_plan, max_attempts=160, time_cap=10, seed=3, delta_claimed=claimed)
    assert c.status == "pass" and c.values["complete"]
    found = c.values["delta_found_upper"]
    assert 1e-4 < found < claimed  # the truncation's delta is real, and below the claim
    again = W.exact_search_claim(capped_plan, max_attempts=160, time_cap=10, seed=3, delta_claimed=found / 2)
    assert again.status == "fail"
    assert again.values["witness"] == c.values["witness"]  # same seed and count: same pair


# privacy.audit follows the policy: alpha = 1 - 0.95 = 0.05 for every real audit below, seeds stated
AUDIT_SEED = 1


def test_audit_witness_of_a_capped_config_tests_its_eps_delta_claim_on_the_capped_target():
    """examples/budget/capped.toml: the witness audits the deployed, capped GTM (refusals included)
    against the certificate's (epsilon, delta) claim and passes; the lower bound it finds is not 0 (the
    refusal gap on halt@1 is seen), so the companion below can fail."""
    from audits.certify.derive import approximate_delta_upper, derive

    d = derive(GTMConfig.load("examples/budget/capped.toml"), Progress(False))
    delta, _ = approximate_delta_upper(d.plan, d.steps)
    c = W.audit_claim(d.plan, max_samples=2_000_000, seed=AUDIT_SEED, delta_claimed=delta)
    assert c.status == "pass", c.values
    v = c.values
    assert (v["method"], v["measure"], v["epsilon_claimed"], v["delta_claimed"]) == \
        ("hockey-stick", "approximate", 1.0, delta)
    assert 1e-4 < v["delta_lower_bound"] <= delta
    assert "refusals included" in c.statement and "(1, 0.0111)-DP" in c.statement
    assert "capped_target" in c.witness.details["target"]
    approx = next(x for x in d.claims if x.id == "privacy.approximate")
    assert not consistency_problems({"claims": [approx.to_dict(), c.to_dict()]})


def test_audit_witness_flags_the_pure_claim_on_the_capped_config():
    """Power companion: the same audit (same seed, same samples) against pure epsilon (delta = 0) on the
    capped configuration is a violation - the truncation is not pure epsilon-DP."""
    plan = make_plan(GTMConfig.load("examples/budget/capped.toml"))
    c = W.audit_claim(plan, max_samples=2_000_000, seed=AUDIT_SEED, claim="pure")
    assert c.status == "fail" and c.values["verdict"] == "violation"
    assert c.values["measure"] == "pure" and c.values["delta_claimed"] == 0.0 < c.values["delta_lower_bound"]
    # a forged pass of it is caught by the verifier, and so is a pure audit beside an (eps, delta) claim
    forged = dict(c.to_dict(), status="pass")
    assert any("lower bound on delta exceeds" in p for p in consistency_problems({"claims": [forged]}))


def test_audit_witness_of_an_uncapped_config_tests_pure_epsilon_on_algorithm1(plan, fake):
    """evaluation_budget = "none": the loss test on the simulator of Algorithm 1 at the pure epsilon; a
    capped plan never reaches it (its audit is the hockey-stick test above)."""
    seen = []

    def audit(target, **kw):
        seen.append((type(target).__name__, kw["epsilon"]))
        d = {"verdict": "no-violation-found", "epsilon_claimed": kw["epsilon"], "epsilon_lower_bound": 0.5,
             "confidence": 0.95, "samples": 10, "seconds": 0.1, "witness": None, "per_event": []}
        return types.SimpleNamespace(to_dict=lambda: d)

    from audits.gtm_audit import audit_parameters

    class Sim:
        def __init__(self, p):
            pass

    fake("audits.gtm_audit", audit=audit, audit_parameters=audit_parameters)
    fake("audits.targets", SimulatorTarget=Sim)
    assert plan.pure
    c = W.audit_claim(plan, max_samples=40_000, seed=1)
    assert c.status == "pass" and seen == [("Sim", 1.0)] and "method" not in c.values
    assert not consistency_problems({"claims": [c.to_dict()]})
    capped = make_plan(GTMConfig.load("examples/budget/capped.toml"))
    assert W.audit_claim(capped, max_samples=40_000, seed=1).values["method"] == "hockey-stick"
    assert seen == [("Sim", 1.0)]  # the loss engine was not asked about the capped plan


def test_verifier_refuses_an_audit_of_the_wrong_claim():
    """A passing privacy.audit must have tested the certificate's claim: a pure-epsilon (loss) audit beside
    privacy.approximate, or an audit at another delta, is a problem; so is a hockey-stick audit on a
    certificate without privacy.approximate."""
    approx = {"id": "privacy.approximate", "status": "pass", "witness": {"kind": "interval-arithmetic"},
              "values": {"epsilon": 1.0, "delta_upper": 0.0111}}
    loss = {"id": "privacy.audit", "status": "pass", "witness": {"kind": "audit"},
            "values": {"epsilon_claimed": 1.0, "epsilon_lower_bound": 0.4}}
    hs = {"id": "privacy.audit", "status": "pass", "witness": {"kind": "audit"},
          "values": {"method": "hockey-stick", "measure": "approximate", "epsilon_claimed": 1.0,
                     "delta_claimed": 0.0111, "delta_lower_bound": 4e-4}}
    assert not consistency_problems({"claims": [approx, hs]})
    assert not consistency_problems({"claims": [loss]})
    wrong = "did not test the certificate's (epsilon, delta) claim"
    assert any(wrong in p for p in consistency_problems({"claims": [approx, loss]}))
    other = {**hs, "values": {**hs["values"], "delta_claimed": 0.02}}
    assert any(wrong in p for p in consistency_problems({"claims": [approx, other]}))
    assert any("claims pure epsilon" in p for p in consistency_problems({"claims": [hs]}))


def test_a_capped_certificate_audits_its_eps_delta_claim_and_re_runs_it():
    """End to end: a capped configuration that certifies (examples/default.toml with evaluation_budget =
    "refuse", T = 30) gets privacy.audit at privacy.approximate's (epsilon, delta), n/a pure epsilon;
    --verify --rerun reproduces the audit and a forged loss-test audit in its place is tampered."""
    from audits.certify import body_digest, certify, verify_document

    base = GTMConfig.load("examples/default.toml").to_dict()
    config = GTMConfig.from_dict({**base, "gtm": {**base["gtm"], "evaluation_budget": "refuse"}})
    only = {"privacy.audit": W.DEFAULT_WITNESSES["privacy.audit"]}
    cert = certify(config, horizon=30, quick=True, seconds=3, seed=11, progress=False, witnesses=only)
    claims = {c.id: c for c in cert.claims}
    assert claims["privacy.pure-epsilon"].status == "not-applicable"
    audit, approx = claims["privacy.audit"], claims["privacy.approximate"]
    assert audit.status == "pass", audit.values
    assert (audit.values["measure"], audit.values["delta_claimed"]) == ("approximate", approx.values["delta_upper"])
    doc = json.loads(cert.to_json())
    assert verify_document(doc, rerun=True, witnesses=only).status == "unsigned"  # consistent, reproduced
    body = doc["body"]
    i = next(i for i, c in enumerate(body["claims"]) if c["id"] == "privacy.audit")
    body["claims"][i] = {**body["claims"][i], "values": {"epsilon_claimed": 1.0, "epsilon_lower_bound": 0.3}}
    doc["sha256"] = body_digest(body)
    v = verify_document(doc)
    assert v.status == "tampered" and any("did not test the certificate's" in p for p in v.problems)
