"""Mechanisms run as commands: whole process tree killed on timeout, on Ctrl-C and when gtm itself
dies; a command that cannot start (a missing program, a missing interpreter, a file that is not an
executable format) is refused before the step's draw and write-ahead record."""

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
from gtm_core.process_supervisor import group_members

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
                       cwd=ROOT, env=env, timeout=120, start_new_session=True)
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
        # the command starts before the write-ahead record: wait for both, so the step is under way
        assert wait_until(lambda: len(pids(pidfile)) == 2 and raw_body(state)["pending_step"] == 1,
                          seconds=30)
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


def _unstartable(tmp_path: Path) -> dict[str, Path]:
    """Programs that exist and are executable (resolve_command accepts them) but cannot start."""
    interp = tmp_path / "missing_interpreter.sh"
    interp.write_text("#!/nonexistent/interp\necho 1\n")
    garbage = tmp_path / "bad_binary"
    garbage.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"not really an executable")
    for p in (interp, garbage):
        p.chmod(0o755)
    return {"missing interpreter": interp, "bad binary": garbage}


@pytest.mark.parametrize("which", ["missing interpreter", "bad binary"])
def test_a_command_that_cannot_start_leaves_the_deployment_usable(tmp_path, which):
    """The program passes resolve_command; its start fails only in the kernel's exec. The step is
    refused before its draw and write-ahead record (exit 2, one line), and the next step runs."""
    program = _unstartable(tmp_path)[which]
    CommandMechanism(str(program))  # accepted at construction: the fault shows only at start
    state = tmp_path / "s"
    assert CliRunner().invoke(cli, ["deploy", "init", str(state), "--config",
                                    str(ROOT / "examples" / "default.toml")]).exit_code == 0
    before = state.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "step", str(state),
                        "--mechanism-cmd", str(program)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120, start_new_session=True)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, (p.returncode, p.stdout, p.stderr)
    assert "cannot start" in p.stderr and str(program) in p.stderr and "Traceback" not in p.stderr
    assert state.read_bytes() == before  # nothing written: still running, same generation
    good = f"{sys.executable} -c \"while True: print(-1)\""
    p = subprocess.run([sys.executable, "-m", "audits.cli", "deploy", "step", str(state),
                        "--mechanism-cmd", good], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=120, start_new_session=True)
    assert p.returncode == 0 and "step 1: continue" in p.stdout, (p.stdout, p.stderr)
    assert raw_body(state)["status"] == "running" and raw_body(state)["steps_done"] == 1


def test_api_start_failure_changes_nothing_and_the_same_handle_steps_on(tmp_path):
    programs = _unstartable(tmp_path)
    with Deployment.create(tmp_path / "s", CONFIG, seed=1) as dep:
        before = (tmp_path / "s").read_bytes()
        for program in programs.values():
            with pytest.raises(InvalidParameter, match="cannot start"):
                dep.step(CommandMechanism([str(program)], step=1))
        assert (tmp_path / "s").read_bytes() == before and dep.status == "running"
        assert dep._gtm.steps_taken == 0 and not dep._gtm.failed  # nothing was drawn
        assert dep.step(CommandMechanism([sys.executable, "-c", "while True: print(-1)"], step=1)) is False
        assert dep.steps_done == 1


def test_a_started_command_is_killed_unread_when_the_step_ends_before_its_evaluation(tmp_path, monkeypatch):
    """The command runs from before the draw; a step refused after its start (here its budget)
    kills the whole tree without reading an output."""
    import dataclasses

    from gtm_core.deployment import runner as dep_runner
    from gtm_core.errors import EvaluationBudgetExceeded

    pidfile = tmp_path / "pids"
    real = dep_runner.uncached_step_plan
    monkeypatch.setattr(dep_runner, "uncached_step_plan",
                        lambda cfg, t: dataclasses.replace(real(cfg, t), evaluation_budget=0))
    with Deployment.create(tmp_path / "s", CONFIG.with_changes(evaluation_budget="refuse"), seed=1) as dep:
        mech = CommandMechanism(tree_command(pidfile), step=1)
        groups = []
        real_start = mech.start

        def start():
            real_start()
            groups.append(mech._group.pgid)

        mech.start = start
        with pytest.raises(EvaluationBudgetExceeded):
            dep.step(mech, time_limit=30)
        assert mech._group is None
    assert len(groups) == 1  # it had started
    assert wait_until(lambda: not group_members(groups[0]))
    assert wait_until(lambda: not any(alive(p) for p in pids(pidfile)))
    assert raw_body(tmp_path / "s")["failure"]["kind"] == "evaluation_budget_exceeded"
