"""`gtm co`: JSON lines per update, crash-safe resume, one-line exit-2 errors, ledger verdicts."""

import json

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core.batchtoco import persist
from gtm_core.batchtoco.streams import bundled_stream

CONFIG = """[co]
epsilon = 0.9
k = 2
seed = 7
"""


def _files(tmp_path, n_edges=None):
    cfg = tmp_path / "co.toml"
    cfg.write_text(CONFIG)
    doc = bundled_stream("florentine_families").to_dict()
    if n_edges is not None:
        doc["edges"] = doc["edges"][:n_edges]
    st = tmp_path / f"stream{n_edges}.json"
    st.write_text(json.dumps(doc))
    return cfg, st


def _run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_run_releases_one_json_line_per_update(tmp_path):
    cfg, st = _files(tmp_path)
    out = tmp_path / "summary.json"
    r = _run(["co", "run", str(cfg), "--stream", str(st), "--json", str(out)])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["t"] for x in lines] == list(range(1, 21))
    assert all(len(x["solution"]) == 2 for x in lines)
    summary = json.loads(out.read_text())
    assert summary["seeded"] and "not for deployment" in summary["note"]
    assert "batch_calls" not in lines[0]  # evaluation counts reveal noise: never released


def test_state_resume_equals_one_uninterrupted_run(tmp_path):
    cfg, st_half = _files(tmp_path, 9)
    _, st_full = _files(tmp_path)
    state = tmp_path / "run.state"
    a = _run(["co", "run", str(cfg), "--stream", str(st_half), "--state", str(state)])
    b = _run(["co", "run", str(cfg), "--stream", str(st_full), "--state", str(state)])
    full = _run(["co", "run", str(cfg), "--stream", str(st_full)])
    assert a.exit_code == b.exit_code == full.exit_code == 0
    assert a.stdout + b.stdout == full.stdout


def test_tampered_state_is_refused_by_the_replay(tmp_path):
    cfg, st_half = _files(tmp_path, 9)
    _, st_full = _files(tmp_path)
    state = tmp_path / "run.state"
    assert _run(["co", "run", str(cfg), "--stream", str(st_half), "--state", str(state)]).exit_code == 0
    with persist.RunState.open(state) as run:  # a forger who even holds the key file
        body = run.body
        assert len(body["released"]) == 9 and body["entropy"] == "7"  # the config's seed
        shown = body["released"][-1]["solution"]
        body["released"][-1]["solution"] = [v for v in body["vertices"] if v not in shown][:2]  # a forged output
        run.save(body)
    r = _run(["co", "run", str(cfg), "--stream", str(st_full), "--state", str(state)])
    assert r.exit_code == 2 and "does not reproduce" in r.stderr and r.stdout == ""


def test_outputs_never_overwrite_inputs(tmp_path):
    cfg, st = _files(tmp_path)
    state = tmp_path / "run.state"
    for args, needle in (
        (["--json", str(cfg)], "would overwrite"),
        (["--json", str(st)], "would overwrite"),
        (["--state", str(st)], "would overwrite"),
        (["--state", str(state), "--json", str(state)], "would overwrite"),
    ):
        before = (cfg.read_text(), st.read_text())
        r = _run(["co", "run", str(cfg), "--stream", str(st), *args])
        assert r.exit_code == 2 and needle in r.stderr and r.stdout == "", (args, r.stderr)
        assert (cfg.read_text(), st.read_text()) == before and not state.exists()


def test_crashed_state_is_refused(tmp_path):
    cfg, st = _files(tmp_path)
    state = tmp_path / "run.state"
    persist.RunState.create(state, {"pending": 3}).close()
    r = _run(["co", "run", str(cfg), "--stream", str(st), "--state", str(state)])
    assert r.exit_code == 2 and "crashed during update 3" in r.stderr and r.stdout == ""


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    cfg, st = _files(tmp_path)
    bad_stream = tmp_path / "bad.json"
    bad_stream.write_text(json.dumps({"vertices": ["a", "b"], "edges": [["a", "z"]]}))
    for args, needle in (
        (["co", "run", str(cfg), "--stream", str(bad_stream)], "unknown vertex"),
        (["co", "run", str(cfg), "--stream", str(tmp_path / "none.json")], "not found"),
    ):
        r = _run(args)
        assert r.exit_code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert r.stdout == ""
    for line, needle in (("epsilon = 1.5", "epsilon must be in (0, 1)"), ("p_star = 0.7", "p_star must be in"),
                         ("kappa = 0", "kappa must be > 0")):
        bad = tmp_path / "bad.toml"
        bad.write_text(CONFIG.replace("epsilon = 0.9", line if line.startswith("epsilon") else "epsilon = 0.9\n" + line))
        r = _run(["co", "run", str(bad), "--stream", str(st)])
        assert r.exit_code == 2 and needle in r.stderr and r.stdout == ""


