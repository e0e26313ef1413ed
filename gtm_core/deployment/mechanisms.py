"""Evaluating a step's mechanism within a time limit, and mechanisms run as commands."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

from ..errors import InvalidParameter, MechanismError, MechanismTimeout
from ..processes import ProcessClosed, ProcessGroup, ProcessTimeout, resolve_command
from ..evaluation import count_positive
from ..validation import MAX_SECONDS, check_seconds


MAX_TIME_LIMIT = MAX_SECONDS
#: How long :meth:`CommandMechanism.start` waits for the command's program to be executed.
START_TIMEOUT = 60.0


def check_time_limit(time_limit, name: str = "time_limit") -> float | None:
    """None (no limit) or a number of seconds in (0, MAX_TIME_LIMIT]."""
    if time_limit is None:
        return None
    return check_seconds(name, time_limit)


def start_mechanism(mechanism) -> Callable[[], None] | None:
    """Start a :class:`CommandMechanism` now, before its step draws or writes anything: a command
    that cannot be started (a missing interpreter, a file that is not an executable format) is
    an :class:`InvalidParameter` while the deployment is unchanged. Returns what kills the
    started command unread if the step ends before its evaluation; None for other mechanisms
    (nothing started)."""
    if isinstance(mechanism, CommandMechanism):
        mechanism.start()
        return mechanism.stop
    return None


def abort_hook(mechanism) -> Callable[[], None] | None:
    """What stops the mechanism's evaluation on a timeout or an interruption: its ``close()``
    method, if it has one."""
    close = getattr(mechanism, "close", None)
    return close if callable(close) else None


def evaluate_count(mechanism: Callable, data: Any, n: int, time_limit: float | None,
                   abort: Callable[[], None] | None) -> int:
    """K_t: count the +1 outputs of n evaluations, within ``time_limit`` seconds if given.

    A :class:`CommandMechanism` is read through :meth:`CommandMechanism.count` (its errors are
    gtm's own texts, made of public values only); any other mechanism through
    :func:`gtm_core.evaluation.count_positive`, which states a fault without the mechanism's own
    message. Nothing raised here quotes n or a count (secrets).
    """
    if isinstance(mechanism, CommandMechanism):
        def count():
            return mechanism.count(n)
    else:
        def count():
            return count_positive(mechanism, data, n)
    if time_limit is None:
        return count()
    box: dict = {}

    def work():
        try:
            box["k"] = count()
        except BaseException as exc:  # handed to the caller's thread below
            box["exc"] = exc

    worker = threading.Thread(target=work, name="gtm-mechanism", daemon=True)
    worker.start()
    try:
        worker.join(time_limit)
    except BaseException:  # Ctrl-C / SystemExit while waiting: stop the work, then propagate
        if abort is not None:
            try:
                abort()
            except Exception:
                pass
        raise
    if worker.is_alive():
        if abort is not None:
            try:
                abort()
            except Exception:
                pass
        raise MechanismTimeout("mechanism exceeded its time limit")
    if "exc" in box:
        exc = box["exc"]
        if isinstance(exc, MechanismError):
            raise exc
        raise MechanismError(f"mechanism raised {type(exc).__name__}") from None
    return box["k"]


class CommandMechanism:
    """A mechanism run as a command: one process group per step, printing one output per line.

    The command (argv list or a string split with :func:`shlex.split`, no shell) is resolved
    when the mechanism is constructed (:func:`gtm_core.processes.resolve_command`: a program that
    does not exist or is not executable is an :class:`InvalidParameter` *before* any deployment
    record is written). A deployment starts it with :meth:`start` before the step's draw and
    write-ahead record and waits until its program was executed, so a command that cannot start
    (a script whose interpreter is missing, a file that is not an executable format) is an
    :class:`InvalidParameter` with the deployment unchanged; its outputs are read only after the
    record is durable, and it is killed unread if the step ends before that. Used on its own,
    it is started when its first output is needed. It runs through
    :class:`gtm_core.processes.ProcessGroup` (its own process group under a subreaper supervisor),
    with ``GTM_STEP=t`` added to its environment; it must print independent mechanism outputs on
    the same data, one per line, ``+1``/``1`` or ``-1`` (it may print more than needed). Once N_t
    lines were read - and on a timeout, an error, Ctrl-C or :meth:`close` - its **whole process
    tree** is killed (background children included); if the ``gtm`` process itself dies, the
    supervisor's parent-death signal kills the tree too. Exiting early, printing anything else,
    or not answering within ``time_limit`` seconds is a :class:`MechanismError`. Every wait is
    bounded by at most 0.5 s slices, so an interruption is honoured promptly. The command's
    stderr is drained; its last line is quoted in error messages, which never say how many
    outputs were read or asked for (N_t is a secret).
    """

    def __init__(self, command, *, step: int | None = None, time_limit: float | None = None,
                 env: dict | None = None):
        if not (isinstance(command, str) or (isinstance(command, (list, tuple))
                                             and all(isinstance(a, str) for a in command))):
            raise InvalidParameter(f"mechanism command must be a string or a list of strings, got {command!r}")
        self.command = resolve_command(command if isinstance(command, str) else list(command),
                                       field="mechanism command")
        self.argv = list(self.command.argv)
        self.step = step
        self.time_limit = check_time_limit(time_limit)
        self._env = env
        self._group: ProcessGroup | None = None
        self._lock = threading.Lock()
        self._aborted = False

    def __repr__(self) -> str:
        return f"CommandMechanism({self.command.text!r})"

    def __call__(self, data=None) -> int:
        arr = self.batch(data, 1)
        return int(arr[0])

    def start(self) -> None:
        """Start the command now and wait (at most :data:`START_TIMEOUT` s) until its program was
        executed; InvalidParameter if it cannot be (nothing of it ran). :meth:`batch` then reads
        this process instead of starting one. A deployment calls it before the step's draw and
        write-ahead record, so a command that cannot start leaves the deployment unchanged."""
        with self._lock:  # close() from another thread waits for the start, then kills
            if self._aborted:
                raise MechanismTimeout("mechanism command was aborted")
            if self._group is not None:
                raise InvalidParameter("the mechanism command was already started")
            try:
                self._group = ProcessGroup(self.command, env=self._step_env(), stdin=False,
                                           start_deadline=time.monotonic() + START_TIMEOUT)
            except (ProcessClosed, ProcessTimeout) as exc:
                raise InvalidParameter(f"mechanism command: {exc}; nothing was evaluated") from None

    def stop(self) -> None:
        """Kill the started command's process tree unread (a later :meth:`start` may run it again)."""
        self._kill()

    def count(self, n: int) -> int:
        """The number of +1 outputs among the next n outputs (a started command is read, else one
        is started); the command is killed afterwards, also when n = 0."""
        if n == 0:
            self._kill()
            return 0
        return int((self.batch(None, n) == 1).sum())

    def _step_env(self) -> dict:
        env = dict(self._env or {})
        if self.step is not None:
            env["GTM_STEP"] = str(self.step)
        return env

    def batch(self, data, n: int) -> np.ndarray:
        """n outputs (int8 +1/-1) from the started command, or from one started now."""
        limit = MAX_TIME_LIMIT if self.time_limit is None else self.time_limit
        deadline = time.monotonic() + limit
        with self._lock:  # close() from another thread waits for the start, then kills
            if self._aborted:
                raise MechanismTimeout("mechanism command was aborted")
            group = self._group
            if group is None:
                try:
                    group = ProcessGroup(self.command, env=self._step_env(), stdin=False)
                except ProcessClosed as exc:
                    raise MechanismError(f"cannot start mechanism command: {exc}") from None
                self._group = group
        out = np.empty(n, dtype=np.int8)
        try:
            for got in range(n):
                try:
                    token = group.read_line(deadline, max_bytes=1 << 16).strip()
                except ProcessTimeout:
                    raise MechanismTimeout("mechanism command exceeded its time limit") from None
                except ProcessClosed:
                    if self._aborted:
                        raise MechanismTimeout("mechanism command was aborted") from None
                    # neither how many outputs it printed nor how many were asked for: N_t is secret
                    tail = group.stderr_tail()
                    raise MechanismError(
                        "mechanism command failed to print all the outputs it was asked for (it "
                        "closed its output or printed a line over 64 KiB)"
                        + (f" (stderr: {tail})" if tail else "")) from None
                if token in (b"+1", b"1"):
                    out[got] = 1
                elif token == b"-1":
                    out[got] = -1
                else:
                    raise MechanismError("mechanism command printed a line that is not +1 or -1")
        finally:
            self._kill()
        return out

    def close(self) -> None:
        """Abort: kill the running command's process tree (if any) and refuse to start another."""
        with self._lock:
            self._aborted = True
        self._kill()

    def _kill(self) -> None:
        with self._lock:
            group, self._group = self._group, None
        if group is not None:
            group.kill()
