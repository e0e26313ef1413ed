"""The release path: `gtm certify --sign` -> `gtm certify --verify` -> `gtm deploy init --certificate`.

A deployment is bound to the signed certificate of exactly its configuration (full digest, in the
state's authenticated body, shown by `status`); a certificate that is invalid, unsigned by the given
key, not certified or for another configuration is refused before anything is written. Without a
certificate, `deploy init` applies every refusal `gtm certify` applies and says the deployment is
uncertified (the earlier `deploy init` deployed examples/unsafe_*.toml with exit 0).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.certify import certify
from audits.certify import witnesses as W
from audits.certify.model import body_digest
from audits.certify.signing import generate_keypair, load_private_key, sign
from audits.cli import cli
from gtm_core import GTMConfig
from gtm_core.deployment.state import read_state_body_unchecked

ROOT = Path(__file__).resolve().parents[3]


def invoke(args):
    return CliRunner().invoke(cli, args, prog_name="gtm")


def one_line_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gtm: error:"), result.output
    return lines[0]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A certified, signed certificate (horizon 5, every external witness, short budgets, two of the
    backing lemma checks as in tests/audits/cli/test_certify.py) and the configuration it certifies."""
    d = tmp_path_factory.mktemp("release")
    old_cache = os.environ.get("GTM_CACHE_DIR")
    os.environ["GTM_CACHE_DIR"] = str(d / "cache")
    backing, W.BACKING_LEMMAS = W.BACKING_LEMMAS, ("lemma17", "theorem21")
    try:
        cert = certify(GTMConfig.load(ROOT / "examples" / "default.toml"), horizon=5, quick=True, seconds=1, seed=3,
                       progress=False)
    finally:
        W.BACKING_LEMMAS = backing
        if old_cache is None:
            os.environ.pop("GTM_CACHE_DIR", None)
        else:
            os.environ["GTM_CACHE_DIR"] = old_cache
    assert cert.verdict == "certified"
    private, public = generate_keypair(d / "release.key")
    other_private, other_public = generate_keypair(d / "other.key")
    key = load_private_key(private)
    signed = d / "cert.json"
    signed.write_text(cert.to_json(lambda raw: sign(raw, key)))
    config = d / "cfg.json"
    config.write_text(json.dumps(json.loads(signed.read_text())["body"]["config"]))
    return {"dir": d, "cert": signed, "pub": public, "other_pub": other_public, "config": config,
            "private": key, "doc": json.loads(signed.read_text())}


def test_a_valid_certificate_is_bound_into_the_authenticated_state(release, tmp_path):
    state = tmp_path / "dep.state"
    r = invoke(["deploy", "init", str(state), str(release["config"]), "--certificate", str(release["cert"]),
                "--public-key", str(release["pub"]), "--json", str(tmp_path / "init.json")])
    assert r.exit_code == 0, r.output
    doc = release["doc"]
    digest = doc["body"]["config_sha256"]
    assert f"config sha256 {digest}" in r.output  # the full digest, not a 64-bit prefix
    record = read_state_body_unchecked(state)["certificate"]
    assert record == {"certificate_sha256": doc["sha256"], "config_sha256": digest, "horizon": 5,
                      "key_id": doc["signature"]["key_id"], "verdict": "certified"}
    assert json.loads((tmp_path / "init.json").read_text())["certificate"] == record
    assert invoke(["deploy", "step", str(state), "--bernoulli", "0", "--steps", "2"]).exit_code == 0
    r = invoke(["deploy", "status", str(state), "--json", str(tmp_path / "status.json")])
    assert r.exit_code == 0, r.output
    assert (f"certificate: sha256 {doc['sha256']}, signed by key {doc['signature']['key_id']}, "
            f"certifies config sha256 {digest} for horizon 5") in r.output
    assert json.loads((tmp_path / "status.json").read_text())["certificate"] == record  # kept across steps


