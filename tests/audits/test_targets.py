"""Targets: in-process, callable and subprocess (JSON-lines protocol), and their failure modes."""

import sys

from pathlib import Path

import numpy as np
import pytest

from audits.targets import CallableTarget, ReferenceTarget, SimulatorTarget, SubprocessTarget, validate_sample
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter, TargetError

PY = sys.executable
SERVE = f"{PY} -m audits.serve examples/default.toml"


@pytest.fixture(scope="module")
def plan():
    return make_plan(GTMConfig.load("examples/default.toml"))


def _script(body: str) -> list[str]:
    return [PY, "-c", body]


def test_simulator_target_shapes_and_reproducibility(plan):
    t = SimulatorTarget(plan)
    a = t.sample([0.1, 0.2, 0.3], 1000, seed=5)
    b = t.sample([0.1, 0.2, 0.3], 1000, seed=5)
    assert a.halt.shape == (1000,) and a.halt.min() >= 0 and a.halt.max() <= 3
    np.testing.assert_array_equal(a.halt, b.halt)
    e = t.sample([0.1, 0.2], 100, seed=1, evaluations=True)
    assert e.evaluations is not None and (e.evaluations >= 0).all()


def test_reference_target_runs(plan):
    s = ReferenceTarget(plan).sample([0.3, 0.3], 20, seed=3)
    assert s.halt.shape == (20,)


@pytest.mark.parametrize("answer,msg", [
    ([1, 2], "expected 3"),
    ([0, 1, 7], "outside -2..2"),
    ([0, 1, -3], "outside -2..2"),
    ([0.5, 1, 1], "not integers"),
    (["a", 1, 1], "not integers"),
])
def test_callable_target_rejects_malformed_answers(answer, msg):
    t = CallableTarget(lambda p, n, seed: answer)
    with pytest.raises(TargetError, match=msg):
        t.sample([0.1, 0.2], 3, seed=0)


def test_callable_target_wraps_exceptions():
    def boom(p, n, seed):
        raise RuntimeError("kaput")

    with pytest.raises(TargetError, match="RuntimeError"):
        CallableTarget(boom).sample([0.1], 2, seed=0)


def test_request_validation():
    t = CallableTarget(lambda p, n, seed: [0] * n)
    with pytest.raises(InvalidParameter):
        t.sample([1.5], 2, seed=0)
    with pytest.raises(InvalidParameter):
        t.sample([0.5], -1, seed=0)


def test_validate_sample_evaluations():
    with pytest.raises(TargetError, match="evaluation"):
        validate_sample([1, 1], [3], 2, 2)
    s = validate_sample([1, 0], [3, 4], 2, 2)
    assert s.evaluations.tolist() == [3, 4]


def test_subprocess_target_batches_and_is_reproducible():
    with SubprocessTarget(SERVE, timeout=60, max_batch=700) as t:
        a = t.sample([0.05, 0.1, 0.2], 2000, seed=11)
        assert t.requests == 3  # 700 + 700 + 600: large n per request, not one per run
        b = t.sample([0.05, 0.1, 0.2], 2000, seed=11)
        np.testing.assert_array_equal(a.halt, b.halt)
        e = t.sample([0.05], 10, seed=1, evaluations=True)
        assert e.evaluations.shape == (10,)


def test_subprocess_matches_in_process_simulator(plan):
    with SubprocessTarget(SERVE, timeout=60) as t:
        remote = t.sample([0.05, 0.1, 0.2], 5000, seed=4)
    local = SimulatorTarget(plan).sample([0.05, 0.1, 0.2], 5000, seed=4)
    np.testing.assert_array_equal(remote.halt, local.halt)


def test_subprocess_crash_is_a_target_error():
    with pytest.raises(TargetError, match="exited with code 3"):
        with SubprocessTarget(_script("import sys; sys.stdin.readline(); sys.exit(3)"), timeout=20) as t:
            t.sample([0.1], 5, seed=0)


def test_subprocess_hang_is_a_target_error():
    with pytest.raises(TargetError, match="did not answer within"):
        with SubprocessTarget(_script("import time; time.sleep(30)"), timeout=1.0) as t:
            t.sample([0.1], 5, seed=0)


def test_subprocess_malformed_json_is_a_target_error():
    body = "import sys; sys.stdin.readline(); print('this is not json', flush=True); sys.stdin.readline()"
    with pytest.raises(TargetError, match="malformed JSON"):
        with SubprocessTarget(_script(body), timeout=20) as t:
            t.sample([0.1], 5, seed=0)


