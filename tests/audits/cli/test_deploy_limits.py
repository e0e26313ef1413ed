"""`gtm deploy step` at the limits: --steps past the horizon commits the remaining steps
and exits 0 with a note and --json; a commit that cannot be written (ENOSPC) is reported as
state_write_failed, in the state and on the command line, not later as "the process died"."""

import errno
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core.deployment import Deployment
from gtm_core.deployment import runner as dep_runner
from gtm_core.errors import StateError

ROOT = Path(__file__).resolve().parents[3]
SHORT = (ROOT / "examples" / "default.toml").read_text().replace("horizon = 1000", "horizon = 3")


def invoke(args):
    return CliRunner().invoke(cli, args, prog_name="gtm")


@pytest.fixture
def short(tmp_path):
    cfg = tmp_path / "short.toml"
    cfg.write_text(SHORT)
    state = tmp_path / "s"
    assert invoke(["deploy", "init", str(state), "--config", str(cfg)]).exit_code == 0
    return state


def test_steps_past_the_horizon_commit_the_rest_and_exit_0(short, tmp_path):
    out = tmp_path / "out.json"
    r = invoke(["deploy", "step", str(short), "--bernoulli", "0.0", "--steps", "10", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "horizon of 3 steps was reached after 3 of the 10 steps" in r.output
    status = json.loads(out.read_text())
    assert status["steps_done"] == 3 and status["horizon_reached"] and len(status["steps_run"]) == 3
    # nothing left to do: now a one-line refusal, exit 2
    r = invoke(["deploy", "step", str(short), "--bernoulli", "0.0"])
    assert r.exit_code == 2 and "horizon" in r.output


def _enospc_on_commit(monkeypatch):
    real = dep_runner.write_private_atomic
    calls = {"n": 0}

    def write(path, data, *, exclusive):
        calls["n"] += 1
        if calls["n"] == 2:  # the step's writes: 1 = write-ahead record, 2 = commit
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, exclusive=exclusive)

    monkeypatch.setattr(dep_runner, "write_private_atomic", write)


def test_enospc_during_the_commit_is_state_write_failed(short, tmp_path, monkeypatch):
    _enospc_on_commit(monkeypatch)
    r = invoke(["deploy", "step", str(short), "--bernoulli", "0.0"])
    assert r.exit_code == 2 and "state_write_failed" in r.output and "No space left" in r.output
    monkeypatch.undo()
    with Deployment.open(short) as dep:  # not "crashed_during_step"
        assert dep.failure["kind"] == "state_write_failed" and dep.failure["step"] == 1


def test_enospc_for_both_writes_says_what_the_next_open_will_report(short, monkeypatch):
    real = dep_runner.write_private_atomic
    calls = {"n": 0}

    def write(path, data, *, exclusive):
        calls["n"] += 1
        if calls["n"] >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, exclusive=exclusive)

    monkeypatch.setattr(dep_runner, "write_private_atomic", write)
    with Deployment.open(short) as dep:
        with pytest.raises(StateError, match="state_write_failed.*crashed_during_step"):
            dep.step(lambda data=None: -1)
    monkeypatch.undo()
    with Deployment.open(short) as dep:
        assert dep.failure["kind"] == "crashed_during_step"