def test_the_binding_is_authenticated(release, tmp_path):
    """Swapping the recorded certificate (e.g. for another configuration's) without the key breaks the HMAC."""
    state = tmp_path / "dep.state"
    assert invoke(["deploy", "init", str(state), str(release["config"]), "--certificate", str(release["cert"]),
                   "--public-key", str(release["pub"])]).exit_code == 0
    doc = json.loads(state.read_text())
    doc["body"]["certificate"]["certificate_sha256"] = "0" * 64
    doc["sha256"] = __import__("hashlib").sha256(
        json.dumps(doc["body"], sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    state.write_text(json.dumps(doc))
    os.chmod(state, 0o600)
    assert "tampered" in one_line_error(invoke(["deploy", "status", str(state)]))


def resealed(doc: dict, key=None) -> dict:
    doc = copy.deepcopy(doc)
    doc["sha256"] = body_digest(doc["body"])
    doc.pop("signature", None)
    if key is not None:
        from audits.certify.model import canonical
        doc["signature"] = sign(canonical(doc["body"]).encode("utf-8"), key)
    return doc


def refused(release, tmp_path, config, cert, pub) -> str:
    state = tmp_path / "dep.state"
    line = one_line_error(invoke(["deploy", "init", str(state), str(config), "--certificate", str(cert),
                                  "--public-key", str(pub)]))
    assert not state.exists() and not Path(f"{state}.key").exists()  # refused before anything is written
    return line


def test_a_certificate_for_another_configuration_is_refused(release, tmp_path):
    """The attack: the certificate of a short horizon, deployed on the 1000-step configuration."""
    line = refused(release, tmp_path, ROOT / "examples" / "default.toml", release["cert"], release["pub"])
    assert f"vouches for configuration {release['doc']['body']['config_sha256']} (horizon 5)" in line
    assert GTMConfig.load(ROOT / "examples" / "default.toml").digest() in line


def test_a_certificate_signed_by_another_key_is_refused(release, tmp_path):
    line = refused(release, tmp_path, release["config"], release["cert"], release["other_pub"])
    assert "refusing to deploy: certificate" in line and "key" in line  # status depends on verify.py


def test_an_edited_certificate_is_refused_even_when_resigned_by_the_releaser(release, tmp_path):
    doc = copy.deepcopy(release["doc"])
    doc["body"]["steps"][2]["Lambda"] *= 1.5
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(resealed(doc, release["private"])))
    assert "tampered" in refused(release, tmp_path, release["config"], bad, release["pub"])


def test_a_signed_but_not_certified_certificate_is_refused(release, tmp_path):
    """A validly signed certificate whose verdict is not 'certified' (here: no witnesses run)."""
    cert = certify(GTMConfig.load(release["config"]), quick=True, seed=1, progress=False, witnesses={})
    assert cert.verdict != "certified"
    path = tmp_path / "incomplete.json"
    path.write_text(cert.to_json(lambda raw: sign(raw, release["private"])))
    line = refused(release, tmp_path, release["config"], path, release["pub"])
    assert "not certified" in line


def test_certificate_and_public_key_go_together(release, tmp_path):
    r = invoke(["deploy", "init", str(tmp_path / "s"), str(release["config"]), "--certificate", str(release["cert"])])
    assert r.exit_code == 2 and "--public-key" in r.output and not (tmp_path / "s").exists()


@pytest.mark.parametrize("example, claim", [
    ("unsafe_vanishing_threshold.toml", "accuracy.rejection-threshold"),
    ("unsafe_budget.toml", "cost.budget-exceed"),
    ("unsafe_purification.toml", "purification.thresholds"),
])
def test_without_a_certificate_every_certify_refusal_applies(example, claim, tmp_path):
    """The earlier `deploy init` deployed these with exit 0; `gtm certify` refuses each."""
    state = tmp_path / "dep.state"
    line = one_line_error(invoke(["deploy", "init", str(state), str(ROOT / "examples" / example)]))
    assert f"refuses ({claim})" in line and "smallest change that works" in line
    assert not state.exists()


def test_without_a_certificate_a_certifiable_configuration_deploys_uncertified(release, tmp_path):
    state = tmp_path / "dep.state"
    r = invoke(["deploy", "init", str(state), str(release["config"])])
    assert r.exit_code == 0, r.output
    assert "certificate: none (uncertified" in r.output
    assert "certificate" not in read_state_body_unchecked(state)
    r = invoke(["deploy", "status", str(state), "--json", str(tmp_path / "st.json")])
    assert "certificate: none (uncertified" in r.output
    assert json.loads((tmp_path / "st.json").read_text())["certificate"] is None


@pytest.mark.parametrize("point, occurrence", [("create:key_written", 1), ("write:tmp_fsynced", 2),
                                               ("write:renamed", 2)])
def test_init_with_a_certificate_is_atomic(release, tmp_path, monkeypatch, point, occurrence):
    """A fault injected between the key's and the state's write, or inside the state's write: the
    deployment exists certified (the fault came after the state was published) or not at all; it
    never exists uncertified (the certificate is part of the state's first and only write)."""
    import errno

    from gtm_core.deployment import state as S
    from gtm_core.deployment.state import read_certificate

    hits = []

    def hook(name):
        hits.append(name)
        if name == point and hits.count(name) == occurrence:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(S, "fault_hook", hook)
    state = tmp_path / "dep.state"
    r = invoke(["deploy", "init", str(state), str(release["config"]), "--certificate", str(release["cert"]),
                "--public-key", str(release["pub"])])
    monkeypatch.setattr(S, "fault_hook", None)
    if point == "write:renamed":
        assert read_certificate(state)["certificate_sha256"] == release["doc"]["sha256"]
        return
    assert "Input/output error" in one_line_error(r)
    assert sorted(os.listdir(tmp_path)) == ["dep.state.lock"]
