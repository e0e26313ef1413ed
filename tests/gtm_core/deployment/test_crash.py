"""Crash test: SIGKILL a process running a persisted deployment, reopen, check the invariants.

Two kinds of kills, all bounded and seeded:

* injected: the worker kills itself (SIGKILL) at a named point of the write protocol
  (``gtm_core.deployment.state.fault_hook``), at every point, for the write-ahead and the commit
  write, and inside the mechanism's evaluation;
* random: the parent kills a worker that steps continuously after a random delay.

After every kill the parent reopens the state and checks, against a log the worker appends to
(O_APPEND writes survive SIGKILL):

1. eta_1 never changed: the raw state file's eta_1 bits (exact sampler) still begin with the
   bits stored at creation (a later step may only append bits of the same real);
2. no committed step was lost: every step the worker saw returned is committed;
3. no step was double-counted: committed steps = (steps seen returned) or one more;
   ``evaluations_total`` equals the evaluations logged for the committed steps;
4. no step was evaluated twice: every step index appears at most once in the evaluation log,
   across all processes that ever ran the deployment;
5. the transcript is consistent (run-length encoding matches the committed steps) and a
   crash in the write-ahead window left the deployment failed at exactly that step.
"""

import json
import os
import random
import signal
import time
import traceback

import numpy as np
import pytest

from gtm_core import GTMConfig
from gtm_core.deployment import state as S
from gtm_core.deployment import Deployment
from gtm_core.errors import HaltedError, StateError

SEED = 20261130
CONFIG = GTMConfig.from_dict({
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 100000},
})


def raw_body(path):
    with open(path) as fh:
        return json.loads(fh.read())["body"]


def same_eta1(stored_hex, created_hex):
    """The stored eta_1 bits extend (or equal) the bits stored at creation."""
    from gtm_core.exact_sampling import LazyUniform, SystemBits

    m, n = LazyUniform.from_hex(stored_hex, SystemBits()).prefix()
    m0, n0 = LazyUniform.from_hex(created_hex, SystemBits()).prefix()
    return n >= n0 > 0 and m >> (n - n0) == m0


class LoggingMechanism:
    """Bernoulli(0) (continue) or Bernoulli(1) (halt) mechanism that logs each evaluation batch."""

    def __init__(self, log_fd, rng, halt_probability, sleep_max, kill_in_eval=False):
        self.fd, self.rng = log_fd, rng
        self.halt_probability, self.sleep_max, self.kill_in_eval = halt_probability, sleep_max, kill_in_eval
        self.t = None
        self.p = 0.0

    def __call__(self, data=None):
        return self.batch(data, 1)[0]

    def batch(self, data, n):
        os.write(self.fd, f"eval {self.t} {n}\n".encode())
        if self.kill_in_eval:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.sleep_max:
            time.sleep(self.rng.uniform(0, self.sleep_max))
        return self.rng.random(n) < self.p


def worker(state, log_path, *, seed, create=False, kill_point=None, occurrence=1,
           kill_in_eval=False, halt_probability=0.0, sleep_max=0.0, idle_max=0.0, max_steps=10**9):
    """Runs in the forked child; never returns."""
    code = 0
    try:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if kill_point is not None:
            hits = {"n": 0}

            def hook(point):
                if point == kill_point:
                    hits["n"] += 1
                    if hits["n"] == occurrence:
                        os.kill(os.getpid(), signal.SIGKILL)

            S.fault_hook = hook
        rng = np.random.default_rng(seed)
        if create:
            Deployment.create(state, CONFIG).close()
            os.write(fd, b"created\n")
        mech = LoggingMechanism(fd, rng, halt_probability, sleep_max, kill_in_eval)
        with Deployment.open(state) as dep:
            for _ in range(max_steps):
                if dep.status != "running":
                    break
                mech.t = dep.next_step
                mech.p = 1.0 if rng.random() < halt_probability else 0.0
                try:
                    halted = dep.step(mech)
                except HaltedError:
                    break
                os.write(fd, f"done {mech.t} {int(halted)}\n".encode())
                if idle_max:  # time between steps, as in a real deployment
                    time.sleep(rng.uniform(0, idle_max))
    except BaseException:
        try:
            os.write(fd, ("error " + traceback.format_exc().replace("\n", " | ") + "\n").encode())
        except Exception:
            pass
        code = 3
    os._exit(code)


