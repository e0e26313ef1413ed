"""External commands that cannot hang the tool: one process group each, bounded waits, drained stderr.

Every external program ``gtm`` talks to (an audit target speaking the JSON-lines protocol, a
deployment's mechanism command) runs through :class:`ProcessGroup`:

* **own process group, dies with us.** The command is started under
  :mod:`gtm_core.process_supervisor` in a new session, so :meth:`ProcessGroup.kill` reaches the whole
  tree (``sh -c`` wrappers, background children), and the tree also dies when ``gtm`` is killed
  (parent-death signal). :meth:`kill` is called on every exit path: normal close, timeout, error,
  Ctrl-C.
* **a start that fails is detected before anything runs**: :func:`resolve_command` checks that the
  program exists and is executable, so a caller can refuse the command before it records or spends
  anything; with ``start_deadline`` the constructor also waits until the program was actually
  executed (a script whose interpreter is missing, a file that is not an executable format: a
  :class:`ProcessClosed` naming the reason).
* **every wait is bounded** by an absolute ``deadline`` (``time.monotonic()`` seconds): writes to the
  child's input and reads of its output use non-blocking descriptors and ``selectors``.
* **stderr is drained continuously** by a daemon thread into a bounded buffer (a chatty child never
  blocks on a full pipe); its last line is available for error messages via :meth:`stderr_tail`.
"""

from __future__ import annotations

import collections
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from . import process_supervisor
from .errors import GTMError, InvalidParameter

STDERR_TAIL_BYTES = 4096
READ_CHUNK = 1 << 20
SUPERVISOR = os.path.abspath(process_supervisor.__file__)


class ProcessTimeout(GTMError):
    """An external command did not answer before its deadline."""


class ProcessClosed(GTMError):
    """An external command closed its output or exited before answering."""


@dataclass(frozen=True)
class Command:
    """A parsed external command: ``argv`` with its program resolved to an executable path."""

    argv: tuple[str, ...]
    text: str


def resolve_command(command: str | list[str], *, field: str = "command") -> Command:
    """Parse ``command`` (a shell-like string or an argv list) and check its program can be started.

    Raises :class:`InvalidParameter` naming ``field`` when the command is empty, cannot be parsed
    or names a program that does not exist or is not executable.
    """
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InvalidParameter(f"{field} cannot be parsed: {exc}") from None
        text = command
    else:
        argv = [str(a) for a in command]
        text = shlex.join(argv)
    if not argv:
        raise InvalidParameter(f"{field} must not be empty")
    program = argv[0]
    if os.sep in program:
        found = program if (os.path.isfile(program) and os.access(program, os.X_OK)) else None
    else:
        found = shutil.which(program)
    if found is None:
        raise InvalidParameter(f"{field}: program {program!r} not found or not executable")
    return Command((found, *argv[1:]), text)


