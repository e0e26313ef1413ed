"""Supervisor for a child process tree: ``python -m gtm_core.process_supervisor -- CMD ARG...``.

:class:`gtm_core.processes.ProcessGroup` starts every external command (audit targets, deployment
mechanisms) through this small program, so that the command's *whole process tree* dies with the
``gtm`` process that started it, even when ``gtm`` itself is killed with SIGKILL:

1. the supervisor runs in a new session (its own process group; ``start_new_session=True`` in the
   parent), so ``os.killpg`` reaches the command and every background child it leaves;
2. it asks the kernel (``prctl(PR_SET_PDEATHSIG, SIGTERM)``, Linux) for SIGTERM when its parent
   dies, and re-checks the parent afterwards to close the race between ``fork`` and ``prctl``;
3. it is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``): background children the command
   leaves behind are re-parented to the supervisor, not to init, so the supervisor reaps them and
   no zombie outlives the group;
4. if the parent asked for it (a descriptor named by ``GTM_SUPERVISOR_START_FD``), it reports
   there whether the command's program could be executed ("started") or not ("failed: REASON");
5. on SIGTERM, SIGINT or SIGHUP, and when the command exits, it SIGKILLs every other member of
   its process group **and every descendant** (found through ``/proc``: the ``ppid`` tree below
   the supervisor), reaps them, and exits with the command's exit code (128 + signal number if a
   signal ended it). Descendants matter because a child that calls ``setsid`` leaves the process
   group; as a subreaper the supervisor stays its ancestor (orphans are re-parented to it), so
   it is still found and killed.

Standard input, output and error are inherited unchanged, so the protocol bytes pass through
untouched.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
#: names the descriptor on which the supervisor reports "started" or "failed: REASON" (optional)
START_FD_VARIABLE = "GTM_SUPERVISOR_START_FD"
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> None:
    """Linux ``prctl(option, value)``; a no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, int(value), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def live_processes() -> dict[int, tuple[int, int]]:
    """``{pid: (ppid, pgid)}`` of every live (non-zombie) process, from one pass over ``/proc``."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] != b"Z":
            out[int(entry)] = (int(fields[1]), int(fields[2]))
    return out


def group_members(pgid: int, *, exclude: int | None = None, table: dict | None = None) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``, from ``/proc``."""
    table = live_processes() if table is None else table
    return [pid for pid, (_, g) in table.items() if g == pgid and pid != exclude]


def descendants(root: int, *, table: dict | None = None) -> list[int]:
    """Live (non-zombie) descendants of ``root`` (children, their children, ...), from ``/proc``."""
    table = live_processes() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid != root and pid not in out:
            out.append(pid)
            todo.extend(children.get(pid, ()))
    return out


def reap_children() -> None:
    """Reap every child that has already exited (non-blocking)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def terminate_group(code: int = 137) -> None:
    """SIGKILL and reap every other member of this supervisor's group and every descendant of the
    supervisor (also those that left the group with ``setsid``), then exit with ``code``."""
    me, pgid = os.getpid(), os.getpgid(0)
    for _ in range(200):
        table = live_processes()
        members = sorted(set(group_members(pgid, exclude=me, table=table)) | set(descendants(me, table=table)))
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap_children()
        if not members:
            break
        time.sleep(0.01)
    reap_children()
    os._exit(code)


def report_start(fd: int, message: str) -> None:
    """Tell the parent whether the command's program could be executed (the start pipe of
    :class:`gtm_core.processes.ProcessGroup`, when it asked for one), then close the pipe."""
    if fd < 0:
        return
    try:
        os.write(fd, message.encode("utf-8", "replace")[:512] + b"\n")
        os.close(fd)
    except OSError:
        pass


def on_signal(signum, frame) -> None:
    terminate_group(128 + signum)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("process_supervisor: no command given\n")
        return 2
    parent = int(os.environ.get("GTM_SUPERVISOR_PARENT", "0") or 0)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    if parent and os.getppid() != parent:  # the parent died before prctl took effect
        return 137
    env = {k: v for k, v in os.environ.items() if k not in ("GTM_SUPERVISOR_PARENT", START_FD_VARIABLE)}
    start_fd = int(os.environ.get(START_FD_VARIABLE, "-1") or -1)
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as exc:
        reason = f"{exc.strerror or exc}"
        sys.stderr.write(f"cannot start {argv[0]!r}: {reason}\n")
        sys.stderr.flush()
        report_start(start_fd, f"failed: {reason}")
        return 127
    report_start(start_fd, "started")  # the command's program was executed
    # hand the pipes to the command alone: the command closing its output must reach the reader
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    code = child.wait()
    # the command is gone: whatever it left behind in the group goes with it
    terminate_group(code if code >= 0 else 128 - code)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
