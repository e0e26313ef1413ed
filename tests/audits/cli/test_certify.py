"""`gtm certify` on the command line: exit codes, output files, --verify, unsafe examples."""

import json
import os

import pytest

from audits.certify import witnesses as W
from audits.certify import body_digest
from audits.cli import main


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err




@pytest.fixture(scope="module")
def cert_files(tmp_path_factory):
    """One end-to-end run with every external witness that is installed (short budgets, fresh cache)."""
    d = tmp_path_factory.mktemp("cert")
    paths = {"json": d / "cert.json", "html": d / "report.html", "md": d / "report.md"}
    old = os.environ.get("GTM_CACHE_DIR")
    os.environ["GTM_CACHE_DIR"] = str(d / "cache")
    # Only two of the backing lemma checks here (the whole set takes ~30-70 s of solver time; the slow
    # test below runs them all): this test is about the wiring, not the solvers.
    backing = W.BACKING_LEMMAS
    W.BACKING_LEMMAS = ("lemma17", "theorem21")
    try:
        with pytest.raises(SystemExit) as exc:
            main(["certify", "examples/default.toml", "--horizon", "25", "--quick", "--seconds", "4", "--seed", "5",
                  "--no-progress", "--json", str(paths["json"]), "--report", str(paths["html"]),
                  "--report", str(paths["md"])])
    finally:
        W.BACKING_LEMMAS = backing
        if old is None:
            os.environ.pop("GTM_CACHE_DIR", None)
        else:
            os.environ["GTM_CACHE_DIR"] = old
    paths["code"] = exc.value.code
    return paths


def test_certify_writes_json_and_reports(cert_files):
    doc = json.loads(cert_files["json"].read_text())
    body = doc["body"]
    claims = {c["id"]: c for c in body["claims"]}
    for cid in W.DEFAULT_WITNESSES:  # every witness ran: reported with its numbers, never as unavailable
        assert claims[cid]["status"] in ("pass", "info"), claims[cid]
    assert body["verdict"] == "certified" and cert_files["code"] == 0
    assert body["horizon"] == 25 and len(body["steps"]) == 25
    assert all(c["witness"]["kind"] for c in body["claims"])
    assert cert_files["html"].read_text().startswith("<!DOCTYPE html>")
    assert cert_files["md"].read_text().startswith("# GTM certificate")


def test_verify_unsigned_signed_and_tampered(cert_files, tmp_path, capsys):
    code, out, _ = run(["certify", "--verify", str(cert_files["json"]), "--no-progress"], capsys)
    assert code == 1 and out.startswith("unsigned: integrity not established")
    code, out, _ = run(["certify", "--verify", str(cert_files["json"]), "--no-progress", "--allow-unsigned"], capsys)
    assert code == 0 and out.startswith("unsigned: integrity not established") and "--allow-unsigned" in out
    # sign: generate a key pair, certify with --sign, verify with the public key
    key = tmp_path / "signing.key"
    code, out, _ = run(["certify", "--generate-key", str(key)], capsys)
    assert code == 0 and (key.stat().st_mode & 0o777) == 0o600 and (tmp_path / "signing.key.pub").exists()
    code, _, err = run(["certify", "--generate-key", str(key)], capsys)
    assert code == 2 and "already exists" in err
    signed = tmp_path / "signed.json"
    with pytest.raises(SystemExit):
        main(["certify", "examples/default.toml", "--horizon", "5", "--quick", "--seconds", "1", "--seed", "5",
              "--no-progress", "--json", str(signed), "--sign", str(key)])
    capsys.readouterr()
    code, out, _ = run(["certify", "--verify", str(signed), "--public-key", str(tmp_path / "signing.key.pub"),
                        "--no-progress"], capsys)
    assert code == 0 and out.startswith("valid: signed by key")
    vouched = json.loads(signed.read_text())["body"]
    assert f"vouches for: config sha256 {vouched['config_sha256']}, horizon 5" in out  # the full digest
    assert len(vouched["config_sha256"]) == 64
    doc = json.loads(cert_files["json"].read_text())
    doc["body"]["steps"][3]["Lambda"] *= 1.5  # edit a certified number...
    doc["sha256"] = body_digest(doc["body"])  # ...and even recompute the digest
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = run(["certify", "--verify", str(bad), "--no-progress"], capsys)
    assert code == 1 and out.startswith("tampered") and "Lambda" in out


def test_verify_unreadable_is_usage_error(tmp_path, capsys):
    p = tmp_path / "x.json"
    p.write_text("not json")
    code, _, err = run(["certify", "--verify", str(p)], capsys)
    assert code == 2 and err.startswith("gtm: error:") and len(err.strip().splitlines()) == 1


def test_bad_usage_exits_2_without_output(tmp_path, capsys):
    out = tmp_path / "c.json"
    code, _, err = run(["certify", "examples/default.toml", "--json", str(out), "--report",
                        str(tmp_path / "r.pdf")], capsys)
    assert code == 2 and ".md or .html" in err and not out.exists()
    code, _, err = run(["certify"], capsys)
    assert code == 2 and "missing CONFIG" in err
    code, _, err = run(["certify", "examples/nonexistent.toml"], capsys)
    assert code == 2 and "not found" in err
    code, _, err = run(["certify", "examples/default.toml", "--horizon", "0"], capsys)
    assert code == 2 and "horizon must be a positive integer, got 0" in err
    code, _, err = run(["certify", "examples/default.toml", "--seconds", "-1", "--json", str(out)], capsys)
    assert code == 2 and "seconds must be > 0, got -1" in err and not out.exists()
    code, _, err = run(["certify", "examples/default.toml", "--verify", "x.json"], capsys)
    assert code == 2