class ProcessGroup:
    """A running external command in its own process group (see the module docstring).

    ``stdin`` is a pipe when ``stdin=True`` (else ``/dev/null``); stdout is always a pipe.
    """

    def __init__(self, command: Command, *, env: dict | None = None, stdin: bool = True,
                 start_deadline: float | None = None):
        # the supervisor is stdlib-only and run by path in isolated mode: no package import cost
        argv = [sys.executable, "-I", SUPERVISOR, "--", *command.argv]
        child_env = {**os.environ, **(env or {}), "GTM_SUPERVISOR_PARENT": str(os.getpid())}
        self.command = command
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._tail_lock = threading.Lock()
        start_r = start_w = None
        if start_deadline is not None:  # the supervisor reports whether the program was executed
            start_r, start_w = os.pipe()
            child_env[process_supervisor.START_FD_VARIABLE] = str(start_w)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=child_env, start_new_session=True, bufsize=0,
                pass_fds=() if start_w is None else (start_w,))
        except OSError as exc:  # the supervisor itself (our interpreter) could not start
            if start_r is not None:
                os.close(start_r)
            raise ProcessClosed(f"cannot start {command.text!r}: {exc.strerror or exc}") from None
        finally:
            if start_w is not None:
                os.close(start_w)  # the supervisor holds its own copy
        self.pgid = self.proc.pid  # leader of its new session
        self._buffer = b""
        self._eof = False
        os.set_blocking(self.proc.stdout.fileno(), False)
        if stdin:
            os.set_blocking(self.proc.stdin.fileno(), False)
        self._drain = threading.Thread(target=self._drain_stderr, name="gtm-stderr-drain", daemon=True)
        self._drain.start()
        if start_r is not None:
            try:
                self._confirm_start(start_r, start_deadline)
            except BaseException:
                self.kill()
                raise
            finally:
                os.close(start_r)

    def _confirm_start(self, fd: int, deadline: float) -> None:
        """Wait for the supervisor's report: "started", else ProcessClosed naming the reason."""
        report = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in report:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessTimeout(f"{self.command.text!r} did not start in time")
                if not sel.select(min(left, 0.5)):
                    continue
                chunk = os.read(fd, 1024)
                if not chunk:
                    break
                report += chunk
        line = report.split(b"\n", 1)[0].decode("utf-8", "replace")
        if line != "started":
            reason = line[len("failed: "):] if line.startswith("failed: ") else "it exited before starting"
            raise ProcessClosed(f"cannot start {self.command.text!r}: {reason}")

    # -- stderr -----------------------------------------------------------------------------
    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        try:
            while True:
                chunk = stream.read(65536)
                if not chunk:
                    return
                with self._tail_lock:
                    self._tail.append(chunk)
                    self._tail_size += len(chunk)
                    while self._tail_size > STDERR_TAIL_BYTES and len(self._tail) > 1:
                        self._tail_size -= len(self._tail.popleft())
        except (OSError, ValueError):
            return

    def stderr_tail(self) -> str:
        """The last non-empty line the command wrote to stderr (at most 200 characters), or ''."""
        with self._tail_lock:
            data = b"".join(self._tail)[-STDERR_TAIL_BYTES:]
        lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip()[:200] if lines else ""

    # -- I/O --------------------------------------------------------------------------------
    def write(self, data: bytes, deadline: float) -> None:
        """Write all of ``data`` to the command's input before ``deadline``."""
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessTimeout(f"{self.command.text!r} did not read its input in time")
                if not sel.select(min(left, 0.5)):
                    continue
                try:
                    n = os.write(fd, view)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, OSError):
                    raise ProcessClosed(f"{self.command.text!r} closed its input") from None
                view = view[n:]

    def read_line(self, deadline: float, *, max_bytes: int = 1 << 30) -> bytes:
        """One line of the command's output (without the newline), read before ``deadline``."""
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                if self._eof:
                    raise ProcessClosed(f"{self.command.text!r} closed its output before answering")
                if len(self._buffer) > max_bytes:
                    raise ProcessClosed(f"{self.command.text!r} wrote a line longer than {max_bytes} bytes")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessTimeout(f"{self.command.text!r} did not answer in time")
                if not sel.select(min(left, 0.5)):
                    continue
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._eof = True
                    continue
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def close_input(self) -> None:
        """Close the command's input (end of requests)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def exit_code(self) -> int | None:
        """The supervisor's exit code (the command's), or None while it runs."""
        return self.proc.poll()

    def wait(self, deadline: float) -> int | None:
        """Wait for the command to exit before ``deadline``; its exit code, or None if it still runs."""
        left = max(0.0, deadline - time.monotonic())
        try:
            return self.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """End the whole process tree (bounded: at most ~3 s).

        The supervisor is asked first (SIGTERM: it SIGKILLs and reaps every member of the group);
        if it has not exited within 2 s, the group is SIGKILLed directly.
        """
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if self.group_alive():
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self.close_input()
        try:
            self.proc.stdout.close()
        except OSError:
            pass
        self._drain.join(timeout=1)
        if not self._drain.is_alive():
            try:
                self.proc.stderr.close()
            except OSError:
                pass

    def group_alive(self) -> bool:
        """True while any live (non-zombie) process of the command's group still exists."""
        return bool(process_supervisor.group_members(self.pgid))
