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
