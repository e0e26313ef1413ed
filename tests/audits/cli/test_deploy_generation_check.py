"""`--generation-check` (issue 14): a state rolled back to an older copy of itself is refused
before any step, with examples/generation_check.sh keeping an append-only log."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = str(ROOT / "examples" / "default.toml")
CHECK = str(ROOT / "examples" / "generation_check.sh")


def invoke(args):
    return CliRunner().invoke(cli, args, prog_name="gtm")


@pytest.fixture
def logged(tmp_path, monkeypatch):
    monkeypatch.setenv("GTM_GENERATION_LOG", str(tmp_path / "generations.log"))
    state = tmp_path / "s"
    r = invoke(["deploy", "init", str(state), "--config", EXAMPLE, "--generation-check", CHECK])
    assert r.exit_code == 0, r.output
    return state


def body(state):
    return json.loads(Path(state).read_text())["body"]


def test_the_log_follows_the_state(logged, tmp_path):
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--steps", "3", "--generation-check", CHECK])
    assert r.exit_code == 0, r.output
    last = (tmp_path / "generations.log").read_text().splitlines()[-1].split()
    assert last == [body(logged)["deployment_id"], str(body(logged)["generation"])]


def test_a_rolled_back_state_is_refused_before_any_step(logged, tmp_path):
    backup = tmp_path / "backup"
    shutil.copy2(logged, backup)  # the operator's backup at step 0
    assert invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--steps", "2",
                   "--generation-check", CHECK]).exit_code == 0
    shutil.copy2(backup, logged)  # the rollback: validly authenticated, two steps earlier
    rolled = logged.read_bytes()
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", CHECK])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "generation check refused generation 1" in lines[0]
    assert "the log says generation 5, the state file says 1" in lines[0]
    assert logged.read_bytes() == rolled  # nothing stepped, nothing written
    # power companion: without the check the same rollback would be stepped again
    assert invoke(["deploy", "step", str(logged), "--bernoulli", "0.0"]).exit_code == 0
    assert body(logged)["steps_done"] == 1


def test_a_missing_check_program_is_refused_before_opening(logged):
    before = logged.read_bytes()
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", "/nonexistent"])
    assert r.exit_code == 2 and "--generation-check" in r.output
    assert logged.read_bytes() == before
