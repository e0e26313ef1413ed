"""`gtm blackbox`: exit codes, one-line errors for bad input, JSON outputs, subprocess audit via serve."""

import json
import sys
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from audits.cli import cli

EX = ["--config", "examples/blackbox/config.json"]
DATA = ["--data", "examples/blackbox/scores30.json"]


def gtm(*args):
    r = CliRunner().invoke(cli, ["blackbox", *args])
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)


def test_evaluate_json(tmp_path):
    out = tmp_path / "e.json"
    r = gtm("evaluate", *EX, *DATA, "--runs", "50", "--seed", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert len(d["outputs"]) == 50 and d["parameters"]["K"] == 21 and "not for deployment" in d["note"]


def test_exact_certified_and_variant(tmp_path):
    r = gtm("exact", *EX, *DATA, "--json", str(tmp_path / "x.json"), "--report", str(tmp_path / "x.md"))
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "x.json").read_text())
    assert d["certified_loss_at_most_claim"] and d["max_loss_upper"] <= 2.0
    assert (tmp_path / "x.png").exists()
    (tmp_path / "s.json").write_text(json.dumps([1] * 26))
    r2 = gtm("exact", *EX, "--data", str(tmp_path / "s.json"), "--variant", "no-size-noise", "--min-probability",
             "1e-3")
    assert r2.returncode == 1 and "ABOVE the claim" in r2.stdout


@pytest.mark.parametrize("args,msg", [
    (["evaluate", *EX, *DATA, "--epsilon", "0"], "epsilon must be > 0"),
    (["evaluate", *EX, *DATA, "--beta", "1"], "beta must be < 1"),
    (["evaluate", "--epsilon", "1", "--beta", "0.1", "--domain", "0,inf", *DATA], "non-finite"),
    (["evaluate", *EX, "--data", "examples/blackbox/missing.json"], "not found"),
    (["evaluate", *EX, *DATA, "--function", "slope"], "dimension"),
    (["evaluate", *EX, *DATA, "--function", "nope"], "--function must be"),
])
def test_bad_input_one_line_exit_2(args, msg):
    r = gtm(*args)
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_bad_datasets_exit_2(tmp_path):
    for content, msg in [("[]", "empty"), ('[1, "a"]', "non-numeric"), ("[[1, 2], [3, 4]]", "dimension")]:
        p = tmp_path / "d.json"
        p.write_text(content)
        r = gtm("evaluate", *EX, "--data", str(p))
        assert r.returncode == 2 and msg in r.stderr, (content, r.stderr)


