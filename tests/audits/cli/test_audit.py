"""`gtm audit` command line: exit codes, JSON keys, report, broken targets."""

import json
import sys
from pathlib import Path

import pytest

from click.testing import CliRunner

from audits.cli import cli

SERVE = f"{sys.executable} -m audits.serve examples/default.toml"


def _run(args):
    return CliRunner().invoke(cli, ["audit", *args])


def test_violation_exit_1_with_json_and_report(tmp_path):
    out, rep = tmp_path / "r.json", tmp_path / "r.md"
    res = _run(["--target", f"{SERVE} --broken no-step-noise", "--epsilon", "1", "--eps-t", "0.1",
                "--max-samples", "2000000", "--seed", "3", "--json", str(out), "--report", str(rep), "--quiet"])
    assert res.exit_code == 1, res.output
    d = json.loads(out.read_text())
    for key in ("verdict", "epsilon_claimed", "epsilon_lower_bound", "confidence", "witness", "samples", "seconds"):
        assert key in d
    assert d["verdict"] == "violation"
    text = rep.read_text()
    assert text.startswith("# GTM privacy audit") and "**verdict**: violation" in text
    assert "data:image/png;base64," in text and sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.md"]


def test_report_suffix_is_checked_before_any_work(tmp_path):
    out = tmp_path / "r.json"
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--json", str(out),
                "--report", str(tmp_path / "r.txt"), "--quiet"])
    assert res.exit_code == 2 and "must end in .html, .htm or .md" in res.output
    assert list(tmp_path.iterdir()) == []


def test_html_report_and_no_progress_alias(tmp_path):
    rep = tmp_path / "a.html"
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--max-samples", "20000", "--max-T", "3",
                "--seconds", "60", "--report", str(rep), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert rep.read_text().startswith("<!DOCTYPE html>") and [p.name for p in tmp_path.iterdir()] == ["a.html"]
    # 20,000 runs: the audit says its bound is weak
    assert "gtm: warning: only " in res.output and "the lower bound is weak" in res.output


def test_eps_t_list_covers_every_audited_step(tmp_path):
    # like a configuration's per-step list (length horizon), a --eps-t list gives steps 1..L only:
    # an explicit --max-T beyond it is refused (no silent reuse of the last value) ...
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1,0.2", "--max-T", "5", "--quiet"])
    assert res.exit_code == 2 and "--eps-t has 2 per-step values but --max-T is 5" in res.output
    # ... and without --max-T the audit's streams stay within the list
    out = tmp_path / "a.json"
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1,0.1", "--max-samples", "20000",
                "--seconds", "60", "--json", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    w = json.loads(out.read_text())["witness"]
    assert len(w["p"]) <= 2 and len(w["p_prime"]) <= 2


def test_correct_exit_0(tmp_path):
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seconds", "5", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "no-violation-found" in res.output


def test_crashing_target_exit_2_no_json(tmp_path):
    out = tmp_path / "r.json"
    res = _run(["--target", f"{sys.executable} -c 'import sys; sys.exit(4)'", "--epsilon", "1", "--eps-t", "0.1",
                "--seconds", "5", "--json", str(out), "--quiet"])
    assert res.exit_code == 2 and not out.exists()


def test_malformed_target_exit_2(tmp_path):
    body = "import sys\nfor l in sys.stdin: print('{bad', flush=True)"
    res = _run(["--target", f"{sys.executable} -c \"{body}\"", "--epsilon", "1", "--eps-t", "0.1",
                "--seconds", "5", "--quiet"])
    assert res.exit_code == 2


def test_bad_arguments_exit_2(tmp_path):
    assert _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "abc", "--quiet"]).exit_code == 2
    assert _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--confidence", "2", "--quiet"]).exit_code == 2
    assert _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--json",
                 str(tmp_path / "missing" / "x.json"), "--quiet"]).exit_code == 2


def test_sample_budget_makes_the_cli_reproducible(tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seconds", "60", "--max-samples",
                    "300000", "--max-T", "5", "--seed", "9", "--json", str(out), "--quiet"])
        assert res.exit_code == 0, res.output
        outs.append(json.loads(out.read_text()))
    assert outs[0]["epsilon_lower_bound"] == outs[1]["epsilon_lower_bound"]
    assert outs[0]["witness"] == outs[1]["witness"]


