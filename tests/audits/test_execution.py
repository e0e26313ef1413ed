"""The execution layer: placement-independent batches, Dask workers, faults.

The cluster tests start a local Dask cluster of worker *processes*. ``local_runs=0`` sends every
request to the workers (by default small selection requests stay in the client).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from audits.audit_results import without_timings
from audits.gtm_audit import GTMProblem, audit
from audits.execution import (BATCH_RUNS, DaskExecutor, ExecutionSettings, InProcess, Request, batch_seed,
                              batch_sizes, make_executor)
from audits.targets import CallableTarget, SimulatorTarget, SubprocessTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import ClusterError, InvalidParameter, TargetError

SERVE = f"{sys.executable} -m audits.serve examples/default.toml"
KW = dict(epsilon=1.0, eps_t=0.1, seconds=None, seed=3, progress=False, max_T=10)


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def audit_json(target, executor, max_samples=400_000) -> str:
    d = without_timings(audit(target, executor=executor, max_samples=max_samples, **KW).to_dict())
    return json.dumps(d, sort_keys=True)


# -- batches --------------------------------------------------------------------------------------

def test_batches_depend_only_on_seed_and_index():
    assert batch_seed(5, 0) == 5
    assert batch_seed(5, 1) == batch_seed(5, 1) != batch_seed(6, 1)
    assert batch_sizes(0) == [0] and batch_sizes(3) == [3]
    assert batch_sizes(2 * BATCH_RUNS + 1) == [BATCH_RUNS, BATCH_RUNS, 1] and BATCH_RUNS % 2 == 0


def test_a_request_is_the_sum_of_its_batches(plan):
    problem = GTMProblem(SimulatorTarget(plan), 0.1)
    a = (0.3, 0.2)
    n = BATCH_RUNS + 10
    [(h, h1)] = InProcess().histograms(problem, [Request(a, n, 11, half=True)], 3)
    c0, c1 = problem.sample_codes(a, BATCH_RUNS, batch_seed(11, 0)), problem.sample_codes(a, 10, batch_seed(11, 1))
    assert np.array_equal(h, np.bincount(np.concatenate([c0, c1]), minlength=3))
    assert np.array_equal(h1, np.bincount(np.concatenate([c0[1::2], c1[1::2]]), minlength=3))


def test_every_batch_reports_progress_and_the_total_is_the_request(plan):
    problem = GTMProblem(SimulatorTarget(plan), 0.1)
    seen = []
    InProcess().histograms(problem, [Request((0.3,), BATCH_RUNS + 7, 1), Request((0.2,), 5, 2)], 2, on_batch=seen.append)
    assert seen == [BATCH_RUNS, 7, 5]


def test_the_estimation_chunk_does_not_depend_on_placement():
    from audits.audit_engine import ESTIMATION_CHUNK, TIMED_CHUNK_PER_WORKER, estimation_chunk
    from audits.sampling import AuditSettings

    def settings(max_samples, seconds):
        return AuditSettings(epsilon=1.0, seconds=seconds, max_samples=max_samples, seed=0, confidence=0.95,
                             selection_share=0.4, validation_share=0.15, n0=1000)

    class Four:
        workers = 4

    sample_budget = settings(10**9, None)
    assert estimation_chunk(sample_budget, InProcess()) == estimation_chunk(sample_budget, Four()) == ESTIMATION_CHUNK
    assert ESTIMATION_CHUNK % BATCH_RUNS == 0  # whole batches
    # a time budget is not reproducible anyway: the chunk grows with the workers
    assert estimation_chunk(settings(None, 60.0), Four()) == 4 * TIMED_CHUNK_PER_WORKER


def test_a_subprocess_target_takes_the_audit_deadline_to_the_worker():
    from audits.targets import close_worker_targets

    t = SubprocessTarget([sys.executable, "-c", "import time; time.sleep(30)"], timeout=60)
    try:
        t.set_deadline(time.monotonic() + 0.5)
        fn, args = t.__reduce__()
        assert abs(args[-1] - (time.time() + 0.5)) < 0.25  # wall-clock deadline: monotonic clocks differ
        start = time.monotonic()
        with pytest.raises(TargetError, match="time budget"):
            fn(*args).sample([0.1], 1, seed=0)  # what a worker does with the shipped target
        assert time.monotonic() - start < 3
        t.set_deadline(None)
        assert t.__reduce__()[1][-1] is None
    finally:
        t.close()
        close_worker_targets()


def test_settings_refuse_bad_flags():
    with pytest.raises(InvalidParameter, match="not both"):
        ExecutionSettings(workers=2, scheduler="tcp://x:1")
    with pytest.raises(InvalidParameter, match="workers"):
        ExecutionSettings(workers=0)
    assert isinstance(make_executor(ExecutionSettings()), InProcess)


def test_unreachable_scheduler_is_one_cluster_error_within_the_timeout():
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach scheduler tcp://127.0.0.1:9"):
        DaskExecutor(scheduler="tcp://127.0.0.1:9", connect_seconds=3)
    assert time.monotonic() - t0 < 3 * 3 + 5


@pytest.fixture
def silent_server():
    """A local TCP server that accepts every connection and never sends a byte."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}", held
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()


def test_a_scheduler_that_accepts_and_never_answers_is_a_cluster_error_within_the_deadline(silent_server):
    """The attack: Dask's Client waited for ever on such a server despite timeout=10."""
    address, held = silent_server
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match="sent nothing"):
        DaskExecutor(scheduler=address, connect_seconds=3)
    assert time.monotonic() - t0 < 3 + 3
    assert held  # it did accept: the refusal is not a refused connection


