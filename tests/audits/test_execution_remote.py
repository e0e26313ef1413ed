"""Audits on a Dask cluster started by hand: a real ``dask scheduler`` and ``dask worker``
processes, as docs/distributed.md shows, give the in-process audit JSON; so does a 4-worker local cluster.

Every process started here runs in its own process group and is killed in a ``finally``; every wait is
bounded.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audits.audit_results import without_timings
from audits.gtm_audit import audit
from audits.execution import DaskExecutor, InProcess
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
SERVE = f"{sys.executable} -m audits.serve examples/default.toml"
# 6e6 runs: the estimation phase's rounds (two requests of ~1.7e5 runs) exceed what stays in the client
# (audits.execution.LOCAL_RUNS), so they run on the workers; at 2e6 every request stays in the client
AUDIT = ["audit", "--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seed", "3", "--max-samples", "6000000",
         "--seconds", "900", "--quiet"]
START_SECONDS = 120  # bound on the scheduler writing its address and both workers joining (a loaded machine)


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}  # workers import audits from this checkout


def start(argv: list[str], log: Path) -> subprocess.Popen:
    """A background process in its own process group (stdout and stderr to ``log``)."""
    with open(log, "wb") as f:
        return subprocess.Popen(argv, cwd=ROOT, env=env(), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    """End a process group started by :func:`start`: SIGTERM, then SIGKILL after 15 s."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def gtm(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "audits.cli", *args], cwd=ROOT, env=env(), capture_output=True,
                          text=True, timeout=timeout)


def dask_cli(*args) -> list[str]:
    """The ``dask`` command of this interpreter's environment."""
    return [str(Path(sys.executable).parent / "dask"), *args]


@pytest.mark.slow
def test_gtm_audit_on_a_scheduler_and_two_workers_started_by_hand(tmp_path):
    """`dask scheduler` + `dask worker --nworkers 2` as separate processes; `gtm audit --scheduler ADDRESS`
    writes the in-process audit JSON (apart from timings and the execution section)."""
    info = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(start(dask_cli("scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
                                    "--scheduler-file", str(info)), tmp_path / "scheduler.log"))
        deadline = time.monotonic() + START_SECONDS
        while not info.exists() and time.monotonic() < deadline:
            assert procs[0].poll() is None, (tmp_path / "scheduler.log").read_text()
            time.sleep(0.3)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(start(dask_cli("worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"),
                           tmp_path / "workers.log"))
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
            assert len(client.scheduler_info()["workers"]) == 2
        docs = []
        for flags in ([], ["--scheduler", address]):
            out = tmp_path / f"a{len(docs)}.json"
            res = gtm(*AUDIT, "--json", str(out), *flags)
            assert res.returncode == 0, res.stderr
            docs.append(json.loads(out.read_text()))
    finally:
        for p in reversed(procs):
            stop(p)
    local, remote = docs
    assert remote["execution"]["kind"] == "dask" and remote["execution"]["scheduler"] == address
    assert remote["execution"]["workers"] == 2 and remote["execution"]["reproducible"] is True
    # the estimation phase's batches ran on the workers (the selection's small requests stay in the client)
    assert any(w.startswith("tcp://127.0.0.1:") for w in remote["execution"]["per_worker"]), remote["execution"]
    assert json.dumps(without_timings(local), sort_keys=True) == json.dumps(without_timings(remote), sort_keys=True)
    assert all(p.poll() is not None for p in procs)


# another cluster holding Dask's default HTTP port 8787: Dask warns, moves to a free port and leaks its probe
# socket (harmless; the scheduler's HTTP server is better started on port 0, see audits.execution)
@pytest.mark.slow
def test_four_local_workers_give_the_in_process_audit():
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    kw = dict(epsilon=1.0, eps_t=0.1, seconds=None, seed=3, progress=False, max_T=10, max_samples=6_000_000)
    docs, info = [], []
    for make in (InProcess, lambda: DaskExecutor(workers=4, local_runs=0)):  # every request on the workers
        with make() as ex:
            docs.append(audit(SimulatorTarget(plan), executor=ex, **kw).to_dict())
            info.append(ex.info(reproducible=True))
    assert info[1]["kind"] == "dask" and info[1]["workers"] == 4
    assert "in-process" not in info[1]["per_worker"] and len(info[1]["per_worker"]) >= 2  # batches on the workers
    assert json.dumps(without_timings(docs[0]), sort_keys=True) == json.dumps(without_timings(docs[1]), sort_keys=True)
