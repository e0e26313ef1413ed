"""`gtm audit --workers / --scheduler`: bad flags, unreachable scheduler, same JSON, Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVE = f"{sys.executable} -m audits.serve examples/default.toml"
AUDIT = ["audit", "--target", SERVE, "--epsilon", "1", "--eps-t", "0.1", "--seed", "3", "--quiet"]


def gtm(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "audits.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_workers_and_scheduler_together_is_exit_2(tmp_path):
    res = gtm(*AUDIT, "--max-samples", "4000", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9")
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0 and "not both" in res.stderr


def test_unreachable_scheduler_is_exit_2_one_line_no_output_within_the_timeout(tmp_path):
    out = tmp_path / "a.json"
    t0 = time.monotonic()
    res = gtm(*AUDIT, "--max-samples", "4000", "--scheduler", "tcp://127.0.0.1:9", "--json", str(out))
    assert time.monotonic() - t0 < 10 + 30  # CONNECT_SECONDS + interpreter start-up on a loaded machine
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().count("\n") == 0 and "cannot reach scheduler tcp://127.0.0.1:9 within 10 s" in res.stderr
    assert not out.exists()


@pytest.mark.slow
def test_two_workers_write_the_same_audit_json(tmp_path):
    docs = []
    for flags in ([], ["--workers", "2"]):
        out = tmp_path / f"a{len(docs)}.json"
        res = gtm(*AUDIT, "--max-samples", "3000000", "--seconds", "900", "--json", str(out), *flags)
        assert res.returncode == 0, res.stderr
        d = json.loads(out.read_text())
        assert d["execution"]["reproducible"] is True
        docs.append(d)
    assert docs[1]["execution"]["workers"] == 2 and docs[1]["execution"]["kind"] == "dask"
    from audits.audit_results import without_timings

    docs = [without_timings(d) for d in docs]
    assert json.dumps(docs[0], sort_keys=True) == json.dumps(docs[1], sort_keys=True)


def descendants(pid: int) -> dict[int, str]:
    """Every live descendant of ``pid``: {pid: command line}."""
    parent: dict[int, int] = {}
    cmd: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            parent[int(entry)] = int(fields[1])
    out, todo = {}, [pid]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p and c not in out:
                out[c] = cmd.get(c, "")
                todo.append(c)
    return out


def alive(pid: int, cmdline: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and now == cmdline


SCRIPT = f"""
import sys
from audits.gtm_audit import audit
from audits.execution import DaskExecutor
from audits.targets import SubprocessTarget
if __name__ == "__main__":
    # as `gtm audit --workers 2` does it, but every request on the workers (their own targets) at once
    with DaskExecutor(workers=2, local_runs=0) as ex, SubprocessTarget({SERVE!r}) as t:
        audit(t, executor=ex, epsilon=1.0, eps_t=0.1, seconds=None, max_samples=40_000_000, progress=False)
"""


@pytest.mark.slow
def test_ctrl_c_leaves_no_cluster_or_target_process(tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen: dict[int, str] = {}
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:  # until both workers run their own targets
            seen.update(descendants(proc.pid))
            if sum("audits.serve" in c and "supervisor" not in c for c in seen.values()) >= 2:
                break
            time.sleep(0.3)
        targets = [c for c in seen.values() if "audits.serve" in c and "supervisor" not in c]
        assert len(targets) >= 2, seen  # one per worker
        assert sum("multiprocessing" in c for c in seen.values()) >= 2, seen  # worker processes
        time.sleep(1)
        seen.update(descendants(proc.pid))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    time.sleep(2)
    left = {p: c for p, c in seen.items() if alive(p, c)}
    assert left == {}, left
    assert proc.returncode != 0 and b"KeyboardInterrupt" in err
