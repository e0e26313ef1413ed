"""`gtm deploy init/status/step`: happy paths, faults, one-line errors with exit 2, no partial output."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core.reference import NOT_FOR_DEPLOYMENT

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = str(ROOT / "examples" / "default.toml")


def _invoke(args):
    """Through the group's own main (one-line usage errors, exit codes) without a subprocess."""
    runner = CliRunner()
    return runner.invoke(cli, args, prog_name="gtm")


def one_line_error(result):
    assert result.exit_code == 2, (result.exit_code, result.output)
    text = result.stderr if hasattr(result, "stderr") else result.output
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gtm: error:"), text
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def state(tmp_path):
    return str(tmp_path / "dep.state")


def test_init_step_status_roundtrip(state, tmp_path):
    r = _invoke(["deploy", "init", state, "--config", EXAMPLE, "--json", str(tmp_path / "i.json")])
    assert r.exit_code == 0, r.output
    assert "created deployment" in r.output
    assert json.loads((tmp_path / "i.json").read_text())["status"] == "running"
    r = _invoke(["deploy", "step", state, "--bernoulli", "0", "--steps", "3", "--json", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    assert r.output.count("continue") == 3
    payload = json.loads((tmp_path / "s.json").read_text())
    assert payload["steps_done"] == 3 and [s["t"] for s in payload["steps_run"]] == [1, 2, 3]
    assert "eta1" not in json.dumps(payload) and "evaluations" not in json.dumps(payload)
    r = _invoke(["deploy", "step", state, "--bernoulli", "1", "--steps", "5"])
    assert r.exit_code == 0 and "step 4: HALT" in r.output and "step 5" not in r.output
    r = _invoke(["deploy", "status", state, "--json", str(tmp_path / "st.json")])
    assert r.exit_code == 0 and "halted at step 4" in r.output
    assert json.loads((tmp_path / "st.json").read_text())["transcript"] == [["continue", 3], ["halt", 1]]
    line = one_line_error(_invoke(["deploy", "step", state, "--bernoulli", "0"]))
    assert "halted at step 4" in line


def test_seeded_marking_in_every_output(state, tmp_path):
    r = _invoke(["deploy", "init", state, "--config", EXAMPLE, "--seed", "5"])
    assert NOT_FOR_DEPLOYMENT in r.output
    r = _invoke(["deploy", "step", state, "--bernoulli", "0", "--json", str(tmp_path / "o.json")])
    assert NOT_FOR_DEPLOYMENT in r.output
    assert json.loads((tmp_path / "o.json").read_text())["note"] == NOT_FOR_DEPLOYMENT
    assert NOT_FOR_DEPLOYMENT in _invoke(["deploy", "status", state]).output


def test_unseeded_outputs_are_not_marked(state):
    assert NOT_FOR_DEPLOYMENT not in _invoke(["deploy", "init", state, "--config", EXAMPLE]).output
    assert NOT_FOR_DEPLOYMENT not in _invoke(["deploy", "step", state, "--bernoulli", "0"]).output


def test_mechanism_command(state):
    _invoke(["deploy", "init", state, "--config", EXAMPLE])
    cmd = f"{sys.executable} -c \"while True: print(-1)\""
    r = _invoke(["deploy", "step", state, "--mechanism-cmd", cmd, "--steps", "2"])
    assert r.exit_code == 0, r.output
    assert "step 2: continue" in r.output


@pytest.mark.parametrize("body, kind", [
    ("print('maybe')", "mechanism_error"),
    ("print(1)", "mechanism_error"),
    ("import time; time.sleep(30)", "mechanism_timeout"),
])
def test_mechanism_command_faults_fail_the_deployment(state, tmp_path, body, kind):
    _invoke(["deploy", "init", state, "--config", EXAMPLE])
    out = tmp_path / "o.json"
    cmd = f"{sys.executable} -c \"{body}\""
    line = one_line_error(_invoke(["deploy", "step", state, "--mechanism-cmd", cmd, "--timeout", "1",
                                   "--json", str(out)]))
    assert "now failed" in line
    assert not out.exists()  # no partial output
    _invoke(["deploy", "status", state, "--json", str(out)])
    assert json.loads(out.read_text())["failure"]["kind"] == kind


@pytest.mark.parametrize("args, match", [
    (["deploy", "init", "{state}", "--config", "/nonexistent.toml"], "not found"),
    (["deploy", "init", "/nonexistent/dir/s", "--config", EXAMPLE], "does not exist"),
    (["deploy", "status", "{state}"], "no deployment state"),
    (["deploy", "step", "{state}"], "exactly one of"),
    (["deploy", "step", "{state}", "--bernoulli", "nan"], "--bernoulli"),
    (["deploy", "step", "{state}", "--bernoulli", "0", "--mechanism-cmd", "x"], "exactly one of"),
    (["deploy", "step", "{state}", "--bernoulli", "0", "--timeout", "-1"], "--timeout"),
    (["deploy", "step", "{state}", "--bernoulli", "0", "--steps", "x"], "steps"),
    (["deploy", "step", "{state}", "--mechanism-cmd", "'unterminated"], "cannot be parsed"),
    (["deploy", "status", "{state}", "--json", "/nonexistent/dir/o.json"], "does not exist"),
    (["deploy", "bogus"], "No such command"),
    (["deploy", "init", "{state}"], "--config"),
    (["deploy", "init", "{state}", EXAMPLE, "--config", EXAMPLE], "not both"),
])
def test_bad_usage_is_one_line_exit_2(state, args, match):
    args = [a.replace("{state}", state) for a in args]
    assert match in one_line_error(_invoke(args))


def test_corrupted_state_is_refused_and_left_alone(state):
    _invoke(["deploy", "init", state, "--config", EXAMPLE])
    Path(state).write_bytes(Path(state).read_bytes()[:-40])
    before = Path(state).read_bytes()
    assert "corrupted" in one_line_error(_invoke(["deploy", "status", state]))
    assert Path(state).read_bytes() == before


def test_real_subprocess_one_line_error_and_exit_code(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    state = str(tmp_path / "s")
    assert _invoke(["deploy", "init", state, "--config", EXAMPLE]).exit_code == 0
    p = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "init", state, "--config", EXAMPLE],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, start_new_session=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "already exists" in p.stderr


def test_real_subprocess_a_failed_step_is_one_line(tmp_path):
    """A mechanism fault fails the deployment: exit 2 and exactly one line on stderr. The runner's
    warning ("deployment ... failed at step 1") used to reach stderr through Python's last-resort
    logging handler as a second line (in-process runs hid it: pytest captures logging)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    state = str(tmp_path / "s")
    assert _invoke(["deploy", "init", state, "--config", EXAMPLE]).exit_code == 0
    p = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "step", state, "--mechanism-cmd",
                        f"{sys.executable} -c \"print(2)\"", "--timeout", "20"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, start_new_session=True)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("gtm: error: step 1:"), p.stderr
    assert "now failed" in p.stderr


def test_init_takes_config_as_an_argument_too(state):
    # CONFIG is positional in every other verb; --config stays accepted
    r = _invoke(["deploy", "init", state, EXAMPLE])
    assert r.exit_code == 0, r.output
    assert "created deployment" in r.output