# --config: epsilon and eps_t from the configuration the deployment claims --------------------------

def _config_run(tmp_path, *extra):
    out = tmp_path / "c.json"
    res = _run(["--target", SERVE, "--config", "examples/default.toml", "--seconds", "60", "--max-samples",
                "20000", "--max-T", "3", "--seed", "9", "--json", str(out), "--quiet", *extra])
    return res, out


def test_config_gives_the_same_audit_as_the_flags(tmp_path):
    res, out = _config_run(tmp_path)
    assert res.exit_code == 0, res.output
    by_config = json.loads(out.read_text())
    flags = tmp_path / "f.json"
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seconds", "60", "--max-samples",
                "20000", "--max-T", "3", "--seed", "9", "--json", str(flags), "--quiet"])
    assert res.exit_code == 0, res.output
    by_flags = json.loads(flags.read_text())
    from audits.audit_results import without_timings

    by_config, by_flags = without_timings(by_config), without_timings(by_flags)
    assert by_config.pop("claim")["statement"] == 'claim: 1-DP (pure) because evaluation_budget = "none"'
    # the claimed plan also tells the fine family where to be densest (at this budget it is not run at all):
    # only the coverage section's account of it differs
    cov_config, cov_flags = by_config["search"].pop("coverage"), by_flags["search"].pop("coverage")
    assert by_config == by_flags and by_config["epsilon_claimed"] == 1.0
    assert cov_config["fine"]["lengths_near_plan"] == [] and cov_config["fine"]["plan_region_p"] is not None
    assert cov_flags["fine"]["plan_region_p"] is None and len(cov_config["skipped"]) == len(cov_flags["skipped"])


def test_config_and_agreeing_flags(tmp_path):
    res, out = _config_run(tmp_path, "--epsilon", "1", "--eps-t", "0.1")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("flags,word", [(["--epsilon", "2"], "--epsilon"), (["--eps-t", "0.2"], "--eps-t"),
                                        (["--eps-t", "0.1,0.1"], "--eps-t")])
def test_config_and_disagreeing_flags_exit_2_one_line(tmp_path, flags, word):
    res = CliRunner().invoke(cli, ["audit", "--target", SERVE, "--config", "examples/default.toml", "--json",
                                   str(tmp_path / "x.json"), "--quiet", *flags])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gtm: error: ") and word in lines[0] and "disagrees" in lines[0]
    assert not (tmp_path / "x.json").exists()


def test_missing_epsilon_without_config_is_a_usage_error():
    res = _run(["--target", SERVE, "--eps-t", "0.1", "--quiet"])
    assert res.exit_code == 2 and "Missing option '--epsilon'" in res.output
    res = _run(["--target", SERVE, "--epsilon", "1", "--quiet"])
    assert res.exit_code == 2 and "Missing option '--eps-t'" in res.output


def test_invalid_config_exit_2_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(Path("examples/default.toml").read_text().replace("eps_t = 0.1", "eps_t = -0.1"))
    res = _run(["--target", SERVE, "--config", str(bad), "--quiet"])
    assert res.exit_code == 2 and "eps_t" in res.output and len(res.output.strip().splitlines()) == 1


def test_eps_t_flag_follows_the_configuration_rule():
    """eps_t = 0 is allowed at some steps (as in a configuration), not at all of them, never negative."""
    assert _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0", "--quiet"]).exit_code == 2
    assert _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "-0.1", "--quiet"]).exit_code == 2


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


def _capped(tmp_path):
    cfg = tmp_path / "capped.toml"
    cfg.write_text(CAPPED_TOML)
    return cfg, f"{sys.executable} -m audits.serve {cfg}"


