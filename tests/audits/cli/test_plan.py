"""`gtm plan CONFIG [--steps ...] [--json PATH]` (docs/cli.md).

Most cases run in-process with click's CliRunner; one test runs `python -m audits.cli` in a
subprocess (twice) to check what a user really sees (exit code, one stderr line, no traceback).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core.config import GTMConfig
from gtm_core.planners import make_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
DEFAULT = EXAMPLES / "default.toml"

GOOD_TOML = """\
[gtm]
epsilon = 1.0
parameterization = "theorem21"
theta = 1.0
gamma = 1.5
beta = 0.05

[stream]
eps_t = 0.1
delta_t = 0.0
p_star = 0.5
horizon = 1000
"""


def run(*args):
    result = CliRunner().invoke(cli, ["plan", *map(str, args)], prog_name="gtm")
    return result


def _rows(stdout: str) -> list[list[str]]:
    lines = stdout.strip().splitlines()
    return [line.split() for line in lines[2:]]


# --- success ---------------------------------------------------------------------------


def test_default_example_prints_globals_and_columns():
    r = run(DEFAULT)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    lines = r.stdout.strip().splitlines()
    head = lines[0]
    for key in ("parameterization=theorem21", "tau1=3", "mu1=13.1460799", "tau2=3", "epsilon=1"):
        assert key in head
    assert lines[1].split() == ["t", "s", "c", "rho", "Lambda", "p_bar", "lambda_max"]
    rows = _rows(r.stdout)
    assert [row[0] for row in rows] == ["1", "10", "100", "1000"]  # default: powers of 10 + horizon
    assert rows[0][:3] == ["1", "+1", "282"]
    assert float(rows[0][3]) == pytest.approx(679.0568, abs=5e-5)
    assert float(rows[0][4]) == pytest.approx(16.0662, abs=5e-5)
    assert float(rows[0][5]) == pytest.approx(0.020748, abs=5e-7)


def test_flipped_example_has_s_minus_one():
    r = run(EXAMPLES / "flipped.toml", "--steps", "1")
    assert r.exit_code == 0
    row = _rows(r.stdout)[0]
    assert row[:3] == ["1", "-1", "282"]
    assert float(row[3]) == pytest.approx(4609.569, abs=5e-4)
    assert float(row[6]) == float(row[3])  # lambda_max = rho when flipped


def test_theorem23_example_shows_per_step_tau2():
    r = run(EXAMPLES / "theorem23.toml", "--steps", "1,2")
    assert r.exit_code == 0
    lines = r.stdout.strip().splitlines()
    assert "parameterization=theorem23" in lines[0] and "tau2=" not in lines[0]
    assert lines[1].split()[-1] == "tau2"
    plan = make_plan(GTMConfig.load(EXAMPLES / "theorem23.toml"))
    for row, t in zip(_rows(r.stdout), (1, 2)):
        assert float(row[-1]) == pytest.approx(plan.step(t).tau2, rel=1e-7)


def test_steps_option_selects_rows():
    r = run(DEFAULT, "--steps", "1,5,1000")
    assert r.exit_code == 0
    assert [row[0] for row in _rows(r.stdout)] == ["1", "5", "1000"]


def test_default_steps_end_at_a_horizon_that_is_not_a_power_of_ten(tmp_path):
    p = tmp_path / "h.toml"
    p.write_text(GOOD_TOML.replace("horizon = 1000", "horizon = 37"))
    r = run(p)
    assert [row[0] for row in _rows(r.stdout)] == ["1", "10", "37"]


def test_json_output_content(tmp_path):
    out = tmp_path / "plan.json"
    r = run(DEFAULT, "--steps", "1,10", "--json", out)
    assert r.exit_code == 0
    data = json.loads(out.read_text())
    cfg = GTMConfig.load(DEFAULT)
    plan = make_plan(cfg)
    assert data["config"] == cfg.to_dict()
    assert data["config_sha256"] == cfg.digest()
    g = data["globals"]
    assert g["parameterization"] == "theorem21"
    assert g["tau1"] == plan.tau1 and g["mu1"] == plan.mu1 and g["epsilon"] == 1.0
    assert g["tau2"] == plan.step(1).tau2
    assert [s["t"] for s in data["steps"]] == [1, 10]
    for row in data["steps"]:
        want = plan.step(row["t"]).to_dict()
        for key in ("t", "s", "c", "rho", "Lambda", "p_bar", "lambda_max", "tau2", "beta_t",
                    "beta_I", "beta_II", "phi", "evaluation_budget", "halt_threshold",
                    "continue_threshold"):
            assert row[key] == want[key], key
    assert all(k == k.lower() or k in ("Lambda", "beta_I", "beta_II") for k in data["steps"][0])
    # the table printed to stdout is the same plan
    assert _rows(r.stdout)[0][2] == str(data["steps"][0]["c"])


# --- malformed input: exit 2, one line on stderr, no traceback, no JSON file ----------


BAD_CONFIGS = {
    "missing_key": (GOOD_TOML.replace("gamma = 1.5\n", ""), "missing key [gtm].gamma"),
    "gamma_one": (GOOD_TOML.replace("gamma = 1.5", "gamma = 1.0"), "gamma must be in (1, 2], got 1.0"),
    "beta_zero": (GOOD_TOML.replace("beta = 0.05", "beta = 0.0"), "beta must be in (0, 1), got 0.0"),
    "nan": (GOOD_TOML.replace("theta = 1.0", "theta = nan"), "theta must be finite, got nan"),
    "list_length": (GOOD_TOML.replace("p_star = 0.5", "p_star = [0.5, 0.6]"),
                    "p_star must be a number or a list of length horizon=1000, got a list of length 2"),
    "not_toml": ("[gtm\nepsilon = 1", "not valid TOML"),
    "unknown_key": (GOOD_TOML.replace("theta = 1.0", "theta = 1.0\nthetta = 2"),
                    "unknown key(s) in [gtm]: thetta"),
    "string_value": (GOOD_TOML.replace("eps_t = 0.1", 'eps_t = "0.1"'),
                     "eps_t must be a real number, got '0.1'"),
    "huge_integer": (GOOD_TOML.replace("epsilon = 1.0", "epsilon = " + "9" * 400),
                     "epsilon must be finite, got 9999"),
    "overflow": (GOOD_TOML.replace("epsilon = 1.0", "epsilon = 0.01").replace("eps_t = 0.1", "eps_t = 1.0")
                 .replace("theta = 1.0", "theta = 100.0").replace("beta = 0.05", "beta = 1e-12"),
                 "overflows float64"),
}


def _assert_usage_error(r, text, json_path=None):
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("gtm: error: ")
    assert text in lines[0]
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    if json_path is not None:
        assert not Path(json_path).exists()
        assert not list(Path(json_path).parent.glob(f".{Path(json_path).name}.*"))  # no temp file


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_malformed_configuration_exits_2_with_one_line(tmp_path, case):
    text, message = BAD_CONFIGS[case]
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    out = tmp_path / "out.json"
    _assert_usage_error(run(cfg, "--json", out), message, out)


def test_nonexistent_configuration(tmp_path):
    out = tmp_path / "out.json"
    _assert_usage_error(run(tmp_path / "nope.toml", "--json", out),
                        "configuration file not found", out)


@pytest.mark.parametrize(
    "where,message",
    [("missing_dir/out.json", "--json directory does not exist"),
     (".", "--json path is a directory")],
)
def test_unusable_json_path_is_refused_before_work(tmp_path, where, message):
    target = tmp_path / where
    _assert_usage_error(run(DEFAULT, "--json", target), message)
    assert not (tmp_path / "missing_dir").exists()


def test_read_only_json_directory(tmp_path, monkeypatch):
    """A directory the user may not write to (simulated: tests may run as root, who may)."""
    import audits.cli.common as common

    real_access = os.access
    monkeypatch.setattr(common.os, "access",
                        lambda path, mode: False if mode == os.W_OK else real_access(path, mode))
    _assert_usage_error(run(DEFAULT, "--json", tmp_path / "out.json"),
                        "--json directory is not writable", tmp_path / "out.json")


@pytest.mark.parametrize(
    "steps,message",
    [("0", "--steps must lie in 1..horizon=1000, got 0"),
     ("1,1001", "--steps must lie in 1..horizon=1000, got 1001"),
     ("a,b", "--steps must be a comma-separated list of integers, got 'a,b'"),
     (",", "--steps must not be empty")],
)
def test_bad_steps(tmp_path, steps, message):
    out = tmp_path / "out.json"
    _assert_usage_error(run(DEFAULT, "--steps", steps, "--json", out), message, out)


def test_missing_argument_is_a_one_line_usage_error():
    r = CliRunner().invoke(cli, ["plan"], prog_name="gtm")
    assert r.exit_code == 2
    assert len(r.stderr.splitlines()) == 1 and "Missing argument" in r.stderr


# --- the real command line ------------------------------------------------------------


def _subprocess(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "audits.cli", "plan", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_subprocess_success_and_failure(tmp_path):
    ok = _subprocess(DEFAULT, "--steps", "1", "--json", tmp_path / "p.json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "p.json").read_text())["steps"][0]["c"] == 282
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD_TOML.replace("gamma = 1.5", "gamma = 1"))
    r = _subprocess(bad, "--json", tmp_path / "q.json", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == ["gtm: error: gamma must be in (1, 2], got 1"]
    assert not (tmp_path / "q.json").exists()


def test_exact_noise_example_keeps_theorem21s_threshold_with_a_smaller_c():
    r = run(EXAMPLES / "exact_noise.toml", "--steps", "1,100")
    assert r.exit_code == 0, r.output
    assert "parameterization=exact_noise" in r.stdout.splitlines()[0]
    rows = _rows(r.stdout)
    ref = _rows(run(DEFAULT, "--steps", "1,100").stdout)
    for row, row21 in zip(rows, ref):
        assert row[1] == row21[1] and row[4:6] == row21[4:6]  # s, Lambda, p_bar as theorem21
        assert int(row[2]) < int(row21[2]) and float(row[3]) < float(row21[3])


# ---------------------------------------------------------------------------
# unusable configurations: printed, then refused with the reason, exit 1
# ---------------------------------------------------------------------------


def test_unusable_configuration_exits_1_with_the_reason(tmp_path):
    cfg = tmp_path / "eps2.toml"
    cfg.write_text((ROOT / "examples" / "default.toml").read_text().replace("eps_t = 0.1", "eps_t = 2.0"))
    out = tmp_path / "plan.json"
    r = subprocess.run([sys.executable, "-m", "audits.cli", "plan", str(cfg), "--json", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("parameterization=theorem21")
    assert r.stderr.count("\n") == 1 and "unusable configuration: at step t=1" in r.stderr
    d = json.loads(out.read_text())
    assert d["usable"] is False and "t=1" in d["warning"]


def test_usable_configuration_says_so_in_the_json(tmp_path):
    out = tmp_path / "plan.json"
    assert run(ROOT / "examples" / "default.toml", "--json", out).exit_code == 0
    d = json.loads(out.read_text())
    assert d["usable"] is True and d["warning"] is None


def test_first_unusable_step_is_the_first_below_the_floor():
    from proofs.plan_checks import THRESHOLD_RATIO_FLOOR, first_unusable_step

    plan = make_plan(GTMConfig.load(ROOT / "examples" / "unsafe_vanishing_threshold.toml"))
    sp = first_unusable_step(plan)
    assert sp is not None and sp.t == 2
    s1 = plan.step(1)
    assert s1.p_bar >= THRESHOLD_RATIO_FLOOR * s1.p_star > sp.p_bar


def test_plan_states_the_privacy_claim_of_each_budget_policy(tmp_path):
    """The default prints no extra line and claims pure epsilon in its JSON; a refusing budget prints
    its (epsilon, delta) claim in the table and the JSON; gtm exact computes the capped law and its claim."""
    capped = tmp_path / "capped.toml"
    capped.write_text(DEFAULT.read_text().replace('\nbeta = 0.05\n', '\nbeta = 0.05\nevaluation_budget = "refuse"\n'))
    runner = CliRunner()
    pure = runner.invoke(cli, ["plan", str(DEFAULT), "--json", str(tmp_path / "a.json")])
    assert pure.exit_code == 0 and "privacy:" not in pure.output
    a = json.loads((tmp_path / "a.json").read_text())["privacy"]
    assert a["pure"] and a["delta"] == 0.0 and a["evaluation_budget"] == "none"
    res = runner.invoke(cli, ["plan", str(capped), "--json", str(tmp_path / "b.json")])
    assert res.exit_code == 0 and "privacy: (1, " in res.output
    b = json.loads((tmp_path / "b.json").read_text())["privacy"]
    assert not b["pure"] and 0 < b["delta"] < 1e-2 and b["evaluation_budget"] == "refuse"
    # gtm exact models the capped law it deploys (refused outcomes included) and judges the (eps, delta) claim
    ex = runner.invoke(cli, ["exact", str(capped), "--p", "0.1", "--p-prime", "0.11"])
    assert ex.exit_code == 0 and "refused" in ex.output and "claim: (1, " in ex.output