def test_the_cli_exits_2_within_the_deadline_on_a_silent_scheduler(silent_server):
    """Against the same command on a port that refuses at once (start-up and imports, which a loaded
    machine makes slow): the silent scheduler costs at most the 10 s deadline more."""
    address, _ = silent_server

    def audit(where):
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "--target",
                              f"{sys.executable} -m audits.serve examples/default.toml", "--epsilon", "1",
                              "--eps-t", "0.1", "--max-T", "3", "--seconds", "5", "--scheduler", where, "--quiet"],
                             capture_output=True, text=True, timeout=120, start_new_session=True)
        assert res.returncode == 2, res.stdout + res.stderr
        assert res.stderr.startswith("gtm: error:") and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "cannot reach scheduler" in res.stderr
        return time.monotonic() - t0

    refused = audit("tcp://127.0.0.1:9")
    silent = audit(address)
    assert silent < refused + 10 + 3, (silent, refused)


def test_call_within_bounds_a_call_that_never_returns_and_hands_a_late_result_over():
    from audits.execution import call_within

    release, late = threading.Event(), []
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        call_within(lambda: (release.wait(), "result")[1], 0.3, on_late=late.append)
    assert time.monotonic() - t0 < 2
    release.set()
    for _ in range(100):
        if late:
            break
        time.sleep(0.02)
    assert late == ["result"]
    assert call_within(lambda: 42, 1.0) == 42
    with pytest.raises(KeyError):
        call_within(lambda: {}["x"], 1.0)


# -- a 2-worker local cluster ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_workers():
    with DaskExecutor(workers=2, local_runs=20_000) as ex:  # only the tiniest requests stay in the client
        yield ex


@pytest.mark.slow  # 35-75 s on the shared 2-core machine (durations of the 2026-12-04 run)
def test_in_process_and_two_workers_give_byte_identical_audits(plan, two_workers):
    """Simulator and subprocess targets, in-process vs 2 worker processes."""
    two_workers.local_runs = 0  # every request to the workers (the search's requests are small)
    try:
        assert audit_json(SimulatorTarget(plan), InProcess()) == audit_json(SimulatorTarget(plan), two_workers)
    finally:
        two_workers.local_runs = 20_000
    batches = two_workers.stats.batches
    assert batches > 0 and len([w for w in two_workers.stats.per_worker if w.startswith("tcp://")]) == 2
    two_workers.local_runs = 0  # every request to the workers: their own subprocess targets answer all
    try:
        with SubprocessTarget(SERVE) as t:
            here = audit_json(t, InProcess(), max_samples=100_000)
        with SubprocessTarget(SERVE) as t:
            there = audit_json(t, two_workers, max_samples=100_000)
    finally:
        two_workers.local_runs = 20_000
    assert here == there
    info = two_workers.info(reproducible=True)
    assert info["workers"] == 2 and info["batches"] > batches and info["runs_per_second"] > 0
    # each worker started the subprocess target once and reused it
    started = two_workers.client.run(lambda: len(__import__("audits.targets", fromlist=["x"]).WORKER_TARGETS))
    assert sorted(started.values()) == [1, 1]


def test_progress_counts_every_batch_on_every_worker(plan, two_workers):
    problem = GTMProblem(SimulatorTarget(plan), 0.1)
    seen = []
    two_workers.local_runs = 0
    try:
        two_workers.histograms(problem, [Request((0.3,), 2 * BATCH_RUNS, 1), Request((0.2,), 300, 2)], 2,
                               on_batch=seen.append)
    finally:
        two_workers.local_runs = 20_000
    assert sorted(seen) == [300, BATCH_RUNS, BATCH_RUNS]


def crashing(p, n, seed):
    if n > 500:
        raise RuntimeError("boom")
    return np.zeros(n, dtype=np.int64)


@pytest.mark.slow  # 35-75 s on the shared 2-core machine (durations of the 2026-12-04 run)
def test_a_target_crashing_on_a_worker_fails_naming_the_worker(two_workers):
    two_workers.local_runs = 0  # every request on the workers
    try:
        with pytest.raises(TargetError, match=r"on worker tcp://127\.0\.0\.1:\d+: .*boom"):
            audit(CallableTarget(crashing, name="crashing", max_T=10), executor=two_workers, max_samples=400_000,
                  **KW)
    finally:
        two_workers.local_runs = 20_000


@pytest.mark.slow
def test_one_worker_gives_the_same_json(plan):
    with DaskExecutor(workers=1, local_runs=0) as ex:
        assert audit_json(SimulatorTarget(plan), ex) == audit_json(SimulatorTarget(plan), InProcess())


@pytest.mark.slow
def test_a_worker_killed_mid_audit_changes_nothing(plan):
    expected = audit_json(SimulatorTarget(plan), InProcess(), max_samples=6_000_000)
    with DaskExecutor(workers=2, local_runs=0) as ex:
        pids = list(ex.worker_pids().values())
        box = {}

        def run():
            box["json"] = audit_json(SimulatorTarget(plan), ex, max_samples=6_000_000)

        th = threading.Thread(target=run)
        th.start()
        deadline = time.monotonic() + 120
        while ex.stats.batches < 20 and time.monotonic() < deadline:  # well into the audit
            time.sleep(0.05)
        os.kill(pids[0], signal.SIGKILL)
        th.join(600)
        assert not th.is_alive()
        assert pids[0] not in ex.worker_pids().values()  # the nanny started a new worker
    assert box["json"] == expected
