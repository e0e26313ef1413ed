"""Mechanisms run as commands (issue 14): whole process tree killed on timeout, on Ctrl-C and when
gtm itself dies; a command that cannot start is refused before the write-ahead record."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from audits.cli import cli
from gtm_core import GTMConfig
from gtm_core.deployment import CommandMechanism, Deployment
from gtm_core.errors import InvalidParameter, MechanismError

ROOT = Path(__file__).resolve().parents[3]
CONFIG = GTMConfig.from_dict({
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 50},
})


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def wait_until(pred, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def tree_command(pidfile: Path) -> str:
    """A mechanism that leaves a background child and never answers; both pids go to pidfile."""
    return f"sh -c 'sleep 300 & echo $! >> {pidfile}; echo $$ >> {pidfile}; sleep 301'"


def pids(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []


def raw_body(path):
    return json.loads(Path(path).read_text())["body"]


def test_timeout_kills_the_whole_tree(tmp_path):
    pidfile = tmp_path / "pids"
    with Deployment.create(tmp_path / "s", CONFIG, seed=1) as dep:
        mech = CommandMechanism(tree_command(pidfile), step=1, time_limit=1.0)
        with pytest.raises(MechanismError, match="time limit"):
            dep.step(mech, time_limit=1.0)
    assert len(pids(pidfile)) == 2  # it did start (else the test proves nothing)
    assert wait_until(lambda: not any(alive(p) for p in pids(pidfile)))
    assert raw_body(tmp_path / "s")["failure"]["kind"] == "mechanism_timeout"


def test_sigkill_of_gtm_kills_the_whole_tree(tmp_path):
    pidfile = tmp_path / "pids"
    state = tmp_path / "s"
    Deployment.create(state, CONFIG, seed=1).close()
    script = tmp_path / "gtm.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from gtm_core.deployment import CommandMechanism, Deployment
        with Deployment.open({str(state)!r}) as dep:
            dep.step(CommandMechanism({tree_command(pidfile)!r}, step=1), time_limit=60)
    """))
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        assert wait_until(lambda: len(pids(pidfile)) == 2, seconds=30)
        assert all(alive(p) for p in pids(pidfile))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=5)
        assert wait_until(lambda: not any(alive(p) for p in pids(pidfile)), seconds=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        for p in pids(pidfile):
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_a_missing_program_is_refused_before_the_write_ahead_record(tmp_path):
    with pytest.raises(InvalidParameter, match="not found or not executable"):
        CommandMechanism("/nonexistent --flag")
    state = tmp_path / "s"
    assert CliRunner().invoke(cli, ["deploy", "init", str(state), "--config",
                                    str(ROOT / "examples" / "default.toml")]).exit_code == 0
    before = state.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "step", str(state),
                        "--mechanism-cmd", "/nonexistent"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert "/nonexistent" in p.stderr and "Traceback" not in p.stderr
    assert state.read_bytes() == before  # nothing written: still running, same generation
    assert raw_body(state)["status"] == "running"


def test_ctrl_c_during_a_step_is_honoured_within_a_second(tmp_path):
    pidfile = tmp_path / "pids"
    state = tmp_path / "s"
    assert CliRunner().invoke(cli, ["deploy", "init", str(state), "--config",
                                    str(ROOT / "examples" / "default.toml")]).exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "audits.cli", "deploy", "step", str(state),
                             "--mechanism-cmd", tree_command(pidfile), "--timeout", "120"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a test runner started in the background of a non-interactive shell ignores
                            # SIGINT, and an ignored SIGINT is inherited (Python then installs no handler)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert wait_until(lambda: len(pids(pidfile)) == 2, seconds=30)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        # the tree kill is bounded by ~3 s in the worst case; here the supervisor obeys at once
        assert time.monotonic() - t0 < 1.5, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=5)  # also closes the pipes
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert raw_body(state)["failure"]["kind"] == "interrupted"
    assert wait_until(lambda: not any(alive(p) for p in pids(pidfile)))
