"""Outputs pinned before the issue-12 reshaping of ``audits/`` (fixtures made at commit f9d3f6d).

* A seeded ``--max-samples`` audit is bit-for-bit reproducible from its seed: its JSON must equal
  the one written before the move, apart from the ``seconds`` timing field. This pins the order of
  every random draw of the auditor (selection, refinement, validation, Poisson run counts).
* A ``--quick`` certificate made before the move still verifies (``certify --verify``), and a new
  one makes the same claims (timing, version and provenance fields aside; the audit and exact-search
  witnesses run on wall / CPU-time budgets, so only their ids, statements, witness kinds and
  statuses are compared).

The audit fixture was regenerated once, by issue 13 item 4: the budget-stop events ("stop=t", "stop")
joined the pre-registered event space, which adds their (empty) rows to ``per_event`` and widens the
Bonferroni intervals and the selection's ranking pessimism; witness, bound and verdict are unchanged.

Fixture commands (from the repository root, at f9d3f6d; the audit one again after issue 13 item 4):
    python -m audits.cli audit --target "python -m audits.serve examples/default.toml" --epsilon 1 \
        --eps-t 0.1 --seed 3 --max-samples 200000 --seconds 600 --json audit_seed3.json
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

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "pre_layout"

# claims whose witnesses run on time budgets: their numbers are not reproducible run to run
TIME_BUDGETED = {"privacy.audit", "privacy.exact-worst-case", "provenance"}


def _gtm(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "audits.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _without_seconds(doc: dict) -> dict:
    doc = dict(doc)
    doc.pop("seconds")
    doc.pop("execution", None)  # where and how fast it ran (issue 19): placement and timing only
    return doc


def _seeded_audit(tmp_path, seed: int) -> dict:
    out = tmp_path / "audit.json"
    res = _gtm("audit", "--target", f"{sys.executable} -m audits.serve examples/default.toml", "--epsilon", "1",
               "--eps-t", "0.1", "--seed", str(seed), "--max-samples", "200000", "--seconds", "600", "--json",
               str(out), "--quiet")
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


def test_seeded_max_samples_audit_is_unchanged(tmp_path):
    before = json.loads((FIXTURES / "audit_seed3.json").read_text())
    after = _seeded_audit(tmp_path, 3)
    # the target string names the interpreter; the fixture's was "python"
    before["target"] = after["target"] = None
    assert _without_seconds(after) == _without_seconds(before)


def test_seeded_audit_pin_detects_a_changed_seed(tmp_path):
    """Power of the pin above: a different seed gives a different document."""
    before = json.loads((FIXTURES / "audit_seed3.json").read_text())
    after = _seeded_audit(tmp_path, 4)
    assert after["witness"] != before["witness"] or after["per_event"] != before["per_event"]


def _old_certificate(tmp_path) -> Path:
    path = tmp_path / "cert_quick.json"
    path.write_bytes(gzip.decompress((FIXTURES / "cert_quick.json.gz").read_bytes()))
    return path


def test_pre_layout_certificate_is_recognised_as_an_earlier_schema(tmp_path):
    """It verified unchanged after the layout move (issue 12). Issue 14 then bound the witnesses to
    the configuration and made them re-runnable (certificate schema 2), so a schema-1 certificate
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
