"""Outputs of the pre-layout commit (tests/fixtures/pre_layout, see its README) still hold.

* ``gtm plan --json`` of every example is byte-identical to the file the old code wrote (once the
  ``usable`` / ``warning`` keys added since are taken out), but for the fields computed from beta_t,
  which moved by a few ulps (relative 5e-16) when beta_t became rounded down to omega_t beta;
* deployment states written by the old code are still authentic (canonical form and key header
  unchanged) but, since state version 2 (exact sampling), are refused - by the API and
  by ``gtm deploy status`` / ``step`` - with the migration message (one line, exit 2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core.config import GTMConfig
from gtm_core.deployment import Deployment
from gtm_core.deployment import state as S

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "pre_layout"
# the fields computed from beta_t, moved by its directed rounding (see test_plan_json_is_byte_identical)
ULP_FIELDS = ("beta_t", "beta_I", "beta_II", "Lambda", "lambda_max", "p_bar", "continue_threshold")
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))


def test_every_example_has_a_pre_layout_plan():
    assert EXAMPLES and [f"plan_{e}.json" for e in EXAMPLES] == sorted(p.name for p in FIXTURES.glob("plan_*.json"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_plan_json_is_byte_identical(example, tmp_path):
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(cli, ["plan", str(ROOT / "examples" / f"{example}.toml"), "--json", str(out)],
                           prog_name="gtm")
    assert r.exit_code in (0, 1), r.output
    # byte-identical apart from the two keys added since: "usable" and "warning"
    doc = json.loads(out.read_bytes())
    assert doc.pop("usable") is (doc.pop("warning") is None)
    # and the budget policy's privacy claim (added with the policy); unsafe_budget now enforces its
    # budget, which is its only configuration change: without it, the old configuration and hash
    privacy = doc.pop("privacy")
    assert privacy["pure"] is (privacy["evaluation_budget"] == "none")
    if example == "unsafe_budget":
        assert doc["config"]["gtm"].pop("evaluation_budget") == "refuse"
        doc["config_sha256"] = GTMConfig.from_dict(doc["config"]).digest()
    old = (FIXTURES / f"plan_{example}.json").read_bytes()
    # budget_exceed_probability is a scipy float search; its last bits vary with the scipy build
    old_doc = json.loads(old)
    for a, b in zip(doc["steps"], old_doc["steps"], strict=True):
        assert a.pop("budget_exceed_probability") == pytest.approx(b.pop("budget_exceed_probability"), rel=1e-9)
        # beta_t is now rounded down to at most omega_t beta (Definition 7), proved in arb, so the
        # shares sum to at most beta; it and what is computed from it moved by a few ulps, no more
        assert a["beta_t"] <= b["beta_t"]
        for key in ULP_FIELDS:
            assert a.pop(key) == pytest.approx(b.pop(key), rel=1e-15, abs=0)
    assert json.dumps(doc, indent=2, sort_keys=True) == json.dumps(old_doc, indent=2, sort_keys=True)


def _copy_state(name: str, tmp_path: Path) -> Path:
    for suffix in ("", ".key"):
        dst = tmp_path / f"{name}{suffix}"
        shutil.copyfile(FIXTURES / f"{name}{suffix}", dst)
        dst.chmod(0o600)
    return tmp_path / name


# State version 2 (exact sampling) deliberately changed what happens to these states:
# their eta_1 was drawn by the float64 sampler and cannot be made exact after the fact, so they are
# REFUSED (stepping, opening and `gtm deploy status` alike) with a message that says why and what to
# do. Their canonical form and key header are unchanged: the HMAC still verifies by hand.


@pytest.mark.parametrize("name,seeded,done", [("state_seeded", True, 3), ("state_os", False, 2)])
def test_old_state_is_still_authentic_but_refused_with_the_migration_message(name, seeded, done, tmp_path):
    import hashlib
    import hmac

    from gtm_core.errors import StateError

    path = _copy_state(name, tmp_path)
    raw = path.read_bytes()
    key = S.read_key(Path(str(path) + ".key"))
    doc = json.loads(raw)
    assert doc["version"] == 1 and isinstance(doc["body"]["secret"]["eta1"], float)
    canon = S.canonical_body(doc["body"])
    assert hmac.compare_digest(hmac.new(key, canon, hashlib.sha256).hexdigest(), doc["hmac_sha256"])
    assert doc["body"]["seeded"] is seeded and doc["body"]["steps_done"] == done
    with pytest.raises(StateError, match="version-1 state whose eta_1 was drawn by the float64 sampler"):
        S.unseal(raw, key, path)
    with pytest.raises(StateError, match="retire it and start a new deployment"):
        Deployment.open(path)
    assert path.read_bytes() == raw  # refusing writes nothing


def test_a_tampered_old_state_is_refused(tmp_path):
    from gtm_core.errors import StateError

    path = _copy_state("state_os", tmp_path)
    doc = json.loads(path.read_text())
    doc["body"]["steps_done"] += 1
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    with pytest.raises(StateError):
        Deployment.open(path)


@pytest.mark.parametrize("name", ["state_seeded", "state_os"])
@pytest.mark.parametrize("verb", [["status"], ["step", "--bernoulli", "0.5"]])
def test_deploy_refuses_an_old_state_in_one_line(name, verb, tmp_path):
    path = _copy_state(name, tmp_path)
    raw = path.read_bytes()
    out = tmp_path / "out.json"
    r = CliRunner().invoke(cli, ["deploy", verb[0], str(path), *verb[1:], "--json", str(out)], prog_name="gtm")
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "version-1 state" in lines[0] and "gtm deploy init" in lines[0]
    assert "Traceback" not in r.output and not out.exists() and path.read_bytes() == raw
