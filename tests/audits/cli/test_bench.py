"""`gtm bench` command line: outputs, progress on stderr, bad input -> exit 2, one line, no output."""

import json

import pytest
from click.testing import CliRunner

from audits.cli import cli

TINY = ["bench", "--quick", "--epsilon", "1", "--ratio", "0.1", "--p-star", "0.5", "--T", "10,20"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    runner = CliRunner()
    res = runner.invoke(cli, TINY + ["--out", str(out), "--json", str(out / "copy.json")])
    return res, out


def test_bench_writes_report_json_and_plots(tiny_run):
    res, out = tiny_run
    assert res.exit_code == 0, res.output
    for name in ("bench.md", "bench.json", "copy.json", "pbar_vs_T.png", "evaluations_vs_T.png"):
        assert (out / name).exists(), name
    data = json.loads((out / "bench.json").read_text())
    assert data["mode"] == "quick" and data["complete"] is True
    assert len(data["cells"]) == 2
    assert {"table1", "median_cell_exact_vs_theorem21", "theorem31_ratios", "claims_hold"} <= set(data["checks"])
    md = (out / "bench.md").read_text()
    assert "| gtm-theorem21 |" in md and "Corollary 30" in md


def test_bench_reports_progress_on_stderr(tiny_run):
    res, _ = tiny_run
    assert "[1/2]" in res.output  # CliRunner mixes stderr into output


@pytest.mark.parametrize("args,needle", [
    (["--ratio", "0.6"], "--ratio"),
    (["--p-star", "1.5"], "--p-star"),
    (["--T", "1"], "--T"),
    (["--seconds", "0"], "--seconds"),
    (["--epsilon", "x"], "--epsilon"),
])
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, args, needle):
    out = tmp_path / "o"
    res = CliRunner().invoke(cli, ["bench", "--quick", "--out", str(out)] + args)
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in res.output
    assert not out.exists()


def test_unwritable_json_path_fails_before_work(tmp_path):
    res = CliRunner().invoke(cli, ["bench", "--quick", "--json", str(tmp_path / "missing" / "x.json"),
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert not (tmp_path / "o").exists()


def test_time_budget_stops_starting_cells(tmp_path):
    res = CliRunner().invoke(cli, TINY + ["--out", str(tmp_path), "--seconds", "0.001", "--no-plots"])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["complete"] is False and len(data["cells"]) <= 1
