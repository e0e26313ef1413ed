"""`gtm tune` (audits/cli/tune.py): exit codes and the configuration it writes.

The searches take ~10 s of CPU each, so the end-to-end cases are marked slow; usage errors are fast.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from audits.cli import cli, main
from gtm_core import GTMConfig, make_plan

BASE = ["tune", "--epsilon", "1", "--eps-t", "0.1", "--p-star", "0.5", "--horizon", "100"]


def _run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _exit_code(args) -> int:
    """What a user sees: audits.cli.main ends in sys.exit with the verb's code."""
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code


@pytest.mark.parametrize("extra, message", [
    ([], "exactly one of --p-bar and --max-evaluations"),
    (["--p-bar", "0.001", "--max-evaluations", "100"], "exactly one of"),
])
def test_usage_errors_exit_2(extra, message):
    with pytest.raises(SystemExit) as exc:
        cli.main(args=BASE + extra, prog_name="gtm")
    assert exc.value.code == 2


def test_bad_input_exit_2_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(args=["tune", "--epsilon", "1", "--eps-t", "2", "--p-star", "0.5", "--horizon", "10",
                       "--p-bar", "0.01"], prog_name="gtm")
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "eps_t must be below epsilon" in err[0]


@pytest.mark.slow
def test_tune_writes_a_config_that_plan_accepts(tmp_path):
    out, js = tmp_path / "h.toml", tmp_path / "h.json"
    assert _exit_code(BASE + ["--p-bar", "0.00142931", "--out", str(out), "--json", str(js)]) == 0
    cfg = GTMConfig.load(out)
    assert cfg.gtm.parameterization == "horizon" and cfg.gtm.p_bar == 0.00142931
    plan = make_plan(cfg)  # re-certifies in arb
    assert plan.step(100).p_bar == 0.00142931
    payload = json.loads(js.read_text())
    assert payload["chosen"]["certified_failure_upper"] <= 0.05
    assert (tmp_path / "h.toml.frontier.png").exists()
    refs = {r["planner"] for r in payload["references"]}
    assert refs == {"theorem21", "exact_noise"}
    r = _run(["plan", str(out), "--steps", "1,100"])
    assert r.exit_code == 0 and "horizon" in r.output


@pytest.mark.slow
def test_impossible_request_exits_1_with_best_value(tmp_path):
    js = tmp_path / "x.json"
    assert _exit_code(BASE + ["--p-bar", "0.45", "--json", str(js)]) == 1
    assert json.loads(js.read_text())["status"] == "not-achievable"
    assert "largest certifiable p_bar" in json.loads(js.read_text())["message"]
    best = json.loads(js.read_text())["best"]["p_bar"]
    assert 0.005 < best < 0.45
