"""Process groups: every external command's tree dies with us, every wait is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from gtm_core.errors import InvalidParameter
from gtm_core.process_supervisor import group_members
from gtm_core.processes import ProcessClosed, ProcessGroup, ProcessTimeout, resolve_command


def wait_until(pred, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_resolve_command_refuses_missing_programs():
    with pytest.raises(InvalidParameter, match="mechanism-cmd: program '/nonexistent' not found"):
        resolve_command("/nonexistent --x", field="mechanism-cmd")
    with pytest.raises(InvalidParameter, match="must not be empty"):
        resolve_command("  ")
    with pytest.raises(InvalidParameter, match="cannot be parsed"):
        resolve_command("sh -c 'unclosed")
    assert resolve_command("sh -c true").argv[0].endswith("sh")


def test_kill_ends_background_children_and_leaves_no_zombie_in_the_group():
    g = ProcessGroup(resolve_command("sh -c 'sleep 300 & sleep 301 & wait'"))
    assert wait_until(lambda: len(group_members(g.pgid)) >= 4)  # supervisor, sh, two sleeps
    start = time.monotonic()
    g.kill()
    assert time.monotonic() - start < 3
    assert not g.group_alive()


def test_background_children_die_when_the_command_exits():
    g = ProcessGroup(resolve_command("sh -c 'sleep 300 & exit 3'"))
    try:
        assert g.wait(time.monotonic() + 5) == 3
        assert wait_until(lambda: not g.group_alive())
    finally:
        g.kill()


def test_the_tree_dies_when_the_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from gtm_core.processes import ProcessGroup, resolve_command
        g = ProcessGroup(resolve_command("sh -c 'sleep 302 & sleep 303'"))
        print(g.pgid, flush=True)
        time.sleep(60)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pgid = int(parent.stdout.readline())
        assert wait_until(lambda: len(group_members(pgid)) >= 3)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=5)
        assert wait_until(lambda: not group_members(pgid), seconds=5)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=5)
        parent.stdout.close()


def test_chatty_stderr_never_blocks_and_its_tail_is_kept():
    # 1 MB of stderr before answering: a pipe that is not drained would block the child
    g = ProcessGroup(resolve_command(
        [sys.executable, "-c", "import sys\nsys.stderr.write('x' * 1000000 + '\\nlast words\\n')\n"
                               "sys.stderr.flush()\nprint(sys.stdin.readline().strip(), flush=True)"]))
    try:
        g.write(b"ping\n", time.monotonic() + 5)
        assert g.read_line(time.monotonic() + 10) == b"ping"
        assert wait_until(lambda: g.stderr_tail() == "last words")
    finally:
        g.kill()


def test_read_is_bounded_by_the_deadline():
    g = ProcessGroup(resolve_command("sleep 30"))
    try:
        start = time.monotonic()
        with pytest.raises(ProcessTimeout):
            g.read_line(start + 0.3)
        assert time.monotonic() - start < 1.5
    finally:
        g.kill()


def test_closed_output_is_reported_at_once_even_if_the_command_keeps_running():
    g = ProcessGroup(resolve_command("sh -c 'exec 1>&-; sleep 30'"))
    try:
        start = time.monotonic()
        with pytest.raises(ProcessClosed, match="closed its output"):
            g.read_line(start + 20)
        assert time.monotonic() - start < 5
    finally:
        g.kill()
    assert not g.group_alive()


def running_with_argv(*argv: str) -> list[int]:
    """Live processes whose command line is exactly ``argv``."""
    want = ("\0".join(argv) + "\0").encode()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if fh.read() == want:
                        with open(f"/proc/{entry}/stat", "rb") as st:
                            if st.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                                out.append(int(entry))
            except OSError:
                pass
    return out


def setsid_sleep(seconds: str) -> str:
    """A command whose background child leaves the process group and session (``setsid``)."""
    return f"sh -c 'setsid sleep {seconds} & sleep 300'"


@pytest.mark.parametrize("how", ["kill", "command_exits", "parent_killed"])
def test_a_child_that_calls_setsid_does_not_escape(how, tmp_path):
    """The attack: `setsid sleep 611 &` in a mechanism or target left the group, so killing the group
    (or gtm's death) missed it. The supervisor is a subreaper and kills its descendants too."""
    seconds = f"611.{os.getpid()}{len(how)}"  # unique, so the test finds only its own sleep
    if how == "parent_killed":
        script = tmp_path / "parent.py"
        script.write_text(textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {os.getcwd()!r})
            from gtm_core.processes import ProcessGroup, resolve_command
            g = ProcessGroup(resolve_command({setsid_sleep(seconds)!r}))
            print(g.pgid, flush=True)
            time.sleep(60)
        """))
        parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
        try:
            pgid = int(parent.stdout.readline())
            assert wait_until(lambda: running_with_argv("sleep", seconds))
            assert os.getsid(running_with_argv("sleep", seconds)[0]) != pgid  # it left the session
            parent.send_signal(signal.SIGKILL)
            parent.wait(timeout=5)
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait(timeout=5)
            parent.stdout.close()
    else:
        command = setsid_sleep(seconds) if how == "kill" else f"sh -c 'setsid sleep {seconds} & sleep 0.5'"
        g = ProcessGroup(resolve_command(command))
        try:
            assert wait_until(lambda: running_with_argv("sleep", seconds))
            escaped = running_with_argv("sleep", seconds)[0]
            assert os.getpgid(escaped) != g.pgid  # not reachable by killing the group
            if how == "kill":
                g.kill()
            else:
                assert g.wait(time.monotonic() + 10) == 0
        finally:
            g.kill()
    assert wait_until(lambda: not running_with_argv("sleep", seconds), seconds=5)
