"""Evaluating a step's mechanism within a time limit, and mechanisms run as commands."""

from __future__ import annotations

import os
import select
import shlex
import subprocess
import threading
import time
from typing import Any, Callable

import numpy as np

from ..errors import InvalidParameter, MechanismError, MechanismTimeout
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
    worker.join(time_limit)
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
    """A mechanism run as a command: one process per step, printing one output per line.

    The command (argv list or a string split with :func:`shlex.split`, no shell) is started
    when the step needs its first evaluation, with ``GTM_STEP=t`` in its environment; it must
    print independent mechanism outputs on the same data, one per line, ``+1``/``1`` or
    ``-1`` (it may print more than needed; it is killed once N_t lines were read). Exiting
    early, printing anything else, or not answering within ``time_limit`` seconds is a
    :class:`MechanismError`. The command's stderr is discarded.
    """

    def __init__(self, command, *, step: int | None = None, time_limit: float | None = None,
                 env: dict | None = None):
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise InvalidParameter(f"mechanism command cannot be parsed: {exc}") from None
        elif isinstance(command, (list, tuple)) and all(isinstance(a, str) for a in command):
            argv = list(command)
        else:
            raise InvalidParameter(f"mechanism command must be a string or a list of strings, got {command!r}")
        if not argv:
            raise InvalidParameter("mechanism command is empty")
        self.argv = argv
        self.step = step
        self.time_limit = check_time_limit(time_limit)
        self._env = env
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._aborted = False

    def __repr__(self) -> str:
        return f"CommandMechanism({shlex.join(self.argv)!r})"

    def __call__(self, data=None) -> int:
        arr = self.batch(data, 1)
        return int(arr[0])

    def batch(self, data, n: int) -> np.ndarray:
        env = dict(os.environ if self._env is None else self._env)
        if self.step is not None:
            env["GTM_STEP"] = str(self.step)
        deadline = None if self.time_limit is None else time.monotonic() + self.time_limit
        with self._lock:  # close() from another thread waits for Popen, then kills
            if self._aborted:
                raise MechanismTimeout("mechanism command was aborted")
            try:
                proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
            except OSError as exc:
                raise MechanismError(f"cannot start mechanism command {self.argv[0]!r}: {exc.strerror}") from None
            self._proc = proc
        out = np.empty(n, dtype=np.int8)
        try:
            fd = proc.stdout.fileno()
            buf, got = b"", 0
            while got < n:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([fd], [], [], left)[0]:
                        raise MechanismTimeout("mechanism command exceeded its time limit")
                chunk = os.read(fd, 65536)
                if not chunk:
                    if self._aborted:
                        raise MechanismTimeout("mechanism command was aborted")
                    raise MechanismError(f"mechanism command ended after {got} of the outputs it was asked for")
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if got == n:
                        break
                    token = line.strip()
                    if token in (b"+1", b"1"):
                        out[got] = 1
                    elif token == b"-1":
                        out[got] = -1
                    else:
                        raise MechanismError("mechanism command printed a line that is not +1 or -1")
                    got += 1
        finally:
            self._kill()
        return out

    def close(self) -> None:
        """Abort: kill the running command (if any) and refuse to start another one."""
        with self._lock:
            self._aborted = True
        self._kill()

    def _kill(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            proc.stdout.close()
        except OSError:
            pass
