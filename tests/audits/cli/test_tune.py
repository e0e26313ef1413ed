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


def _horizon_example(**gtm):
    from pathlib import Path

    c = GTMConfig.load(Path(__file__).resolve().parents[3] / "examples" / "horizon.toml").to_dict()
    return GTMConfig.from_dict({**c, "gtm": {**c["gtm"], **gtm}})


def test_plan_screen_is_gtm_plans_refusal(tmp_path):
    """`gtm tune` screens its design with `gtm plan`'s own check: it passes the example and refuses, with
    `gtm plan`'s reason, a certified design whose p_bar/p* is below the usability floor."""
    from audits.cli.tune import plan_screen

    assert plan_screen(_horizon_example()) is None
    tiny = _horizon_example(p_bar=4.013e-7)  # smaller p_bar: the union bound still certifies
    reason, best = plan_screen(tiny)
    assert "refused by `gtm plan`" in reason and "unusable configuration" in reason
    assert best == {"usable_p_bar_min": pytest.approx(1e-4 * 0.5)}
    path = tmp_path / "tiny.toml"
    path.write_text(tiny.to_toml())
    r = _run(["plan", str(path)])
    assert r.exit_code == 1


@pytest.mark.slow
def test_a_request_below_the_usability_floor_is_not_achievable(tmp_path):
    """eps_t/eps = 0.25, T = 10: the search certifies a c = 0 design at p_bar = 4.013e-7, which `gtm plan`
    refuses (p_bar/p* = 8e-7 < 1e-4); `gtm tune` reports it not achievable instead of offering it."""
    js, out = tmp_path / "x.json", tmp_path / "x.toml"
    args = ["tune", "--epsilon", "1", "--eps-t", "0.25", "--p-star", "0.5", "--horizon", "10",
            "--p-bar", "4.013e-7", "--json", str(js), "--out", str(out)]
    assert _exit_code(args) == 1
    doc = json.loads(js.read_text())
    assert doc["status"] == "not-achievable" and "refused by `gtm plan`" in doc["message"]
    assert doc["best"]["usable_p_bar_min"] == pytest.approx(5e-5)
    assert not out.exists()
