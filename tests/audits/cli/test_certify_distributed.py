"""`gtm certify --workers N / --scheduler ADDR`: the flags reach the witnesses, bad flags exit 2
with one line before any work, and (slow) a certificate made on a 2-worker Dask cluster is the one made
in-process and re-verifies (``--verify --rerun``, itself on the cluster)."""

import json
import time

import pytest

from audits.certify import verify as V
from audits.cli import certify as cli_certify
from audits.cli import main
from audits.execution import InProcess


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.mark.parametrize("argv,why", [
    (["examples/default.toml", "--workers", "0"], "--workers must be in 1..1024"),
    (["examples/default.toml", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], "not both"),
    (["examples/default.toml", "--scheduler", " "], "--scheduler must be an address"),
    (["--verify", "c.json", "--workers", "2"], "go with --rerun"),
    (["--generate-key", "k.pem", "--workers", "2"], "--generate-key takes no other options"),
])
def test_bad_execution_flags_exit_2_with_one_line_and_no_output(argv, why, tmp_path, capsys):
    out = tmp_path / "c.json"
    argv = [a if a != "k.pem" else str(tmp_path / "k.pem") for a in argv]
    code, stdout, err = run(["certify", *argv, "--json", str(out)] if "--verify" not in argv and "--generate-key"
                            not in argv else ["certify", *argv], capsys)
    assert code == 2 and stdout == "" and why in err, err
    assert err.startswith("gtm: error:") and len(err.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "k.pem").exists()


def test_the_flags_reach_certify_and_the_verifying_rerun(tmp_path, capsys, monkeypatch):
    """The executor the flags ask for is the one the certificate's witnesses run on (the cluster itself is
    replaced by a recording in-process executor here: no Dask start-up in the default run)."""
    made, seen = [], {}

    def fake_make_executor(workers, scheduler):
        ex = InProcess()
        made.append((workers, scheduler, ex))
        return ex

    real_certify, real_verify = cli_certify.certify, cli_certify.verify_document

    def recording_certify(config, **kw):
        seen["certify"] = kw["executor"]
        return real_certify(config, **{**kw, "witnesses": {}})  # the deterministic part only: fast

    def recording_verify(doc, **kw):
        seen["verify"] = kw["executor"]
        return real_verify(doc, **{**kw, "witnesses": {}})

    monkeypatch.setattr(cli_certify, "make_executor", fake_make_executor)
    monkeypatch.setattr(cli_certify, "certify", recording_certify)
    monkeypatch.setattr(cli_certify, "verify_document", recording_verify)
    out = tmp_path / "c.json"
    code, _, _ = run(["certify", "examples/default.toml", "--horizon", "3", "--seed", "1", "--no-progress",
                      "--workers", "3", "--json", str(out)], capsys)
    assert code == 1  # incomplete: no external witness ran
    assert made[0][:2] == (3, None) and seen["certify"] is made[0][2]
    code, stdout, _ = run(["certify", "--verify", str(out), "--rerun", "--scheduler", "tcp://h:8786",
                           "--no-progress", "--allow-unsigned"], capsys)
    assert made[1][:2] == (None, "tcp://h:8786") and seen["verify"] is made[1][2]
    assert code == 0 and "reproduce when re-run" in stdout


@pytest.mark.slow
def test_unreachable_scheduler_is_exit_2_before_any_output(tmp_path, capsys):
    out = tmp_path / "c.json"
    t0 = time.monotonic()
    code, stdout, err = run(["certify", "examples/default.toml", "--quick", "--no-progress", "--json", str(out),
                             "--scheduler", "tcp://127.0.0.1:9"], capsys)
    assert time.monotonic() - t0 < 10 + 20
    assert code == 2 and stdout == "" and "cannot reach scheduler tcp://127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def comparable(body: dict) -> dict:
    """A certificate body without what depends on when and how fast it was made (the timing fields
    ``--verify --rerun`` ignores, the creation time and the per-stage timings)."""
    prov = {k: v for k, v in body["provenance"].items() if k not in ("created_utc", "timings_seconds")}
    return V.without_timings({**body, "provenance": prov})


def diff(path: str, x, y, out: list[str]) -> None:
    """Where two JSON values differ (paths), for a readable failure."""
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            diff(f"{path}.{k}", x.get(k), y.get(k), out)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            diff(f"{path}[{i}]", u, v, out)
    elif x != y:
        out.append(f"{path}: {x!r} != {y!r}"[:300])


@pytest.mark.slow
# another cluster holding Dask's default HTTP port 8787: Dask warns, moves to a free port and leaks its probe
# socket (harmless; the scheduler's HTTP server is better started on port 0, see audits.execution)
def test_certificate_on_two_dask_workers_is_the_in_process_one_and_reruns_there(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GTM_CACHE_DIR", str(tmp_path / "cache"))  # the lemma checks run once, then cached
    from audits.certify import witnesses as W

    monkeypatch.setattr(W, "BACKING_LEMMAS", ("lemma17", "theorem21"))  # the wiring, not the solvers
    # 8 budget-seconds: 4.4e6 audit samples (5 batches of 10^6 go to the workers), 40 search attempts
    common = ["certify", "examples/default.toml", "--horizon", "10", "--quick", "--seconds", "8", "--seed", "11",
              "--no-progress"]
    docs = []
    for flags in ([], ["--workers", "2"]):
        out = tmp_path / f"c{len(docs)}.json"
        code, _, err = run([*common, "--json", str(out), *flags], capsys)
        assert code == 0, err
        docs.append(json.loads(out.read_text()))
    a, b = (comparable(d["body"]) for d in docs)
    differences: list[str] = []
    diff("body", a, b, differences)
    assert differences == [] and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True), differences
    claims = {c["id"]: c for c in docs[1]["body"]["claims"]}
    assert claims["privacy.audit"]["values"]["samples"] >= 4_000_000
    assert claims["privacy.exact-worst-case"]["values"]["attempts"] == 40
    code, stdout, err = run(["certify", "--verify", str(tmp_path / "c1.json"), "--rerun", "--workers", "2",
                             "--allow-unsigned", "--no-progress"], capsys)
    assert code == 0 and "reproduce when re-run" in stdout, stdout + err
