"""`--workers N` / `--scheduler ADDRESS` of the benchmark scripts (benchmarks/cluster.py): bad flags
exit 2 with one line before any work; the units come back in order whatever the chunking; (slow) the
calibration and planted benchmarks give the same results in-process and on a 1-worker Dask cluster."""

import argparse
import json

import pytest

from audits.execution import InProcess
from benchmarks import bench_audit_calibration, bench_audit_power, bench_planted
from benchmarks.cluster import add_execution_arguments, execution_record, executor_from, ordered


def parse(*argv):
    ap = argparse.ArgumentParser()
    add_execution_arguments(ap)
    return ap.parse_args(list(argv))


@pytest.mark.parametrize("argv,why", [
    (["--workers", "0"], "--workers must be in 1..1024, got 0"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], "give --workers or --scheduler, not both"),
])
def test_bad_flags_exit_2_with_one_line(argv, why, capsys):
    with pytest.raises(SystemExit) as exc:
        executor_from(parse(*argv), "bench_x")
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err == f"bench_x: error: {why}\n"


@pytest.mark.parametrize("main,extra", [
    (bench_audit_calibration.main, ["--audits", "2"]),
    (bench_planted.main, ["--count", "1"]),
    (bench_audit_power.main, ["--variants", "correct"]),
])
def test_every_script_refuses_bad_flags_before_any_work(main, extra, tmp_path, capsys):
    argv = [*extra, "--workers", "0"]
    argv += ["--results-dir", str(tmp_path)] if main is bench_planted.main else ["--out", str(tmp_path / "r.json")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and capsys.readouterr().err.strip().count("\n") == 0
    assert list(tmp_path.iterdir()) == []


def test_no_flag_is_in_process_and_units_come_back_in_order():
    with executor_from(parse(), "bench_x") as ex:
        assert isinstance(ex, InProcess)
        assert execution_record(ex) == {"kind": "in-process", "workers": 1, "scheduler": None}
        for chunk in (None, 1, 3, 100):
            assert list(ordered(ex, lambda x: x * x, range(7), chunk=chunk)) == [x * x for x in range(7)]


def test_calibration_in_process_is_the_audits_it_names(tmp_path, capsys):
    """A tiny calibration run: its bounds are those of the audits seeded 0, 1 (the unit of work)."""
    out = tmp_path / "cal.json"
    assert bench_audit_calibration.main(["--audits", "2", "--max-samples", "40000", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    units = [bench_audit_calibration.calibration_bound("examples/default.toml", 40_000, 0.95, s) for s in (0, 1)]
    assert doc["bounds"] == units and doc["execution"]["kind"] == "in-process"


def comparable_planted(doc: dict) -> dict:
    """A planted results file without what depends on time and placement."""
    drop = ("seconds_total", "machine", "execution", "workers")
    out = {k: v for k, v in doc.items() if k not in drop}
    out["rows"] = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in doc["rows"]]
    out["summary"] = {k: v for k, v in doc["summary"].items() if k != "flagged_within_60s_wall"}
    return out


@pytest.mark.slow
# another cluster holding Dask's default HTTP port 8787: Dask warns, moves to a free port and leaks its probe
# socket (harmless; the scheduler's HTTP server is better started on port 0, see audits.execution)
def test_planted_and_calibration_on_a_dask_worker_equal_in_process(tmp_path, capsys):
    docs = []
    for flags in ([], ["--workers", "1"]):
        d = tmp_path / f"run{len(docs)}"
        d.mkdir()
        bench_planted.main(["--count", "2", "--calibration", "2", "--max-samples", "40000", "--results-dir", str(d),
                            *flags])
        bench_audit_calibration.main(["--audits", "3", "--max-samples", "40000", "--out", str(d / "cal.json"),
                                      *flags])
        docs.append((json.loads((d / "planted.json").read_text()), json.loads((d / "cal.json").read_text())))
    (p0, c0), (p1, c1) = docs
    assert p1["execution"] == {"kind": "dask", "workers": 1, "scheduler": "local cluster"}
    assert json.dumps(comparable_planted(p0), sort_keys=True) == json.dumps(comparable_planted(p1), sort_keys=True)
    assert c0["bounds"] == c1["bounds"] and c1["execution"]["kind"] == "dask"