def test_audit_subprocess_target_via_serve(tmp_path):
    out = tmp_path / "a.json"
    serve = f"{sys.executable} -m audits.cli blackbox serve --config examples/blackbox/config.json"
    r = gtm("audit", *EX, "--target", serve, "--max-samples", "200000", "--seconds", "120", "--confidence", "0.999",
            "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["verdict"] == "no-violation-found" and d["output_kind"] == "finite"


def test_audit_broken_in_process_exit_1():
    r = gtm("audit", *EX, "--variant", "no-size-noise", "--max-samples", "400000", "--seconds", "120")
    assert r.returncode == 1 and "violation" in r.stdout


def test_serve_json_writes_a_summary_when_stdin_ends(tmp_path):
    out = tmp_path / "serve.json"
    good = json.dumps({"input": {"dataset": [1, 2, 3, 3, 4]}, "n": 50, "seed": 1})
    lines = "\n".join([good, "[" * 100_000, '{"input": {"dataset": [1]}, "n": 5, "n": 6}', good]) + "\n"
    r = CliRunner().invoke(cli, ["blackbox", "serve", *EX, "--json", str(out)], input=lines)
    assert r.exit_code == 0, r.stderr
    answers = [json.loads(x) for x in r.stdout.splitlines()]
    assert [("counts" in a) for a in answers] == [True, False, False, True]
    assert "duplicate key" in answers[2]["error"]
    d = json.loads(out.read_text())
    assert (d["requests"], d["answered"], d["error_answers"]) == (4, 2, 2) and d["parameters"]["K"] == 21


def test_serve_and_bench_refuse_an_unwritable_json_before_any_work(tmp_path):
    missing = str(tmp_path / "no" / "x.json")
    for verb in (["serve", *EX], ["bench", "--out", str(tmp_path)]):
        r = CliRunner().invoke(cli, ["blackbox", *verb, "--json", missing], input="")
        assert r.exit_code == 2 and "--json directory does not exist" in r.stderr, (verb, r.stderr)


def test_bench_json_is_the_result_it_writes(tmp_path, monkeypatch):
    """Wiring only (the real bench takes minutes): --json carries exactly the result the bench computed."""
    from audits.bench import blackbox_utility

    result = {"cases": [{"case": "median", "n": 3, "median_error": 0.25}], "data": "fake", "seconds": 0.1}
    written = []
    monkeypatch.setattr(blackbox_utility, "run_utility", lambda **kw: result)
    monkeypatch.setattr(blackbox_utility, "write_utility", lambda res, d: written.append(res) or [])
    out = tmp_path / "bench.json"
    r = gtm("bench", "--seconds", "1", "--runs", "10", "--out", str(tmp_path), "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == result and written == [result]


# -- --privacy approximate (Algorithm 2) --------------------------------------------------------------

AP = ["--privacy", "approximate", "--delta", "0.1", "--epsilon", "0.9", "--beta", "0.1", "--domain", "0,1,2,3",
      "--constant-c", "1e-5"]


def test_approximate_evaluate_and_exact(tmp_path):
    d = tmp_path / "s.json"
    d.write_text(json.dumps([0, 0, 0, 0, 0, 3, 3, 3, 3, 3]))
    out = tmp_path / "e.json"
    r = gtm("evaluate", *AP, "--data", str(d), "--runs", "5", "--seed", "1", "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["privacy"] == "approximate" and len(res["outputs"]) == 5 and res["parameters"]["K"] == 3
    r = gtm("exact", *AP, "--data", str(d), "--json", str(tmp_path / "x.json"))
    assert r.returncode == 0 and "certified <= claim" in r.stdout, r.stdout + r.stderr
    r = gtm("exact", *AP, "--data", str(d), "--variant", "gap-max-no-noise")
    assert r.returncode == 1 and "ABOVE the claim" in r.stdout


def test_approximate_audit_correct_and_broken():
    r = gtm("audit", *AP, "--seed", "0")
    assert r.returncode == 0 and "verdict: no-violation-found" in r.stdout, r.stdout + r.stderr
    r = gtm("audit", *AP, "--seed", "0", "--variant", "gap-max-no-noise")
    assert r.returncode == 1 and "verdict: violation" in r.stdout


@pytest.mark.parametrize("args,msg", [
    (["evaluate", *EX, *DATA, "--privacy", "approximate"], "needs --delta"),
    (["evaluate", *EX, *DATA, "--delta", "0.1"], "--delta needs --privacy approximate"),
    (["evaluate", *AP, *DATA, "--delta", "1.5"], "delta must be"),
    (["evaluate", *EX, *DATA, "--privacy", "approximate", "--delta", "0.1"], "epsilon must be"),
    (["exact", *AP, "--constant-c", "0", *DATA], "C must be > 0"),
    (["audit", *AP, "--target", "cat"], "--target is implemented for --privacy pure only"),
    (["audit", *AP, "--variant", "nope"], "variant must be"),
    (["bench", "--privacy", "approximate"], "needs --delta"),
    (["bench", "--delta", "0.1"], "--delta needs --privacy approximate"),
    (["bench", "--privacy", "approximate", "--delta", "2"], "--delta must be"),
])
def test_approximate_bad_input_one_line_exit_2(args, msg):
    r = gtm(*args)
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_approximate_bench_writes_what_it_computed(tmp_path, monkeypatch):
    """Wiring only (the real comparison takes minutes; benchmarks/results/blackbox_approx.md is its output)."""
    from gtm_core.blackbox.approx import compare

    seen = {}

    def fake(data, **kw):
        seen.update(kw, shape=data.shape)
        return {"cases": [], "crossover": [], "skipped": [], "seconds": 0.1, "epsilon": 0.9, "delta": kw["delta"],
                "beta": 0.1}

    monkeypatch.setattr(compare, "run_comparison", fake)
    monkeypatch.setattr(compare, "write_comparison", lambda res, d: [])
    out = tmp_path / "b.json"
    r = gtm("bench", "--privacy", "approximate", "--delta", "1e-6", "--runs", "10", "--seconds", "1", "--out",
            str(tmp_path), "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["delta"] == 1e-6 and "--privacy approximate --delta 1e-06" in res["command"]
    assert seen["shape"][1] == 3 and seen["runs"] == 10


# -- d = 3 ------------------------------------------------------------------------------------------

AP3 = ["--privacy", "approximate", "--delta", "0.1", "--epsilon", "0.9", "--beta", "0.1", "--constant-c", "1e-8"]
DATA3 = ["--data", "examples/blackbox/goog3d12.json"]
Y5 = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]


def test_d3_evaluate_on_bundled_data_and_exact_certified(tmp_path):
    """Algorithm 2 end to end at d = 3 on the bundled 3-D goog days (|Y| = 8, |Y~| = 35), and the exact
    delta(0.9) of every (S, S minus one) pair on a tiny instance (|Y~| = 9) certified <= 0.1."""
    out = tmp_path / "e.json"
    r = gtm("evaluate", *AP3, "--grid3", "-1:4:2", "--function", "center-3d", *DATA3, "--runs", "3", "--seed", "1",
            "--json", str(out))
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["parameters"]["d"] == 3 and res["parameters"]["M"] == 35 and len(res["outputs"]) == 3
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"epsilon": 0.9, "beta": 0.1, "domain": Y5}))
    d = tmp_path / "s.json"
    d.write_text(json.dumps([[1, 0, 0]] * 3 + [[1, 1, 1]] * 5))
    r = gtm("exact", "--config", str(cfg), "--privacy", "approximate", "--delta", "0.1", "--constant-c", "1e-8",
            "--function", "center-3d", "--data", str(d))
    assert r.returncode == 0 and "certified <= claim" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args,msg", [
    (["evaluate", *AP3, "--grid3", "0:1", "--function", "center-3d", *DATA3], "--grid3 must be LO:HI:COUNT"),
    (["evaluate", *AP3, "--grid3", "0:1:2", "--grid2", "0:1:2", "--function", "center-3d", *DATA3], "exactly one of"),
    (["evaluate", *AP3, "--grid3", "0:1:3", "--function", "center-3d", *DATA3], "|Y| <= 12"),
    (["evaluate", *AP3, "--grid", "0:1:3", "--function", "center-3d", *DATA3], "dimension 3"),
    (["evaluate", *AP3, "--grid3", "0:1:2", "--function", "center-3d", *DATA], "records of dimension 3"),
    (["evaluate", *AP3, "--grid3", "0:1:2", "--function", "tukey-center", *DATA3], "dimension 2"),
    (["exact", *AP3, "--grid3", "0:1:2", "--function", "center-3d", "--data", "examples/blackbox/config.json"],
     "dataset"),
    (["audit", *AP3, "--grid3", "0:1:2", "--function", "center-3d"], "d = 1 only"),
    (["serve", *AP3, "--grid3", "0:1:2:3", "--function", "center-3d"], "--grid3 must be"),
])
def test_d3_bad_input_one_line_exit_2(args, msg):
    r = gtm(*args)
    assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