def test_subprocess_wrong_length_is_a_target_error():
    body = ("import sys, json\nfor line in sys.stdin:\n    print(json.dumps({'halt': [1]}), flush=True)")
    with pytest.raises(TargetError, match="expected 5"):
        with SubprocessTarget(_script(body), timeout=20) as t:
            t.sample([0.1], 5, seed=0)


def test_subprocess_missing_program():
    with pytest.raises(TargetError, match="cannot start"):
        SubprocessTarget("/nonexistent/program --flag")


# --- hostile and misbehaving targets: process groups, drained stderr, bounded waits ----

def _serve_loop(extra: str = "") -> list[str]:
    """A protocol-speaking target: answers every request with 'never halted'."""
    return _script("import sys, json\n" + extra + "\nfor line in sys.stdin:\n"
                   "    req = json.loads(line)\n"
                   "    print(json.dumps({'halt': [0] * req['n']}), flush=True)")


def test_a_target_writing_to_stderr_on_every_request_is_not_declared_hung():
    body = ("import sys, json\nfor line in sys.stdin:\n    req = json.loads(line)\n"
            "    sys.stderr.write('x' * 100000 + '\\n'); sys.stderr.flush()\n"
            "    print(json.dumps({'halt': [0] * req['n']}), flush=True)")
    with SubprocessTarget(_script(body), timeout=10) as t:
        for i in range(20):  # 2 MB of stderr: an undrained pipe blocks after 64 KB
            assert t.sample([0.1], 3, seed=i).halt.tolist() == [0, 0, 0]


def test_background_children_holding_stderr_do_not_delay_the_end(tmp_path):
    import time

    start = time.monotonic()
    with SubprocessTarget(["sh", "-c", f"sleep 300 & exec {PY} -c \"$0\"", _serve_loop()[2]], timeout=10) as t:
        t.sample([0.1], 2, seed=0)
        group = t.process_group_id()
    assert time.monotonic() - start < 8
    from gtm_core.process_supervisor import group_members

    assert group_members(group) == []


def test_hung_target_behind_sh_is_killed_with_its_whole_tree():
    from gtm_core.process_supervisor import group_members

    t = SubprocessTarget(["sh", "-c", "sleep 301 & sleep 302"], timeout=0.5)
    group = t.process_group_id()
    with pytest.raises(TargetError, match="did not answer within 0.5 s"):
        t.sample([0.1], 1, seed=0)
    t.close()
    assert group_members(group) == []


def test_the_audit_deadline_bounds_a_slow_answer():
    import time

    t = SubprocessTarget(_script("import time; time.sleep(30)"), timeout=60)
    t.set_deadline(time.monotonic() + 1.0)
    start = time.monotonic()
    with pytest.raises(TargetError, match="time budget"):
        t.sample([0.1], 1, seed=0)
    assert time.monotonic() - start < 3
    t.close()


def test_a_target_that_closes_stdout_but_keeps_running_fails_at_once():
    import time

    start = time.monotonic()
    with pytest.raises(TargetError, match="closed its output"):
        with SubprocessTarget(["sh", "-c", "exec 1>&-; sleep 30"], timeout=20) as t:
            t.sample([0.1], 1, seed=0)
    assert time.monotonic() - start < 5


def test_deeply_nested_json_from_a_target_is_a_target_error():
    body = "import sys\nsys.stdin.readline()\nprint('[' * 100000 + ']' * 100000, flush=True)\nsys.stdin.readline()"
    with pytest.raises(TargetError, match="nests deeper"):
        with SubprocessTarget(_script(body), timeout=20) as t:
            t.sample([0.1], 1, seed=0)


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, 0.0, -1.0, float("nan")])
def test_absurd_timeouts_are_refused(timeout):
    with pytest.raises(InvalidParameter, match="timeout must be a number of seconds"):
        SubprocessTarget(SERVE, timeout=timeout)


def test_budget_stop_codes_are_accepted():
    # -t: stopped at step t on the evaluation budget (docs/protocol.md)
    s = CallableTarget(lambda p, n, seed: [0, -1, -2]).sample([0.1, 0.2], 3, seed=0)
    assert s.halt.tolist() == [0, -1, -2]


def test_reference_target_answers_budget_stops():
    # evaluation_budget_factor = 1: most runs on an all-zero stream stop on their budget, and the
    # reference target answers -t instead of raising EvaluationBudgetExceeded
    plan = make_plan(GTMConfig.load(Path(__file__).resolve().parents[2] / "examples" / "unsafe_budget.toml"))
    halt = ReferenceTarget(plan).sample([0.0] * 20, 20, seed=0).halt
    assert (halt < 0).sum() >= 10 and halt.min() >= -20
