"""Outputs pinned before the reshaping of ``audits/`` (fixtures made at commit f9d3f6d).

* A seeded ``--max-samples`` audit is bit-for-bit reproducible from its seed (same seed twice, same
  JSON apart from timings). The fixture ``audit_seed3.json`` was written by an earlier search that
  proposed other candidates, so it is not compared byte for byte.
* A ``--quick`` certificate made before the move still verifies (``certify --verify``), and a new
  one makes the same claims (timing, version and provenance fields aside; the audit and exact-search
  witnesses run on wall / CPU-time budgets, so only their ids, statements, witness kinds and
  statuses are compared).

Fixture command (from the repository root, at f9d3f6d):
    python -m audits.cli certify examples/default.toml --quick --seed 1 --json cert_quick.json
(the certificate is stored gzipped).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from audits.audit_results import without_timings

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "pre_layout"

# claims whose witnesses run on time budgets: their numbers are not reproducible run to run
TIME_BUDGETED = {"privacy.audit", "privacy.exact-worst-case", "provenance"}


def _gtm(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "audits.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _without_timings(doc: dict) -> dict:
    """The document without its wall-clock fields (total seconds, placement, seconds used by the budget)."""
    return without_timings(json.loads(json.dumps(doc)))


def _seeded_audit(tmp_path, seed: int, tag: str = "") -> dict:
    out = tmp_path / f"audit{seed}{tag}.json"
    res = _gtm("audit", "--target", f"{sys.executable} -m audits.serve examples/default.toml", "--epsilon", "1",
               "--eps-t", "0.1", "--seed", str(seed), "--max-samples", "200000", "--seconds", "600", "--max-T", "10",
               "--json", str(out), "--quiet")
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


def test_seeded_max_samples_audit_is_deterministic(tmp_path):
    """A seeded --max-samples audit is bit-for-bit reproducible from its seed (timings aside): this pins
    that every random draw of the auditor (selection, refinement, validation, Poisson run counts) comes
    from the seed. (The pre-layout fixture audit_seed3.json pinned an earlier search's output; the
    current search proposes other candidates, so that fixture is not compared.)"""
    first, second = _seeded_audit(tmp_path, 3, "a"), _seeded_audit(tmp_path, 3, "b")
    assert json.dumps(_without_timings(first), sort_keys=True) == json.dumps(_without_timings(second), sort_keys=True)


def test_seeded_audit_pin_detects_a_changed_seed(tmp_path):
    """Power of the determinism test above: a different seed gives a different document."""
    a, b = _seeded_audit(tmp_path, 3), _seeded_audit(tmp_path, 4)
    assert _without_timings(a) != _without_timings(b)
    assert a["witness"] != b["witness"] or a["per_event"] != b["per_event"]


def _old_certificate(tmp_path) -> Path:
    path = tmp_path / "cert_quick.json"
    path.write_bytes(gzip.decompress((FIXTURES / "cert_quick.json.gz").read_bytes()))
    return path


def test_pre_layout_certificate_is_recognised_as_an_earlier_schema(tmp_path):
    """It verified unchanged after the layout move. Certificate schema 2 binds the witnesses to
    the configuration and makes them re-runnable, so a schema-1 certificate
    can no longer be *established*: it is reported as made by an earlier gtm (exit 1), not as
    valid and not as tampered."""
    res = _gtm("certify", "--verify", str(_old_certificate(tmp_path)), "--no-progress")
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.startswith("mismatched") and "re-certify" in res.stdout


def test_pre_layout_certificate_edit_is_detected(tmp_path):
    """Power of the check above: an edited number is reported (exit 1)."""
    path = _old_certificate(tmp_path)
    doc = json.loads(path.read_text())
    doc["body"]["steps"][3]["p_bar"] *= 1.000001
    path.write_text(json.dumps(doc))
    res = _gtm("certify", "--verify", str(path), "--no-progress")
    assert res.returncode == 1 and "tampered" in res.stdout


def _comparable_claim(claim: dict) -> dict:
    c = json.loads(json.dumps(claim))
    if c["id"] in TIME_BUDGETED:
        return {k: c[k] for k in ("id", "category", "statement", "status")} | {"witness": c["witness"]["kind"]}
    if c["id"] == "privacy.lemma-checks":
        # run time, cache use and the cache key (a hash of proofs/*.py) are not claims
        for k in ("seconds", "cached"):
            c["values"].pop(k)
        for lemma in c["values"]["lemmas"].values():
            lemma.pop("seconds")
        c["witness"]["details"].pop("cache_key")
    return c


@pytest.mark.slow
def test_quick_certificate_makes_the_same_claims(tmp_path):
    out = tmp_path / "cert.json"
    res = _gtm("certify", "examples/default.toml", "--quick", "--seed", "1", "--json", str(out), "--no-progress")
    assert res.returncode == 0, res.stdout + res.stderr
    before = json.loads(gzip.decompress((FIXTURES / "cert_quick.json.gz").read_bytes()))["body"]
    after = json.loads(out.read_text())["body"]
    for key in ("format", "verdict", "mode", "config", "config_sha256", "horizon", "globals", "refusals", "steps"):
        assert after[key] == before[key], key
    assert [c["id"] for c in after["claims"]] == [c["id"] for c in before["claims"]]
    for a, b in zip(after["claims"], before["claims"]):
        assert _comparable_claim(a) == _comparable_claim(b), a["id"]
