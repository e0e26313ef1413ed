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


CAPPED_TOML = """[gtm]
epsilon = 1.0
parameterization = "theorem21"
theta = 1.0
gamma = 2.0
beta = 0.05
evaluation_budget = "refuse"

[stream]
eps_t = 0.5
p_star = 0.5
horizon = 10
"""


def test_exact_on_a_capped_configuration_reports_pure_losses_and_checks_eps_delta(tmp_path):
    """The deployed capped law at the pair: the halting loss 7.05 breaks the pure bound (reported), the
    (eps, delta) claim holds (the verdict: exit 0)."""
    cfg = tmp_path / "capped.toml"
    cfg.write_text(CAPPED_TOML)
    out = tmp_path / "c.json"
    r = _run([str(cfg), "--p", "1e-7", "--p-prime", "1.6487e-7", "--digits", "12", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "refused" in r.output and "claim: (1, 0.0111" in r.output and "holds on this pair" in r.output
    data = json.loads(out.read_text())
    assert data["evaluation_budget"] == "refuse" and data["claim"]["kind"] == "approximate"
    assert data["pure_ok"] is False and data["violations"] >= 1 and data["ok"] is True
    assert float(data["max_loss"]) == pytest.approx(7.0523, abs=2e-3)
    a = data["approximate"]
    assert a["ok"] is True and 3.67e-4 < a["delta_found_upper"] < 3.68e-4 < a["delta_claimed"]
    assert {t["transcript"] for t in data["transcripts"]} == {"halt", "continue", "refused"}


def test_exact_capped_fails_a_mutated_smaller_delta_claim(monkeypatch, tmp_path):
    """A capped plan that claims a delta below the pair's exact delta_eps is flagged: exit 1."""
    cfg = tmp_path / "capped.toml"
    cfg.write_text(CAPPED_TOML)

    class Smaller:
        def __init__(self, base):
            self.base = base

        def __getattr__(self, name):
            return getattr(self.base, name)

        def privacy_delta(self):
            return 1e-4

    monkeypatch.setattr(cmd_exact, "make_plan", lambda c: Smaller(real_make_plan(c)))
    r = _run([str(cfg), "--p", "1e-7", "--p-prime", "1.6487e-7", "--digits", "10"])
    assert r.exit_code == 1, r.output
    assert "VIOLATED" in r.output


def test_exact_uncapped_states_the_pure_claim(tmp_path):
    r = _run(["examples/default.toml", "--p", "0.3", "--p-prime", "0.31", "--digits", "10"])
    assert r.exit_code == 0, r.output
    assert "(pure; evaluation_budget = \"none\"): holds" in r.output and "refused" not in r.output


def test_exact_certified_is_refused_under_a_budget_with_one_line(tmp_path):
    cfg = tmp_path / "capped.toml"
    cfg.write_text(CAPPED_TOML)
    r = _run([str(cfg), "--p", "0.3", "--p-prime", "0.31", "--certified"])
    assert r.exit_code == 2 and "certified" in r.output
    assert len(r.output.strip().splitlines()) == 1