def test_capped_config_is_audited_against_its_eps_delta_claim(tmp_path):
    # confidence 0.95, seed 1; the power companion is the forced pure claim below (same config, flagged)
    cfg, serve = _capped(tmp_path)
    out = tmp_path / "r.json"
    res = _run(["--target", serve, "--config", str(cfg), "--seconds", "60", "--seed", "1", "--json", str(out),
                "--quiet"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == 'claim: (1, 0.0111)-DP because evaluation_budget = "refuse"'
    d = json.loads(out.read_text())
    assert d["claim"]["measure"] == "approximate" and d["claim"]["method"] == "hockey-stick"
    assert d["verdict"] == "no-violation-found" and 0 < d["delta_lower_bound"] < d["delta_claimed"]


def test_forced_pure_claim_on_a_capped_config_is_violated(tmp_path):
    cfg, serve = _capped(tmp_path)
    res = _run(["--target", serve, "--config", str(cfg), "--claim", "pure", "--seconds", "60", "--seed", "1",
                "--quiet"])
    assert res.exit_code == 1, res.output
    assert res.output.startswith("claim: 1-DP (pure) because the pure claim was forced")
    assert "verdict: violation" in res.output and "event {halt@1}" in res.output


def test_claim_choice_is_checked_before_any_work(tmp_path):
    cfg, serve = _capped(tmp_path)
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--claim", "pure"])
    assert res.exit_code == 2 and "--claim pure needs --config" in res.output
    rep = tmp_path / "r.html"
    res = _run(["--target", serve, "--config", str(cfg), "--report", str(rep)])
    assert res.exit_code == 2 and "not available for an (epsilon, delta) audit" in res.output
    assert not rep.exists()


def test_uncapped_config_states_its_pure_claim():
    res = _run(["--target", SERVE, "--config", "examples/default.toml", "--max-samples", "20000", "--max-T", "2",
                "--seconds", "60", "--quiet"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == 'claim: 1-DP (pure) because evaluation_budget = "none"'


# budgets: --max-samples alone has no time cap; a clock that runs out first is a budget stop ---------

def test_max_samples_alone_has_no_time_cap_and_seconds_alone_defaults_to_60():
    from audits.cli.audit import DEFAULT_SECONDS, time_budget

    assert time_budget(None, 40_000_000) is None
    assert time_budget(None, None) == DEFAULT_SECONDS == 60.0
    assert time_budget(5.0, 40_000_000) == 5.0 and time_budget(5.0, None) == 5.0


def test_a_clock_that_runs_out_before_the_sample_budget_is_a_budget_stop_not_a_target_failure(tmp_path):
    out = tmp_path / "stop.json"
    res = _run(["--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seconds", "4", "--max-samples",
                "40000000", "--max-T", "3", "--seed", "2", "--json", str(out), "--quiet"])
    assert res.exit_code == 0, res.output  # the correct GTM: no violation, and not exit 2
    assert "budget stop: the audit's time budget (4 s) ran out" in res.output
    doc = json.loads(out.read_text())
    stopped = doc["search"]["budget"]["stopped"]
    assert stopped.startswith("budget stop") and "of the 40,000,000-run sample budget" in stopped
    assert doc["samples"] < 40_000_000 and doc["execution"]["reproducible"] is False
    assert 0.0 <= doc["epsilon_lower_bound"] <= 1.0


# early verdicts: on by default, --no-early-stop turns them off --------------------------------------------

def test_a_flagrant_violation_gets_an_early_verdict_and_no_early_stop_spends_the_budget(tmp_path):
    """The broken GTM without step noise, seed 0, a 4e6-run budget, max-T 3: by default the audit stops at an
    interim look (exit 1, "time to verdict" on stdout, in the JSON and in the report) after far fewer runs than
    the budget; with --no-early-stop it spends the budget, and neither the line nor the JSON key appear."""
    base = ["--target", f"{SERVE} --broken no-step-noise", "--epsilon", "1", "--eps-t", "0.1", "--max-samples",
            "4000000", "--max-T", "3", "--seed", "0", "--quiet"]
    early_json, full_json, rep = tmp_path / "early.json", tmp_path / "full.json", tmp_path / "early.html"
    res = _run(base + ["--json", str(early_json), "--report", str(rep)])
    assert res.exit_code == 1, res.output
    assert "time to verdict:" in res.output and "early verdict at look" in res.output
    doc = json.loads(early_json.read_text())
    assert doc["early_stop"]["time_to_verdict"]["early"] is True and doc["samples"] <= 1_000_000
    assert "time to verdict" in rep.read_text()
    res = _run(base + ["--json", str(full_json), "--no-early-stop"])
    assert res.exit_code == 1, res.output
    assert "time to verdict" not in res.output
    full = json.loads(full_json.read_text())
    assert "early_stop" not in full and full["samples"] > 3_600_000
