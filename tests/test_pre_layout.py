"""Outputs of the pre-layout commit (tests/fixtures/pre_layout, see its README) still hold.

* ``gtm plan --json`` of every example is byte-identical to the file the old code wrote (once the
  ``usable`` / ``warning`` keys of issue 13 are taken out);
* deployment states and key files written by the old code open, verify (SHA-256, HMAC, the
  GTMConfig digest, the plan identity) and re-seal to the same bytes (the canonical form and key
  header are unchanged), and ``gtm deploy status`` reports them.
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
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))


def test_every_example_has_a_pre_layout_plan():
    assert EXAMPLES and [f"plan_{e}.json" for e in EXAMPLES] == sorted(p.name for p in FIXTURES.glob("plan_*.json"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_plan_json_is_byte_identical(example, tmp_path):
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(cli, ["plan", str(ROOT / "examples" / f"{example}.toml"), "--json", str(out)],
                           prog_name="gtm")
    assert r.exit_code in (0, 1), r.output
    # byte-identical apart from the two keys issue 13 (item 6) added: "usable" and "warning"
    doc = json.loads(out.read_bytes())
    assert doc.pop("usable") is (doc.pop("warning") is None)
    old = (FIXTURES / f"plan_{example}.json").read_bytes()
    assert (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode() == old


def _copy_state(name: str, tmp_path: Path) -> Path:
    for suffix in ("", ".key"):
        dst = tmp_path / f"{name}{suffix}"
        shutil.copyfile(FIXTURES / f"{name}{suffix}", dst)
        dst.chmod(0o600)
    return tmp_path / name


@pytest.mark.parametrize("name,seeded,done", [("state_seeded", True, 3), ("state_os", False, 2)])
def test_old_state_verifies_and_reseals_to_the_same_bytes(name, seeded, done, tmp_path):
    path = _copy_state(name, tmp_path)
    raw = path.read_bytes()
    key = S.read_key(Path(str(path) + ".key"))
    body = S.unseal(raw, key, path)
    assert S.seal(body, key) == raw  # canonical form, SHA-256 and HMAC unchanged
    assert GTMConfig.from_dict(body["config"]).digest() == body["config_sha256"]
    with Deployment.open(path) as dep:  # authenticates, validates, re-plans and compares the plan identity
        assert dep.seeded is seeded and dep.steps_done == done and dep.status == "running"
        assert dep.generation == body["generation"]
    assert path.read_bytes() == raw  # opening writes nothing


def test_a_tampered_old_state_is_refused(tmp_path):
    from gtm_core.errors import StateError

    path = _copy_state("state_os", tmp_path)
    doc = json.loads(path.read_text())
    doc["body"]["steps_done"] += 1
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    with pytest.raises(StateError, match="corrupted"):
        Deployment.open(path)


@pytest.mark.parametrize("name,done", [("state_seeded", 3), ("state_os", 2)])
def test_deploy_status_reports_an_old_state(name, done, tmp_path):
    path = _copy_state(name, tmp_path)
    out = tmp_path / "status.json"
    r = CliRunner().invoke(cli, ["deploy", "status", str(path), "--json", str(out)], prog_name="gtm")
    assert r.exit_code == 0, r.output
    status = json.loads(out.read_text())
    assert status["steps_done"] == done and status["status"] == "running" and status["next_step"] == done + 1
    assert status["config_sha256"] == json.loads((FIXTURES / name).read_text())["body"]["config_sha256"]
