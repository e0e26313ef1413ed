"""`--generation-check`: a state rolled back to an older copy of itself is refused
before any step, with examples/generation_check.sh keeping an append-only log."""

import json
import os
import shutil
import signal
import subprocess
import sys
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


def flaky_check(tmp_path, body_of_record: str) -> str:
    """examples/generation_check.sh behind a wrapper that runs ``body_of_record`` instead of a
    record of the generation in $GTM_FAIL_RECORD_GEN (a log outage, or gtm killed, at that record)."""
    wrapper = tmp_path / "flaky_check.sh"
    wrapper.write_text("#!/bin/sh\n"
                       f'if [ "$1" = record ] && [ "$3" = "${{GTM_FAIL_RECORD_GEN:-none}}" ]; then {body_of_record}; fi\n'
                       f'exec {CHECK} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_a_record_lost_after_the_commit_does_not_let_the_pre_step_state_back_in(logged, tmp_path, monkeypatch):
    """The attack: the log is down when step 1's commit (generation 3) is recorded; the pre-step copy
    (generation 1) is restored. Without the write-ahead record the log still said 1, `check` accepted
    the copy and step 1 ran again with fresh noise."""
    check = flaky_check(tmp_path, "echo 'log unavailable' >&2; exit 1")
    backup = tmp_path / "backup"
    shutil.copy2(logged, backup)
    monkeypatch.setenv("GTM_FAIL_RECORD_GEN", "3")
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", check])
    assert r.exit_code == 2 and "could not record generation 3" in r.output
    assert body(logged)["steps_done"] == 1 and body(logged)["generation"] == 3  # step 1 was committed
    monkeypatch.delenv("GTM_FAIL_RECORD_GEN")
    shutil.copy2(backup, logged)
    rolled = logged.read_bytes()
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", check])
    assert r.exit_code == 2 and "generation check refused generation 1" in r.output, r.output
    assert logged.read_bytes() == rolled  # nothing stepped


def test_gtm_killed_between_the_commit_and_the_record(logged, tmp_path):
    """gtm is SIGKILLed by the record of the committed generation (the check command's parent is the
    process supervisor, whose parent is gtm); the restored pre-step copy is refused."""
    check = flaky_check(tmp_path, "kill -9 $(awk '{print $4}' /proc/$PPID/stat); sleep 5; exit 1")
    backup = tmp_path / "backup"
    shutil.copy2(logged, backup)
    env = {**os.environ, "GTM_FAIL_RECORD_GEN": "3", "GTM_GENERATION_LOG": str(tmp_path / "generations.log")}
    out = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "step", str(logged), "--bernoulli", "0.0",
                          "--generation-check", check], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, start_new_session=True)
    assert out.returncode == -signal.SIGKILL, (out.returncode, out.stdout, out.stderr)
    assert body(logged)["steps_done"] == 1  # committed, never recorded
    log = (tmp_path / "generations.log").read_text().split()
    assert log[-1] == "2"  # the write-ahead record: generation 1 is superseded
    shutil.copy2(backup, logged)
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", CHECK])
    assert r.exit_code == 2 and "generation check refused generation 1" in r.output, r.output


def test_a_failed_reservation_refuses_the_step_and_is_undone(logged, tmp_path, monkeypatch):
    check = flaky_check(tmp_path, "exit 1")
    before = logged.read_bytes()
    monkeypatch.setenv("GTM_FAIL_RECORD_GEN", "2")  # the reservation of step 1
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", check])
    assert r.exit_code == 2 and "nothing was stepped" in r.output
    assert logged.read_bytes() == before
    monkeypatch.delenv("GTM_FAIL_RECORD_GEN")
    r = invoke(["deploy", "step", str(logged), "--bernoulli", "0.0", "--generation-check", check])
    assert r.exit_code == 0, r.output  # the undo put the log back at the state's generation
