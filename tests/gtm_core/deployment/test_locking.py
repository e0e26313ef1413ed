"""Path aliasing and locking: a state reached through a symlink is the same deployment
(the real file is locked and written, the link survives), and deleting STATE.lock while a
deployment is open does not let a second process in (the key file is flocked too)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gtm_core import GTMConfig
from gtm_core.deployment import Deployment
from gtm_core.errors import StateError

ROOT = Path(__file__).resolve().parents[3]
CONFIG = GTMConfig.from_dict({
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 50},
})


def never(data=None):
    return -1


def test_a_symlinked_state_is_the_same_deployment_and_stays_a_link(tmp_path):
    real = tmp_path / "real"
    Deployment.create(real, CONFIG, seed=1).close()
    link = tmp_path / "link"
    link.symlink_to(real)
    with Deployment.open(link) as dep:
        assert dep.path == real
        dep.step(never)
        with pytest.raises(StateError, match="in use"):
            Deployment.open(real)  # one lock for both names
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["body"]["steps_done"] == 1  # the target was written
    with Deployment.open(real) as dep:
        assert dep.steps_done == 1  # no stale copy left behind to re-run step 1 from


def test_deleting_the_lock_file_does_not_let_a_second_process_in(tmp_path):
    state = tmp_path / "s"
    Deployment.create(state, CONFIG, seed=1).close()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from gtm_core.deployment import Deployment
        dep = Deployment.open({str(state)!r})
        print("open", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        os.unlink(str(state) + ".lock")  # the attack: remove the lock file during the holder's run
        with pytest.raises(StateError, match="in use"):
            Deployment.open(state)
    finally:
        holder.kill()
        holder.wait(timeout=5)
        holder.stdout.close()
    with Deployment.open(state) as dep:  # the holder's death releases both locks
        assert dep.status == "running"