def test_ledger_certifies_the_example(tmp_path):
    cfg, _ = _files(tmp_path)
    out = tmp_path / "ledger.json"
    r = _run(["co", "ledger", str(cfg), "--horizon", "50", "--json", str(out)])
    assert r.exit_code == 0 and "CERTIFIED" in r.stdout
    assert json.loads(out.read_text())["certified"] is True


@pytest.mark.slow
def test_witness_verb_reports_the_unnoised_variant(tmp_path):
    out = tmp_path / "w.json"
    r = _run(["co", "witness", "--json", str(out)])
    assert r.exit_code == 0, r.output
    rows = {v["variant"]: v for v in json.loads(out.read_text())["variants"]}
    assert not rows["correct"]["exceeds"] and rows["unnoised_score"]["exceeds"]


@pytest.mark.slow
def test_bench_quick_writes_json_markdown_and_plots(tmp_path):
    r = _run(["co", "bench", "--quick", "--seeds", "2", "--out", str(tmp_path / "b"), "--json", str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    for name in ("co_bench.json", "co_bench.md", "co_error.png", "co_calls.png", "co_checkpoints.png"):
        assert (tmp_path / "b" / name).exists()
    data = json.loads((tmp_path / "b" / "co_bench.json").read_text())
    assert json.loads((tmp_path / "r.json").read_text()) == data
    assert {s["stream"] for s in data["streams"]} >= {"karate", "les_miserables"}


def test_budget_refusal_is_a_recorded_terminal_failure(tmp_path, monkeypatch):
    from gtm_core.batchtoco.driver import BatchToCO
    from gtm_core.errors import EvaluationBudgetExceeded

    real = BatchToCO.step

    def step(self, element):
        if self.t == 2:
            raise EvaluationBudgetExceeded("step needs more than its evaluation budget")
        return real(self, element)

    monkeypatch.setattr(BatchToCO, "step", step)
    cfg, st = _files(tmp_path)
    state = tmp_path / "run.state"
    r = _run(["co", "run", str(cfg), "--stream", str(st), "--state", str(state)])
    assert r.exit_code == 1 and "run failed" in r.stderr and len(r.stdout.splitlines()) == 2
    monkeypatch.setattr(BatchToCO, "step", real)
    again = _run(["co", "run", str(cfg), "--stream", str(st), "--state", str(state)])
    assert again.exit_code == 2 and "failed at update 3" in again.stderr


def _other_stream(tmp_path, st_full):
    """The same vertices, a different continuation after update 9 (another dataset)."""
    doc = json.loads(st_full.read_text())
    doc["edges"] = doc["edges"][:9] + list(reversed(doc["edges"][9:]))
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    return other


def test_a_concurrent_resume_of_one_state_is_refused(tmp_path):
    """The attack: two resumes of one state at once released update 10 on two different streams
    (the same noise on two datasets). The second is refused while the first holds the state."""
    cfg, st_half = _files(tmp_path, 9)
    _, st_full = _files(tmp_path)
    state = tmp_path / "run.state"
    assert _run(["co", "run", str(cfg), "--stream", str(st_half), "--state", str(state)]).exit_code == 0
    with persist.RunState.open(state):  # the first resume, mid-run
        r = _run(["co", "run", str(cfg), "--stream", str(_other_stream(tmp_path, st_full)), "--state", str(state)])
    assert r.exit_code == 2 and "in use by another process" in r.stderr and r.stdout == ""


def test_a_symlinked_state_stays_one_run(tmp_path):
    """The attack: resuming through a symlink replaced it by a regular file, leaving the target as a
    resumable fork at the old update."""
    cfg, st_half = _files(tmp_path, 9)
    _, st_full = _files(tmp_path)
    real = tmp_path / "real.state"
    link = tmp_path / "link.state"
    assert _run(["co", "run", str(cfg), "--stream", str(st_half), "--state", str(real)]).exit_code == 0
    link.symlink_to(real)
    assert _run(["co", "run", str(cfg), "--stream", str(st_full), "--state", str(link)]).exit_code == 0
    assert link.is_symlink()
    with persist.RunState.open(real) as run:  # the target moved on: no fork left at update 9
        assert len(run.body["released"]) == len(json.loads(st_full.read_text())["edges"])
    r = _run(["co", "run", str(cfg), "--stream", str(_other_stream(tmp_path, st_full)), "--state", str(real)])
    assert r.exit_code == 2 and "does not extend" in r.stderr


def test_a_restored_old_copy_is_refused_with_a_generation_check(tmp_path, monkeypatch):
    """The attack: restore the state of update 9 and continue it on another stream. The generation
    log (examples/generation_check.sh) refuses the copy before any update."""
    import shutil
    from pathlib import Path

    check = str(Path(__file__).resolve().parents[3] / "examples" / "generation_check.sh")
    monkeypatch.setenv("GTM_GENERATION_LOG", str(tmp_path / "generations.log"))
    cfg, st_half = _files(tmp_path, 9)
    _, st_full = _files(tmp_path)
    state = tmp_path / "run.state"
    args = ["--state", str(state), "--generation-check", check]
    assert _run(["co", "run", str(cfg), "--stream", str(st_half), *args]).exit_code == 0
    backup = tmp_path / "backup"
    shutil.copy2(state, backup)
    assert _run(["co", "run", str(cfg), "--stream", str(st_full), *args]).exit_code == 0
    shutil.copy2(backup, state)
    other = _other_stream(tmp_path, st_full)
    r = _run(["co", "run", str(cfg), "--stream", str(other), *args])
    assert r.exit_code == 2 and "generation check refused generation" in r.stderr and r.stdout == ""
    # power companion: without the check the restored copy is resumed on the other stream
    r = _run(["co", "run", str(cfg), "--stream", str(other), "--state", str(state)])
    assert r.exit_code == 0 and r.stdout


def test_generation_check_needs_state(tmp_path):
    cfg, st = _files(tmp_path)
    r = _run(["co", "run", str(cfg), "--stream", str(st), "--generation-check", "true"])
    assert r.exit_code == 2 and "--state" in r.stderr


def test_bench_json_writes_the_payload(tmp_path, monkeypatch):
    """`gtm co bench --json PATH` (the wiring; the slow test above runs the real bench)."""
    from audits.bench import co as bench

    payload = {"streams": [{"stream": "karate", "rows": [1.5, float("inf")]}]}
    monkeypatch.setattr(bench, "run_bench", lambda config, **kw: payload)
    monkeypatch.setattr(bench, "markdown", lambda p: "# co bench")
    out = tmp_path / "r.json"
    r = _run(["co", "bench", "--out", str(tmp_path / "b"), "--json", str(out)])
    assert r.exit_code == 0 and "# co bench" in r.stdout
    assert json.loads(out.read_text()) == {"streams": [{"stream": "karate", "rows": [1.5, "inf"]}]}
    cfg, _ = _files(tmp_path)
    r = _run(["co", "bench", "--config", str(cfg), "--json", str(cfg)])  # never over an input, before any work
    assert r.exit_code == 2 and "would overwrite" in r.stderr


def test_ledger_of_the_certified_example_spends_all_of_epsilon(tmp_path):
    out = tmp_path / "ledger.json"
    r = _run(["co", "ledger", "examples/co/certified.toml", "--horizon", "78", "--json", str(out)])
    assert r.exit_code == 0 and "CERTIFIED" in r.stdout and "certified variant" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["certified"] and doc["shares"]["unspent"] < 1e-9
    r = _run(["co", "ledger", "examples/co/certified.toml", "--horizon", "1000"])
    assert r.exit_code == 2 and "planned horizon" in r.stderr


def test_run_certified_example_releases_every_update(tmp_path):
    r = _run(["co", "run", "examples/co/certified.toml", "--stream", "examples/co/karate_stream.json"])
    assert r.exit_code == 0, r.output
    assert len(r.stdout.strip().splitlines()) == 78
