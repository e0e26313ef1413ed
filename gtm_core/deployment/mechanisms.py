"""Evaluating a step's mechanism within a time limit, and mechanisms run as commands."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

from ..errors import InvalidParameter, MechanismError, MechanismTimeout
from ..processes import ProcessClosed, ProcessGroup, ProcessTimeout, resolve_command
from ..reference import count_positive
from ..validation import MAX_SECONDS, check_seconds


MAX_TIME_LIMIT = MAX_SECONDS


def check_time_limit(time_limit, name: str = "time_limit") -> float | None:
    """None (no limit) or a number of seconds in (0, MAX_TIME_LIMIT]."""
    if time_limit is None:
        return None
    return check_seconds(name, time_limit)


def evaluate_count(mechanism: Callable, data: Any, n: int, time_limit: float | None,
              abort: Callable[[], None] | None) -> int:
    """K_t: count the +1 outputs of n evaluations, within ``time_limit`` seconds if given."""
    if time_limit is None:
        return count_positive(mechanism, data, n)
    box: dict = {}

    def work():
        try:
            box["k"] = count_positive(mechanism, data, n)
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
    record is written). It is started when the step needs its first evaluation, through
    :class:`gtm_core.processes.ProcessGroup` (its own process group under a subreaper supervisor),
    with ``GTM_STEP=t`` added to its environment; it must print independent mechanism outputs on
    the same data, one per line, ``+1``/``1`` or ``-1`` (it may print more than needed). Once N_t
    lines were read - and on a timeout, an error, Ctrl-C or :meth:`close` - its **whole process
    tree** is killed (background children included); if the ``gtm`` process itself dies, the
    supervisor's parent-death signal kills the tree too. Exiting early, printing anything else,
    or not answering within ``time_limit`` seconds is a :class:`MechanismError`. Every wait is
    bounded by at most 0.5 s slices, so an interruption is honoured promptly. The command's
    stderr is drained; its last line is quoted in error messages.
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

    def batch(self, data, n: int) -> np.ndarray:
        env = dict(self._env or {})
        if self.step is not None:
            env["GTM_STEP"] = str(self.step)
        limit = MAX_TIME_LIMIT if self.time_limit is None else self.time_limit
        deadline = time.monotonic() + limit
        with self._lock:  # close() from another thread waits for the start, then kills
            if self._aborted:
                raise MechanismTimeout("mechanism command was aborted")
            try:
                group = ProcessGroup(self.command, env=env, stdin=False)
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
                    tail = group.stderr_tail()
                    raise MechanismError(
                        f"mechanism command ended after {got} of the outputs it was asked for"
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
