"""`gtm exact` verb: output, JSON, exit codes (0 ok, 1 violation, 2 bad input)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from audits.cli import exact as cmd_exact
from audits.cli import cli
from gtm_core import make_plan as real_make_plan
from gtm_core.exact import perturbed_plan


def _run(args):
    return CliRunner().invoke(cli, ["exact", *args])


def test_exact_prints_every_transcript_and_writes_json(tmp_path):
    out = tmp_path / "r.json"
    r = _run(["examples/default.toml", "--p", "0.3,0.02", "--p-prime", "0.29,0.021", "--digits", "12",
              "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "halt" in r.output and "continue" in r.output and "violations: 0" in r.output
    data = json.loads(out.read_text())
    assert data["ok"] is True and data["violations"] == 0
    assert len(data["transcripts"]) == 4
    assert {"P", "P_prime", "log_ratio", "bound", "ok"} <= set(data["transcripts"][0])
    assert abs(float(data["total"]) - 1) < 1e-10


def test_exact_certified_flag(tmp_path):
    r = _run(["examples/default.toml", "--p", "0.3", "--p-prime", "0.31", "--digits", "10", "--certified"])
    assert r.exit_code == 0, r.output
    assert "certified enclosures" in r.output


def test_exact_exits_1_on_a_violation(monkeypatch, tmp_path):
    """A plan with tau2 four times too small still claims epsilon: the verb must flag it."""
    monkeypatch.setattr(cmd_exact, "make_plan", lambda c: perturbed_plan(real_make_plan(c), tau2_factor=0.25))
    out = tmp_path / "v.json"
    r = _run(["examples/default.toml", "--p", "0.5244,0.000001", "--p-prime", "0.4745,0.0000011",
              "--digits", "10", "--json", str(out)])
    assert r.exit_code == 1, r.output
    assert "NO" in r.output
    assert json.loads(out.read_text())["violations"] >= 1


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--p", "0.3", "--p-prime", "0.2"], "not neighbours"),
        (["--p", "0.3,0.3", "--p-prime", "0.3"], "same length"),
        (["--p", "1.3", "--p-prime", "0.3"], "probabilities"),
        (["--p", "abc", "--p-prime", "0.3"], "comma-separated"),
        (["--p", "0.3", "--p-prime", "0.3", "--digits", "2"], "--digits"),
    ],
)
def test_exact_bad_input_exits_2_with_one_line(args, msg, tmp_path):
    out = tmp_path / "never.json"
    r = _run(["examples/default.toml", *args, "--json", str(out)])
    assert r.exit_code == 2
    assert msg in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not out.exists()


def test_exact_missing_config_exits_2(tmp_path):
    r = _run([str(tmp_path / "nope.toml"), "--p", "0.3", "--p-prime", "0.3"])
    assert r.exit_code == 2