def spawn(*args, **kwargs) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        worker(*args, **kwargs)
    return pid


def read_log(log_path):
    evals, done, errors = {}, [], []
    if not os.path.exists(log_path):
        return evals, done, errors
    with open(log_path) as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "eval":
                evals.setdefault(int(parts[1]), []).append(int(parts[2]))
            elif parts[0] == "done":
                done.append(int(parts[1]))
            elif parts[0] == "error":
                errors.append(line)
    return evals, done, errors


def verify(state, log_path, eta1, floor=0):
    """The invariants of the module docstring; returns the reopened status.

    ``floor``: the committed steps the parent verified before it started the killed worker
    (each killed worker may commit one step it never saw returned).
    """
    evals, done, errors = read_log(log_path)
    assert not errors, errors[0]
    assert same_eta1(raw_body(state)["secret"]["eta1_bits"], eta1)  # (1) before recovery
    pending = raw_body(state)["pending_step"]
    with Deployment.open(state) as dep:
        committed = dep.steps_done
        assert same_eta1(raw_body(state)["secret"]["eta1_bits"], eta1)  # (1) after recovery
        last_seen = max(done + [floor])
        assert all(t <= committed for t in done)  # (2) nothing lost
        assert committed in (last_seen, last_seen + 1)  # (3) nothing invented
        assert all(len(v) == 1 for v in evals.values()), evals  # (4) at most one evaluation per step
        assert max(evals, default=0) <= committed + 1
        assert dep.evaluations_total == sum(v[0] for t, v in evals.items() if t <= committed)  # (3)
        assert len(dep.public_transcript()) == committed  # (5)
        if pending is not None:
            assert dep.failed and dep.failure["kind"] == "crashed_during_step"
            assert dep.failure["step"] == pending == committed + 1
        if dep.failed:
            assert dep.failure["step"] == committed + 1
        if dep.halted:
            assert dep.public_transcript()[-1] == 1 and dep.halted_at == committed
        return dep.status