@pytest.mark.parametrize("example,claim,fix", [
    ("unsafe_purification", "purification.thresholds", "delta_t <="),
    ("unsafe_vanishing_threshold", "accuracy.rejection-threshold", "eps_t <="),
    ("unsafe_budget", "cost.budget-exceed", "evaluation_budget_factor >="),
])
def test_unsafe_examples_are_refused_with_reasons(example, claim, fix, tmp_path, capsys):
    out = tmp_path / "c.json"
    code, text, _ = run(["certify", f"examples/{example}.toml", "--horizon", "20", "--quick", "--no-progress",
                         "--json", str(out)], capsys)
    assert code == 1
    assert "REFUSED" in text and "reason:" in text and fix in text
    body = json.loads(out.read_text())["body"]
    assert body["verdict"] == "refused"
    assert claim in [r["claim_id"] for r in body["refusals"]]


@pytest.mark.slow
@pytest.mark.parametrize("example", ["unsafe_purification", "unsafe_vanishing_threshold", "unsafe_budget"])
def test_unsafe_examples_at_their_own_horizon(example, capsys):
    code, text, _ = run(["certify", f"examples/{example}.toml", "--quick", "--no-progress"], capsys)
    assert code == 1 and "REFUSED" in text and "fix:" in text


@pytest.mark.slow
def test_default_example_is_certified_quick(tmp_path, capsys):
    """The issue's bar: `gtm certify examples/default.toml --quick` exits 0, every claim with its witness."""
    out = tmp_path / "c.json"
    code, text, _ = run(["certify", "examples/default.toml", "--quick", "--no-progress", "--json", str(out)], capsys)
    body = json.loads(out.read_text())["body"]
    assert code == 0, text
    assert body["verdict"] == "certified"
    assert all(c["witness"]["kind"] and c["status"] != "witness-unavailable" for c in body["claims"])
    assert body["provenance"]["timings_seconds"]["total"] <= 120


def test_exact_parameterization_is_certified_or_refused(tmp_path, capsys, monkeypatch):
    """Every parameterization the configuration accepts has a planner in the package: never exit 2."""
    monkeypatch.setenv("GTM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(W, "BACKING_LEMMAS", ("lemma17",))  # wiring only; the solvers run elsewhere

    cfg = tmp_path / "exact.toml"
    from pathlib import Path

    cfg.write_text(Path("examples/default.toml").read_text().replace('"theorem21"', '"exact"'))
    code, _, err = run(["certify", str(cfg), "--horizon", "5", "--quick", "--seconds", "2", "--no-progress"], capsys)
    assert code in (0, 1), err  # certified or refused, never a crash or bad input


def test_progress_goes_to_stderr(capsys):
    code, out, err = run(["certify", "examples/unsafe_purification.toml", "--horizon", "5", "--quick"], capsys)
    assert code == 1
    assert "certify [" in err and "planning and checking 5 steps" in err
    assert "certify [" not in out


def test_a_public_key_does_not_switch_verification_off_for_an_unsigned_certificate(cert_files, tmp_path, capsys):
    """The attack: with --public-key and no signature the verifier stopped at `unsigned` and printed that the
    contents are consistent; --allow-unsigned then exited 0 on an edited step and an audit bound of 99."""
    key = tmp_path / "k.key"
    assert run(["certify", "--generate-key", str(key)], capsys)[0] == 0
    doc = json.loads(cert_files["json"].read_text())
    doc["body"]["steps"][2]["rho"] *= 1.5
    audit = next(c for c in doc["body"]["claims"] if c["id"] == "privacy.audit")
    audit["values"]["epsilon_lower_bound"] = 99.0
    doc["sha256"] = body_digest(doc["body"])
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    for extra in ([], ["--allow-unsigned"]):
        code, out, _ = run(["certify", "--verify", str(bad), "--public-key", str(key) + ".pub", "--no-progress",
                            *extra], capsys)
        assert code == 1 and out.startswith("tampered") and "consistent" not in out
        assert "rho" in out and "privacy.audit" in out
    # the honest certificate with the same key: unsigned (consistent), accepted only with --allow-unsigned
    code, out, _ = run(["certify", "--verify", str(cert_files["json"]), "--public-key", str(key) + ".pub",
                        "--no-progress", "--allow-unsigned"], capsys)
    assert code == 0 and out.startswith("unsigned") and "carries no signature" in out


def test_the_summary_states_eps_delta_for_the_capped_example_and_pure_for_an_uncapped_one(capsys):
    # examples/budget/capped.toml (evaluation_budget = "refuse") is refused here (its threshold and budget),
    # but whatever the verdict the summary states the privacy it would claim: (eps, delta), never pure
    code, text, _ = run(["certify", "examples/budget/capped.toml", "--quick", "--no-progress"], capsys)
    assert code == 1
    assert 'privacy: (1, 0.0111)-differentially private (approximate: evaluation_budget = "refuse")' in text
    assert "(pure" not in text and "Not applicable to the deployed mechanism" in text
    code, text, _ = run(["certify", "examples/unsafe_vanishing_threshold.toml", "--horizon", "20", "--quick", "--no-progress"],
                        capsys)
    assert code == 1 and 'privacy: 1-differentially private (pure: evaluation_budget = "none")' in text
