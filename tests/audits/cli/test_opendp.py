"""`gtm opendp audit`: exit 0 / 1 / 2, the constructor forms, feature flags as the user's explicit
choice, JSON and HTML outputs. Statistics as in tests/audits/integrations/test_opendp_audit.py: no
violation expected at alpha = 0.001 (seed 4), a violation (true loss twice the claim) at alpha = 0.05 (seed 0)."""

import json
from types import SimpleNamespace

import opendp.prelude as dp
import pytest
from click.testing import CliRunner

from audits.cli import cli

EXAMPLES = "audits.integrations.opendp_examples"


def gtm(*args):
    r = CliRunner().invoke(cli, ["opendp", *args])
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)


@pytest.fixture(autouse=True)
def no_features():
    """Each test starts with the features off, so a passing test shows who switched them on."""
    dp.disable_features("contrib", "honest-but-curious")
    yield
    dp.enable_features("contrib", "honest-but-curious")


def test_correct_measurement_exits_0_with_json_and_report(tmp_path):
    out, rep = tmp_path / "r.json", tmp_path / "r.html"
    r = gtm("audit", f"{EXAMPLES}:randomized_response", "--enable-feature", "contrib", "--seconds", "5",
            "--confidence", "0.999", "--seed", "4", "--json", str(out), "--report", str(rep))
    assert r.returncode == 0, r.stderr
    assert "verdict: no-violation-found" in r.stdout and "MaxDivergence" in r.stdout
    d = json.loads(out.read_text())
    assert d["verdict"] == "no-violation-found" and d["claim"]["kind"] == "pure"
    assert d["epsilon_lower_bound"] <= d["epsilon_claimed"] and d["witness"]["input"] in (True, False)
    assert rep.read_text().startswith("<!DOCTYPE html>")


def test_broken_map_exits_1(tmp_path):
    r = gtm("audit", f"{EXAMPLES}:halved_laplace_count", "--enable-feature", "contrib",
            "--enable-feature", "honest-but-curious", "--seconds", "12")
    assert r.returncode == 1, r.stderr
    assert "verdict: violation" in r.stdout


def test_file_constructor_and_given_pairs(tmp_path):
    (tmp_path / "mine.py").write_text(
        "import opendp.prelude as dp\n"
        "dp.enable_features('contrib')\n"
        "space = dp.vector_domain(dp.atom_domain(T=int, bounds=(0, 5))), dp.symmetric_distance()\n"
        "measurement = space >> dp.t.then_count() >> dp.m.then_laplace(1.0)\n")
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps([[[1, 2, 3], [1, 2]]]))
    out = tmp_path / "r.json"
    r = gtm("audit", f"{tmp_path / 'mine.py'}:measurement", "--pairs", str(pairs), "--no-search", "--seconds", "4",
            "--confidence", "0.999", "--seed", "4", "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["pairs_searched"] == 1 and sorted([len(d["witness"]["input"]), len(d["witness"]["input_prime"])]) == [2, 3]


@pytest.mark.parametrize("args, message", [
    (["nocolon"], "module:name"),
    ([f"{EXAMPLES}:nope"], "has no attribute"),
    (["no_such_module_here:x"], "cannot import"),
    ([f"{EXAMPLES}:randomized_response"], "contrib"),  # the feature is off: the constructor refuses
    ([f"{EXAMPLES}:randomized_response", "--enable-feature", "contrib", "--d-in", "x"], "--d-in"),
    ([f"{EXAMPLES}:laplace_count", "--enable-feature", "contrib", "--d-in", "-1"], "d_in"),
    ([f"{EXAMPLES}:randomized_response", "--enable-feature", "contrib", "--no-search"], "--pairs"),
    (["audits.integrations.opendp_examples:_bools", "--enable-feature", "contrib"], "not an OpenDP Measurement"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    r = gtm("audit", *args, "--seconds", "2")
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