def kill_and_wait(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def run_to_exit(pid):
    _, status = os.waitpid(pid, 0)
    return status


# -- injected kills at every protocol point ------------------------------------------------------

STEP_POINTS = [
    ("step:noise_drawn", 1), ("write:tmp_written", 1), ("write:tmp_fsynced", 1), ("write:renamed", 1),
    ("write:dir_fsynced", 1), ("step:pending_written", 1), ("step:evaluated", 1),
    ("write:tmp_written", 2), ("write:tmp_fsynced", 2), ("write:renamed", 2), ("write:dir_fsynced", 2),
    ("step:committed", 1),
]


@pytest.mark.parametrize("point, occurrence", STEP_POINTS)
def test_injected_kill_during_a_step(tmp_path, point, occurrence):
    state, log = tmp_path / "s", tmp_path / "log"
    Deployment.create(state, CONFIG).close()
    eta1 = raw_body(state)["secret"]["eta1_bits"]
    # two clean steps, then a third that is killed at the point
    assert os.WEXITSTATUS(run_to_exit(spawn(state, log, seed=1, max_steps=2))) == 0
    assert verify(state, log, eta1) == "running"
    status = run_to_exit(spawn(state, log, seed=2, kill_point=point, occurrence=occurrence, max_steps=1))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    result = verify(state, log, eta1, floor=2)
    # the write-ahead record is durable once it was renamed into place (occurrence 1); the
    # commit is durable once renamed (occurrence 2)
    renamed = point in ("write:renamed", "write:dir_fsynced")
    after_write_ahead = point in ("step:pending_written", "step:evaluated") or (
        point.startswith("write:") and (occurrence == 1) == renamed)
    if after_write_ahead:
        assert result == "failed"
    else:
        assert result == "running"
        floor = raw_body(state)["steps_done"]
        assert floor == (3 if point in ("step:committed", "write:renamed", "write:dir_fsynced") else 2)
        assert os.WEXITSTATUS(run_to_exit(spawn(state, log, seed=3, max_steps=2))) == 0
        verify(state, log, eta1, floor=floor)


def test_kill_inside_the_mechanism_fails_the_deployment(tmp_path):
    state, log = tmp_path / "s", tmp_path / "log"
    Deployment.create(state, CONFIG).close()
    eta1 = raw_body(state)["secret"]["eta1_bits"]
    status = run_to_exit(spawn(state, log, seed=1, kill_in_eval=True))
    assert os.WIFSIGNALED(status)
    assert verify(state, log, eta1) == "failed"
    assert read_log(log)[0] == {1: read_log(log)[0][1]} and len(read_log(log)[0][1]) == 1


@pytest.mark.parametrize("point", ["write:tmp_fsynced", "create:key_written", "create:state_written"])
def test_injected_kill_during_create(tmp_path, point):
    state, log = tmp_path / "s", tmp_path / "log"
    status = run_to_exit(spawn(state, log, seed=1, create=True, kill_point=point, max_steps=0))
    assert os.WIFSIGNALED(status)
    if point == "create:state_written":
        body = raw_body(state)
        assert verify(state, log, body["secret"]["eta1_bits"]) == "running"
    else:
        assert not state.exists()  # no half-written state, and never a state without its key
        if point == "create:key_written":
            with pytest.raises(StateError, match="key file"):
                Deployment.create(state, CONFIG)
        else:
            Deployment.create(state, CONFIG).close()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] or point != "create:state_written"


# -- random kills ---------------------------------------------------------------------------------


def random_kill_campaign(tmp_path, kills: int, seed: int) -> dict:
    """Kill continuously stepping workers at random moments; returns counts for the report."""
    rnd = random.Random(seed)
    counts = {"kills": 0, "deployments": 0, "failed": 0, "halted": 0, "steps_committed": 0,
              "resumed_after_kill": 0}
    state = log = None
    eta1, floor = None, 0
    while counts["kills"] < kills:
        if state is None:
            counts["deployments"] += 1
            state, log = tmp_path / f"s{counts['deployments']}", tmp_path / f"log{counts['deployments']}"
            Deployment.create(state, CONFIG).close()
            eta1, floor = raw_body(state)["secret"]["eta1_bits"], 0
        pid = spawn(state, log, seed=rnd.randrange(2**32), halt_probability=0.02, sleep_max=0.01,
                    idle_max=0.04)
        time.sleep(rnd.uniform(0.0, 0.15))
        kill_and_wait(pid)
        counts["kills"] += 1
        status = verify(state, log, eta1, floor)
        floor = raw_body(state)["steps_done"]
        if status == "running":
            counts["resumed_after_kill"] += 1
        else:
            counts[status] += 1
            counts["steps_committed"] += raw_body(state)["steps_done"]
            state = None
    if state is not None:
        counts["steps_committed"] += raw_body(state)["steps_done"]
    return counts


def test_random_kills(tmp_path):
    counts = random_kill_campaign(tmp_path, kills=30, seed=SEED)
    print(f"\ncrash test: {counts}")
    assert counts["kills"] == 30 and counts["steps_committed"] > 0 and counts["resumed_after_kill"] > 0


@pytest.mark.slow
def test_random_kills_many(tmp_path):
    counts = random_kill_campaign(tmp_path, kills=200, seed=SEED + 1)
    print(f"\ncrash test (slow): {counts}")
    assert counts["kills"] == 200 and counts["failed"] > 0 and counts["resumed_after_kill"] > 0
    assert counts["steps_committed"] > 100
